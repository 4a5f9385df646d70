#!/usr/bin/env bash
# Builds this guest into out/c-tool-allowlist.wasm, a component with no WASI imports (at most toolgate's own `about-to-fail`, which grants nothing).
cd "$(dirname "$0")" && . ../env.sh
build_c c-tool-allowlist
