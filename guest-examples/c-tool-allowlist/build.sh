#!/usr/bin/env bash
# Builds this C guest into a zero-import WebAssembly component: Debian's
# clang-22 + lld-22 + wasi-libc (reactor model; only malloc and string
# functions are used, so nothing is imported), the hand-written canonical-ABI
# glue in sdk/c/toolgate_hook.h, then wasm-tools (PyPI) attaches toolgate's WIT
# and wraps the module as a component. Output: out/c-tool-allowlist.wasm.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
cd "$HERE"
. ../common.sh
NAME=c-tool-allowlist
start=$EPOCHREALTIME
need=()
command -v clang-22 >/dev/null || need+=(clang-22)
command -v wasm-ld-22 >/dev/null || need+=(lld-22)
[ -e /usr/lib/wasm32-wasi/libc.a ] || need+=(wasi-libc)
ls /usr/lib/llvm-22/lib/clang/22/lib/wasi/libclang_rt.builtins-wasm32.a >/dev/null 2>&1 || need+=(libclang-rt-22-dev-wasm32)
apt_install "${need[@]}"
mkdir -p out
clang-22 --target=wasm32-wasi -Wno-deprecated -Oz -s -mexec-model=reactor \
  -I"$ROOT/sdk/c" src/guest.c -o out/core.wasm
wasm_tools component embed "$ROOT/wit" --world hook out/core.wasm -o out/core.embed.wasm
wasm_tools component new out/core.embed.wasm -o "out/$NAME.wasm"
wasm_tools validate --features component-model "out/$NAME.wasm"
built "$NAME" "$start"
