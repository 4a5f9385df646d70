#!/usr/bin/env bash
# Builds the hook, then runs every fixture in tests/ through `toolgate test`
# against this folder's .toolgate/hooks.json only (no global hooks). A fixture
# is one call plus what must come of it ("expect": {"decision": "deny", …}; see
# `toolgate test --help`); a guard that crashes is reported as failed, never as
# a deny. Add a case by adding a file. Exit 0: all passed; 100: one failed.
# Set TOOLGATE to the toolgate binary if it is not on PATH.
set -euo pipefail
cd "$(dirname "$0")"
TOOLGATE=${TOOLGATE:-toolgate}
./build.sh
exec "$TOOLGATE" test --hooks .toolgate/hooks.json tests
