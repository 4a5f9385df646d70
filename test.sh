#!/usr/bin/env bash
# The whole test suite: build every guest example with its real toolchain
# (installed from the registries by its build script), rebuild the standard
# guards and check them against guards/dist/, install the pinned agent CLIs
# from npm, then run cargo test.
set -euo pipefail
cd "$(dirname "$0")"
# `script` (util-linux; Debian's essential bsdutils) gives the first-hour tests
# a real terminal; libfaketime (`faketime`) moves a server's wall clock back
# in tests/all/faults.rs.
missing=()
command -v script >/dev/null || missing+=(bsdutils)
command -v faketime >/dev/null || missing+=(faketime)
# python3-jsonschema (the JSON Schema reference implementation) checks
# docs/hooks.schema.json and every hooks.json against it (tests/all/config.rs).
python3 -c 'import jsonschema' 2>/dev/null || missing+=(python3-jsonschema)
# minisign signs the components the signing tests verify (tests/all/signing.rs).
command -v minisign >/dev/null || missing+=(minisign)
# Prometheus (and its promtool) scrapes `toolgate serve --metrics` and reads the
# series back through its own HTTP API (tests/all/metrics.rs).
command -v prometheus >/dev/null && command -v promtool >/dev/null || missing+=(prometheus)
# unshare (util-linux) and mount give the doctor's live tests a private
# mount namespace with an overlay over /etc, so managed settings are set
# for the agent without touching the machine's /etc (tests/all/live/).
command -v unshare >/dev/null || missing+=(util-linux)
command -v mount >/dev/null || missing+=(mount)
# The CNCF distribution registry, started on 127.0.0.1 by tests/all/oci.rs.
command -v docker-registry >/dev/null || missing+=(docker-registry)
# Apache's htpasswd writes the password file of a registry that wants
# credentials for a push (tests/all/oci.rs).
command -v htpasswd >/dev/null || missing+=(apache2-utils)
if [ ${#missing[@]} -gt 0 ]; then
  sudo=; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
guest-examples/build-all
# The standard guards: rebuilt from source and compared bit for bit with the
# components the binary embeds (guards/dist/), so what ships is what the
# source says.
guards/build.sh --check
# The pinned agent CLIs for the live tests (tests/all/live/).
tests/agents/install.sh
cargo test "$@"
