#!/usr/bin/env bash
# Installs the pinned Claude Code and Codex CLIs (versions.env) from the npm
# registry into a git-ignored cache, for the live tests in tests/all/live.rs.
# Idempotent: an install of the right versions is kept.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
. "$HERE/versions.env"
CACHE=${TOOLGATE_AGENT_CACHE:-$HERE/.cache}
mkdir -p "$CACHE"
NEWEST="$CACHE/claude-code-$CLAUDE_CODE_NEWEST_VERSION"
stamp="$CACHE/installed-$CLAUDE_CODE_VERSION-$CLAUDE_CODE_NEWEST_VERSION-$CODEX_VERSION"
if [ -f "$stamp" ] && "$CACHE/node_modules/.bin/claude" --version >/dev/null 2>&1 \
   && "$NEWEST/node_modules/.bin/claude" --version >/dev/null 2>&1 \
   && "$CACHE/node_modules/.bin/codex" --version >/dev/null 2>&1; then
  echo "agents: Claude Code $CLAUDE_CODE_VERSION and $CLAUDE_CODE_NEWEST_VERSION, Codex $CODEX_VERSION already in $CACHE"
  exit 0
fi
if ! command -v npm >/dev/null; then
  # Debian's nodejs/npm, as sdk/guest-build.sh installs them for the JS guest.
  sudo=; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi
echo "agents: installing @anthropic-ai/claude-code@$CLAUDE_CODE_VERSION and @openai/codex@$CODEX_VERSION into $CACHE (~650 MB)"
rm -f "$CACHE"/installed-*
npm install --prefix "$CACHE" --no-save --no-audit --no-fund --foreground-scripts \
  "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION" "@openai/codex@$CODEX_VERSION"
# The newest Claude Code in a prefix of its own (the live tests run against
# it through TOOLGATE_CLAUDE_CODE_BIN).
echo "agents: installing @anthropic-ai/claude-code@$CLAUDE_CODE_NEWEST_VERSION into $NEWEST (~400 MB)"
mkdir -p "$NEWEST"
npm install --prefix "$NEWEST" --no-save --no-audit --no-fund --foreground-scripts \
  "@anthropic-ai/claude-code@$CLAUDE_CODE_NEWEST_VERSION"
# npm may skip install scripts it was not told to allow; Claude Code's only
# copies its native binary from the platform package into place.
for prefix in "$CACHE" "$NEWEST"; do
  if ! "$prefix/node_modules/.bin/claude" --version >/dev/null 2>&1; then
    (cd "$prefix/node_modules/@anthropic-ai/claude-code" && node install.cjs)
  fi
done
"$CACHE/node_modules/.bin/claude" --version
"$NEWEST/node_modules/.bin/claude" --version
"$CACHE/node_modules/.bin/codex" --version
touch "$stamp"
