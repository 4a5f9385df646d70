//! `toolgate:shell`: the standard guard against destructive and dangerous
//! shell commands, as a WebAssembly component. Its rules and its mapping of
//! a request onto them are `toolgate-guards` (guards/lib).

toolgate_guards::guest!("shell", toolgate_guards::shell_rules::decide);
