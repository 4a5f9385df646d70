#!/usr/bin/env bash
# A hook written for Claude Code, used unmodified (protocol: claude-code):
# blocks reading secrets. Exit 2 blocks the call; stderr is the reason.
input=$(cat)
if grep -Eq '(\.env\b|\.ssh/|id_rsa|\.aws/credentials)' <<<"$input"; then
  echo "Reading secrets (.env, SSH keys, cloud credentials) is blocked in this workspace." >&2
  exit 2
fi
exit 0
