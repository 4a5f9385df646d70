#!/usr/bin/env bash
# Builds this guest into out/go-path-guard.wasm (a component with zero imports).
# What it installs, and from where, is documented in sdk/guest-build.sh.
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$(cd ../.. && pwd)
export SDK=$ROOT/sdk TOOLGATE_GUEST_CACHE=${TOOLGATE_GUEST_CACHE:-$ROOT/guest-examples/.cache}
. "$SDK/guest-build.sh"
build_go go-path-guard
