#!/usr/bin/env python3
"""After a call: trim very long text output and tell the model it was trimmed."""
import json
import sys

request = json.load(sys.stdin)
limit = int(request.get("config", {}).get("max_chars", 2000))
result = request["result"]
output = result["output"]

if isinstance(output, str) and len(output) > limit:
    print(json.dumps({
        "decision": "replace",
        "result": {"output": output[:limit], "is_error": result.get("is_error", False)},
        "context": f"The output was {len(output)} characters; only the first {limit} are shown.",
    }))
else:
    print(json.dumps({"decision": "allow"}))
