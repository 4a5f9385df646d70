#!/usr/bin/env bash
# Builds this guest into out/rust-deny-force-push.wasm, a component with no WASI imports (at most toolgate's own `about-to-fail`, which grants nothing).
cd "$(dirname "$0")" && . ../env.sh
build_rust rust-deny-force-push
