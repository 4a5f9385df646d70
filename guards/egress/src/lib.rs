//! `toolgate:egress`: network destinations against an allowlist of hosts.
//! Its rules are `toolgate-guards` (guards/lib/src/egress.rs).

toolgate_guards::guest!("egress", toolgate_guards::egress::decide);
