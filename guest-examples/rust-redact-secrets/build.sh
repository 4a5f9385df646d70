#!/usr/bin/env bash
# Builds this guest into out/rust-redact-secrets.wasm, a component with zero imports.
cd "$(dirname "$0")" && . ../env.sh
build_rust rust-redact-secrets
