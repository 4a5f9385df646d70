//! `toolgate-hook <agent>`: the lean client an agent that spawns a command
//! per tool call runs as its hook, when `toolgate serve` is running. Its
//! body is `toolgate_hook::lean` (crates/toolgate-hook), which links no
//! part of the chain; it is a binary of this package so that `cargo
//! install --path .` installs it beside `toolgate`, which it hands a call
//! to when no server takes it.

fn main() -> std::process::ExitCode {
    toolgate_hook::lean::main()
}
