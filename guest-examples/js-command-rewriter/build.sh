#!/usr/bin/env bash
# Builds this guest into out/js-command-rewriter.wasm, a component with no WASI imports (at most toolgate's own `about-to-fail`, which grants nothing).
cd "$(dirname "$0")" && . ../env.sh
build_js js-command-rewriter
