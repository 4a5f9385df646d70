#!/usr/bin/env bash
# Builds this guest into out/python-size-guard.wasm, a component with zero imports.
cd "$(dirname "$0")" && . ../env.sh
build_python python-size-guard
