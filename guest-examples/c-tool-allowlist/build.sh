#!/usr/bin/env bash
# Builds this guest into out/c-tool-allowlist.wasm, a component with zero imports.
cd "$(dirname "$0")" && . ../env.sh
build_c c-tool-allowlist
