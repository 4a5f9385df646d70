//! The `module` AFL++ target: see fuzz/README.md and `toolgate_fuzz::ModuleTarget`.

fn main() {
    // The folder is made before AFL's fork server starts (in `fuzz!`) and
    // leaked, so no child's exit removes it; the tokio runtime and the
    // engine are made in the child, on its first input.
    let target: &'static toolgate_fuzz::ModuleTarget =
        Box::leak(Box::new(toolgate_fuzz::ModuleTarget::new()));
    let target = std::panic::AssertUnwindSafe(target);
    afl::fuzz!(|data: &[u8]| {
        target.run(data);
    });
}
