#!/usr/bin/env bash
# Before (0188694, one crate) and after (HEAD), side by side in one run:
# a clean build of what `cargo run` builds, then an incremental rebuild after
# a change to one file of the command-line tool, three times each, alternating.
# Run it from the repository on an idle machine: about 35 minutes on 2 cores.
set -euo pipefail
M=${M:-/tmp/m}
ROOT=$(git rev-parse --show-toplevel)
AFTER=${AFTER:-$(git -C "$ROOT" rev-parse HEAD)}
rm -rf "$M"; mkdir -p "$M"
git clone -q "$ROOT" "$M/before"; git -C "$M/before" checkout -q 0188694
git clone -q "$ROOT" "$M/after"; git -C "$M/after" checkout -q "$AFTER"
now() { date +%s.%N; }
secs() { python3 -c "print(f'{$2-$1:.1f}')"; }
for t in before after; do
  cd "$M/$t"
  s=$(now); cargo build --offline --bin toolgate > "$M/$t.clean.log" 2>&1; e=$(now)
  echo "$t clean build of cargo run: $(secs $s $e) s, $(grep -c '^\s*Compiling' "$M/$t.clean.log") crates compiled"
done
for i in 1 2 3; do
  for t in before after; do
    cd "$M/$t"
    printf '\n// measure %s\n' "$i" >> src/cli/hooks.rs
    s=$(now); cargo build --offline --bin toolgate > "$M/$t.inc$i.log" 2>&1; e=$(now)
    echo "$t incremental $i: $(secs $s $e) s; recompiled: $(grep '^\s*Compiling' "$M/$t.inc$i.log" | awk '{print $2}' | tr '\n' ' ')"
  done
done
