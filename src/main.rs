//! The `toolgate` binary: a thin CLI over the library.
//!
//! Exit codes and `anyhow` live here only; the library exports typed errors.
//! See `cli/` for each command.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
