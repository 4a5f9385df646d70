#!/usr/bin/env python3
"""Rewrite `rm -rf <paths>` into a move to a trash folder, and say why.

Wire v1: answers `modify` with the complete new input.
"""
import json
import re
import sys

request = json.load(sys.stdin)
tool_input = request["input"]
command = tool_input.get("command", "")

match = re.fullmatch(r"\s*rm\s+-(?:rf|fr|r)\s+(.+)", command)
if not match:
    print(json.dumps({"decision": "allow"}))
    sys.exit(0)

targets = match.group(1)
rewritten = dict(tool_input)
rewritten["command"] = f"mkdir -p .trash && mv {targets} .trash/"
print(json.dumps({
    "decision": "modify",
    "input": rewritten,
    "context": f"toolgate rewrote `{command.strip()}` to move the files to .trash/ instead of deleting them; "
               "they can be restored from there.",
}))
