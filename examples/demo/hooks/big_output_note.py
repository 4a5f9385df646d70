#!/usr/bin/env python3
"""After a call: trim very long text output and tell the model it was trimmed.

The output is what the agent reports: a string, or (Claude Code's Bash, live
and in its transcripts) an object whose text is in `stdout`. The hook answers
with the trimmed text; toolgate puts it back into the tool's own shape when it
answers Claude Code.
"""
import json
import sys

request = json.load(sys.stdin)
limit = int(request.get("config", {}).get("max_chars", 2000))
result = request["result"]
output = result["output"]
text = output.get("stdout") if isinstance(output, dict) else output

if isinstance(text, str) and len(text) > limit:
    print(json.dumps({
        "decision": "replace",
        "result": {"output": text[:limit], "is_error": result.get("is_error", False)},
        "context": f"The output was {len(text)} characters; only the first {limit} are shown.",
    }))
else:
    print(json.dumps({"decision": "allow"}))
