#!/usr/bin/env bash
# The whole test suite: build every guest example with its real toolchain
# (installed from the registries by its build script), install the pinned
# agent CLIs from npm, then run cargo test.
set -euo pipefail
cd "$(dirname "$0")"
# `script` (util-linux; Debian's essential bsdutils) gives the first-hour tests
# a real terminal.
if ! command -v script >/dev/null; then
  sudo=; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends bsdutils >/dev/null
fi
guest-examples/build-all
# The pinned Claude Code and Codex CLIs for the live tests (tests/all/live.rs).
tests/agents/install.sh
cargo test "$@"
# The live Claude Code tests again, against the newest pinned release.
if [ $# -eq 0 ]; then
  . tests/agents/versions.env
  TOOLGATE_CLAUDE_CODE_BIN="${TOOLGATE_AGENT_CACHE:-$PWD/tests/agents/.cache}/claude-code-$CLAUDE_CODE_NEWEST_VERSION/node_modules/.bin/claude" \
    cargo test --test all live_claude
fi
