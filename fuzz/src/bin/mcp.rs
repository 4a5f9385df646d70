//! The `mcp` AFL++ target: see fuzz/README.md and `toolgate_fuzz::mcp`.

fn main() {
    afl::fuzz!(|data: &[u8]| toolgate_fuzz::mcp(data));
}
