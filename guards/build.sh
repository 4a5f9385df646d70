#!/usr/bin/env bash
# Builds every bundled guard (guards/<name>/, a Rust component over
# guards/lib) with the Rust guest recipe (sdk/guest-build.sh), then either
# installs it as dist/<name>.wasm, the bytes the toolgate binary embeds
# (`--install`), or checks that the committed dist/<name>.wasm is
# bit-for-bit what its source builds to (the default, run by ./test.sh).
# A mismatch names the guard and says how to refresh it.
set -euo pipefail
cd "$(dirname "$0")"
mode=${1:---check}
case $mode in --check|--install) ;; *) echo "usage: guards/build.sh [--check|--install]" >&2; exit 2 ;; esac
failed=0
for script in */build.sh; do
  dir=$(dirname "$script")
  "$dir/build.sh"
  built="$dir/out/guard-$dir.wasm"
  if [ "$mode" = --install ]; then
    mkdir -p dist && cp "$built" "dist/$dir.wasm"
    echo "installed dist/$dir.wasm ($(sha256sum < "$built" | cut -c1-16))"
  elif cmp -s "$built" "dist/$dir.wasm"; then
    echo "dist/$dir.wasm is bit-for-bit what guards/$dir builds to ($(sha256sum < "$built" | cut -c1-16))"
  else
    echo "dist/$dir.wasm differs from what guards/$dir builds to: built $(sha256sum < "$built" | cut -c1-16), committed $(sha256sum < "dist/$dir.wasm" 2>/dev/null | cut -c1-16)." >&2
    echo "If the source changed on purpose, run guards/build.sh --install and commit dist/." >&2
    failed=1
  fi
done
exit $failed
