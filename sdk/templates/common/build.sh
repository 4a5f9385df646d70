#!/usr/bin/env bash
# Builds this hook into out/{{name}}.wasm, a WebAssembly component with no WASI
# imports (at most toolgate's own `about-to-fail`, which grants nothing). The toolchain is installed from the registries only (Debian, PyPI,
# npm, the Rust crate registry) into one cache per user, shared by every hook
# project: $TOOLGATE_GUEST_CACHE, else $XDG_CACHE_HOME/toolgate/guests, else
# ~/.cache/toolgate/guests. What exactly, and why, is in toolgate/guest-build.sh.
set -euo pipefail
cd "$(dirname "$0")"
user_cache=${XDG_CACHE_HOME:-$HOME/.cache}/toolgate/guests
export SDK=$PWD/toolgate TOOLGATE_GUEST_CACHE=${TOOLGATE_GUEST_CACHE:-$user_cache}
. "$SDK/guest-build.sh"
build_{{lang}} {{name}}
