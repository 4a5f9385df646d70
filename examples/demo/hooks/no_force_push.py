#!/usr/bin/env python3
"""Deny `git push --force` (and -f, --force-with-lease is allowed) on the shell tool.

Wire v1: one JSON request on stdin, one JSON answer on stdout.
"""
import json
import shlex
import sys

request = json.load(sys.stdin)
command = request["input"].get("command", "")

try:
    words = shlex.split(command)
except ValueError:
    words = command.split()

forced = False
if "git" in words and "push" in words:
    for w in words[words.index("push") + 1:]:
        if w in ("--force", "-f") or (w.startswith("-") and not w.startswith("--") and "f" in w):
            forced = True
        if w.startswith("+"):  # git push origin +main is a force push too
            forced = True

if forced:
    print(json.dumps({
        "decision": "deny",
        "reason": "Force-pushing rewrites shared history and is not allowed here. "
                  "Push without --force, or use --force-with-lease on your own branch after asking the user.",
    }))
else:
    print(json.dumps({"decision": "allow"}))
