#!/usr/bin/env bash
# Builds this guest into out/go-path-guard.wasm, a component with no WASI imports (at most toolgate's own `about-to-fail`, which grants nothing).
cd "$(dirname "$0")" && . ../env.sh
build_go go-path-guard
