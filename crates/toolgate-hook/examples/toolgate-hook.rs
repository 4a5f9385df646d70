//! The lean client built from this crate alone (an example target), the same
//! `main` as the root package's `toolgate-hook`: for a static build, which
//! needs `--target` so that `crt-static` reaches this binary and not the
//! build's proc-macros, and so must not drag in the root's wasmtime.

fn main() -> std::process::ExitCode {
    toolgate_hook::lean::main()
}
