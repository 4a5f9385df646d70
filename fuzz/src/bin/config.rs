//! The `config` AFL++ target: see fuzz/README.md and `toolgate_fuzz::ConfigTarget`.

fn main() {
    // Made before AFL's fork server starts (in `fuzz!`), so every child
    // shares one workspace; leaked, so no child's exit removes it.
    let target: &'static toolgate_fuzz::ConfigTarget =
        Box::leak(Box::new(toolgate_fuzz::ConfigTarget::new()));
    // The runner holds no state a panic could leave half-updated that a
    // later input would read: a panic aborts the process anyway.
    let target = std::panic::AssertUnwindSafe(target);
    afl::fuzz!(|data: &[u8]| target.run(data));
}
