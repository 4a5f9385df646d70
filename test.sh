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
# The pinned agent CLIs for the live tests (tests/all/live/).
tests/agents/install.sh
cargo test "$@"
