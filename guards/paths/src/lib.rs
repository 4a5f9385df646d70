//! `toolgate:paths`: reads and writes of secrets, and writes outside the
//! workspace, for every tool that names a path. Its rules are
//! `toolgate-guards` (guards/lib/src/file_rules.rs).

toolgate_guards::guest!("paths", toolgate_guards::file_rules::decide);
