//! The `guest` AFL++ target: see fuzz/README.md and `toolgate_fuzz::GuestTarget`.

fn main() {
    // The guest's file is written before AFL's fork server starts (in
    // `fuzz!`) and leaked, so no child's exit removes it; the runner is
    // built in the child, on its first input.
    let target: &'static toolgate_fuzz::GuestTarget =
        Box::leak(Box::new(toolgate_fuzz::GuestTarget::new()));
    // The runner holds no state a panic could leave half-updated that a
    // later input would read: a panic aborts the process anyway.
    let target = std::panic::AssertUnwindSafe(target);
    afl::fuzz!(|data: &[u8]| {
        target.run(data);
    });
}
