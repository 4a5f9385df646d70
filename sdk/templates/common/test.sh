#!/usr/bin/env bash
# Builds the hook, then runs every case in tests/ through `toolgate check`
# against this folder's .toolgate/hooks.json: a case named deny-*.json must be
# denied (exit 2), allow-*.json must pass (exit 0). Add a case by adding a file.
# Set TOOLGATE to the toolgate binary if it is not on PATH.
set -euo pipefail
cd "$(dirname "$0")"
TOOLGATE=${TOOLGATE:-toolgate}
./build.sh
# Only this folder's hooks: no global hooks from ~/.config/toolgate.
export TOOLGATE_CONFIG_DIR=$PWD/tests
failed=0
for case in tests/*.json; do
  want=0
  case $(basename "$case") in deny-*) want=2 ;; esac
  got=0
  answer=$("$TOOLGATE" check --workspace . <"$case") || got=$?
  if [ "$got" = "$want" ]; then
    echo "ok    $case"
  else
    echo "FAIL  $case: exit $got, expected $want: $answer"
    failed=1
  fi
done
exit $failed
