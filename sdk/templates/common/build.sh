#!/usr/bin/env bash
# Builds this hook into out/{{name}}.wasm, a WebAssembly component with zero
# imports. The toolchain is installed from the registries only (Debian, PyPI,
# npm, the Rust crate registry) into .cache/ (or $TOOLGATE_GUEST_CACHE); what
# exactly, and why, is in toolgate/guest-build.sh.
set -euo pipefail
cd "$(dirname "$0")"
export SDK=$PWD/toolgate TOOLGATE_GUEST_CACHE=${TOOLGATE_GUEST_CACHE:-$PWD/.cache}
. "$SDK/guest-build.sh"
build_{{lang}} {{name}}
