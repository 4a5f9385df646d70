# Sourced by each example's build.sh (from its own folder): builds against this
# repository's SDK, with the examples' shared toolchain cache. What gets
# installed, from where, and how each language builds: sdk/guest-build.sh.
set -euo pipefail
ROOT=$(cd ../.. && pwd)
export SDK=$ROOT/sdk TOOLGATE_GUEST_CACHE=${TOOLGATE_GUEST_CACHE:-$ROOT/guest-examples/.cache}
. "$SDK/guest-build.sh"
