#!/usr/bin/env python3
"""{{name}}: a toolgate hook run as a subprocess, speaking wire v1.

toolgate starts this script once per tool call, writes one JSON request on
its stdin and reads one JSON answer from its stdout:

  request: {"schema": 1, "event": "pre_tool_use", "hook": "{{name}}",
            "tool": "Bash", "input": {"command": "..."}, "config": {...}, ...}
  answer:  {"decision": "allow"}
           {"decision": "deny", "reason": "why, for the model"}
           {"decision": "modify", "input": {...}}
           {"decision": "replace", "result": {"output": ..., "is_error": false}}
           (each optionally with "context": "advisory text for the model")

Anything else (a crash, a non-zero exit, no answer, two answers) is a
failure, and toolgate blocks the call unless the hook says
"on_failure": "allow". stderr goes to the operator's run record, never to
the model: print your debugging there.

As generated it denies shell commands that use a program named in its config
({"forbidden": ["sudo", "doas"]} in .toolgate/hooks.json) and allows the rest.
"""

import json
import sys


def decide(request):
    if request.get("event") != "pre_tool_use":
        return {"decision": "allow"}
    tool_input = request.get("input")
    command = tool_input.get("command") if isinstance(tool_input, dict) else None
    if not isinstance(command, str):
        return {"decision": "allow"}
    words = command.split()
    for program in (request.get("config") or {}).get("forbidden", []):
        if program in words:
            return {
                "decision": "deny",
                "reason": f"`{program}` is not allowed in this workspace; "
                "run the command without it or ask the user.",
            }
    return {"decision": "allow"}


if __name__ == "__main__":
    print(json.dumps(decide(json.load(sys.stdin))))
