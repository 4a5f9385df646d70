# Sourced by each guard's build (from its own folder): the same SDK and
# toolchain cache as the guest examples (guest-examples/env.sh).
set -euo pipefail
ROOT=$(cd ../.. && pwd)
export SDK=$ROOT/sdk TOOLGATE_GUEST_CACHE=${TOOLGATE_GUEST_CACHE:-$ROOT/guest-examples/.cache}
. "$SDK/guest-build.sh"
