#!/usr/bin/env bash
# Builds this Python guest into a zero-import WebAssembly component with
# componentize-py from PyPI (CPython for WASI is bundled in its wheel; nothing
# else is downloaded). Output: out/python-size-guard.wasm.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
cd "$HERE"
. ../common.sh
NAME=python-size-guard
start=$EPOCHREALTIME
if [ ! -x .venv/bin/componentize-py ]; then
  echo "installing componentize-py 0.25.1 from PyPI into .venv"
  python3 -m venv .venv
  .venv/bin/pip install -q --disable-pip-version-check componentize-py==0.25.1
fi
mkdir -p out
# -p src: only the app (and the SDK) are bundled; --stub-wasi: no imports at all.
.venv/bin/componentize-py -q -d "$ROOT/wit" -w hook componentize \
  -p src -p "$ROOT/sdk/python" --stub-wasi app -o "out/$NAME.wasm"
built "$NAME" "$start"
