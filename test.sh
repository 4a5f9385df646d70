#!/usr/bin/env bash
# The whole test suite: build every guest example with its real toolchain
# (installed from the registries by its build script), install the pinned
# agent CLIs from npm, then run cargo test.
set -euo pipefail
cd "$(dirname "$0")"
guest-examples/build-all
# The pinned Claude Code and Codex CLIs for the live tests (tests/all/live.rs).
tests/agents/install.sh
cargo test "$@"
