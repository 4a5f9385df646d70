#!/usr/bin/env bash
# The whole test suite: build every guest example with its real toolchain
# (installed from the registries by its build script), then run cargo test.
set -euo pipefail
cd "$(dirname "$0")"
guest-examples/build-all
cargo test "$@"
