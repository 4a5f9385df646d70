#!/bin/sh
# Builds the fuzz targets with AFL++ instrumentation and runs one campaign.
#
#   fuzz/run.sh <target> <seconds> [more afl-fuzz options]
#
# <target> is protocol, config, guest, mcp or module; the campaign stops after <seconds>
# of wall clock. Output goes to $FUZZ_OUT/<target> (default
# ${TMPDIR:-/tmp}/toolgate-fuzz/<target>), never into the repository; an
# existing output directory is resumed. Stats: `cargo afl whatsup -s
# $FUZZ_OUT/<target>` or $FUZZ_OUT/<target>/default/fuzzer_stats. See
# fuzz/README.md.
set -eu
if [ $# -lt 2 ]; then
    echo "usage: $0 <protocol|config|guest|mcp|module> <seconds> [afl-fuzz options]" >&2
    exit 2
fi
target=$1
seconds=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
out=${FUZZ_OUT:-${TMPDIR:-/tmp}/toolgate-fuzz}/$target
cd "$here"
cargo afl build --release --bin "$target"
# No CPU frequency check or core binding: the campaigns share a machine
# (AFL++ refuses to start when every core is "taken"); no crash reporter to
# wait for; plain status lines instead of the screen, for a log file.
export AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 AFL_NO_AFFINITY=1 AFL_NO_UI=1
if [ -d "$out/default/queue" ]; then
    input=-
else
    input=corpus/$target
fi
mkdir -p "$(dirname "$out")"
# -m none: wasmtime reserves far more address space than it touches.
# -t 5000: the guest's own wall-clock limit is 1 s; a hang is five times that.
exec cargo afl fuzz -i "$input" -o "$out" -V "$seconds" -m none -t 5000 \
    -x toolgate.dict "$@" -- "target/release/$target"
