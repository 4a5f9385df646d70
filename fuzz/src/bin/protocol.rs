//! The `protocol` AFL++ target: see fuzz/README.md and `toolgate_fuzz::protocol`.

fn main() {
    afl::fuzz!(|data: &[u8]| toolgate_fuzz::protocol(data));
}
