#!/usr/bin/env bash
# Builds this guest into out/go-path-guard.wasm, a component with zero imports.
cd "$(dirname "$0")" && . ../env.sh
build_go go-path-guard
