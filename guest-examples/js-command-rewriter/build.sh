#!/usr/bin/env bash
# Builds this JavaScript guest into a zero-import WebAssembly component with
# componentize-js (SpiderMonkey) from the npm registry, every WASI feature
# disabled. Output: out/js-command-rewriter.wasm.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
cd "$HERE"
. ../common.sh
NAME=js-command-rewriter
start=$EPOCHREALTIME
if [ ! -x node_modules/.bin/componentize-js ]; then
  echo "installing componentize-js 0.23.0 from npm into node_modules"
  npm install --no-audit --no-fund --silent
fi
# The app and the SDK side by side, as the app imports it.
rm -rf build && mkdir -p build out
cp src/app.js "$ROOT/sdk/js/toolgate_hook.js" build/
node_modules/.bin/componentize-js --wit "$ROOT/wit" --world-name hook \
  --disable stdio random clocks http fetch-event -o "out/$NAME.wasm" build/app.js >/dev/null
built "$NAME" "$start"
