#!/usr/bin/env python3
"""Deny writes to protected paths listed in the hook's `config`."""
import json
import sys

request = json.load(sys.stdin)
path = str(request["input"].get("path") or request["input"].get("file_path") or "")
protected = request.get("config", {}).get("protected", [])

for p in protected:
    if path == p.rstrip("/") or path.startswith(p) or ("/" + p) in path:
        print(json.dumps({
            "decision": "deny",
            "reason": f"{path} is protected in this workspace ({p}); ask the user to change it.",
        }))
        sys.exit(0)
print(json.dumps({"decision": "allow"}))
