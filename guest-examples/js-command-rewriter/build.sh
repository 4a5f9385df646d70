#!/usr/bin/env bash
# Builds this guest into out/js-command-rewriter.wasm, a component with zero imports.
cd "$(dirname "$0")" && . ../env.sh
build_js js-command-rewriter
