#!/usr/bin/env python3
"""Writes the raw seeds of the three fuzz targets into OUT/<target>/.

The committed corpus (fuzz/corpus/<target>/) is these, minimised with
`cargo afl cmin` (fuzz/README.md). Each seed is a small real input: the
repository's examples (examples/demo/), the agent inputs the dialect tests
send (tests/all/dialect_*.rs), hooks.json files, real trust records, and
guest answers encoded by hand in the canonical ABI.

usage: fuzz/seeds.py OUT [TRUST_RECORDS_DIR]

TRUST_RECORDS_DIR holds records `toolgate trust` wrote for a workspace at
/toolgate-fuzz/workspace (toolgate_fuzz::TRUST_ROOT); without it, the trust
seeds are skipped.
"""

import json
import os
import struct
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
MARKER = "zq7MARKERq7z"  # toolgate_fuzz::MARKER

# toolgate_fuzz::parsers(), in order.
INWARDS = ["toolgate", "claude-code", "gemini"]
EVENTS = ["pre", "post"]
EXITS = [0, 1, 2, 3, "signal"]
OUTWARDS = ["claude-code", "codex", "gemini", "qwen-code", "copilot", "cursor", "opencode"]


def answer_index(inward, event, exit_, on_stderr):
    i, e, c = INWARDS.index(inward), EVENTS.index(event), EXITS.index(exit_)
    return ((i * 2 + e) * 5 + c) * 2 + int(on_stderr)


WIRE_REQUEST = 60
SERVE_REQUEST = 61
AGENT = {name: 62 + i for i, name in enumerate(OUTWARDS)}
REPLAY = 69


def j(value):
    return json.dumps(value, separators=(",", ":")).encode()


def read(path):
    with open(os.path.join(ROOT, path), "rb") as f:
        return f.read()


ANSWERS = {
    "toolgate": [
        j({"decision": "allow"}),
        j({"decision": "deny", "reason": "no force pushes", "context": MARKER}),
        j({"decision": "modify", "input": {"command": "git push"}}),
        j({"decision": "replace", "result": {"output": "[redacted]", "is_error": False}}),
        b'{"decision":"allow","decision":"deny","reason":"r"}',
        b'{"decision":"deny","context":7}',
        b"",
        b"allow",
    ],
    "claude-code": [
        j({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                  "permissionDecisionReason": "no"}}),
        j({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask"}}),
        j({"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": {"command": "ls"},
                                  "additionalContext": MARKER}}),
        j({"hookSpecificOutput": {"hookEventName": "PostToolUse", "updatedToolOutput": "[redacted]"}}),
        j({"decision": "block", "reason": "r", "systemMessage": "s"}),
        j({"continue": False, "stopReason": "halt", "hookSpecificOutput": 7}),
        b'{"decision":"approve","decision":"block"}',
        b"looks fine to me",
        "\ufeff{\"decision\":\"block\"}".encode(),
        b"",
    ],
    "gemini": [
        j({"decision": "deny", "reason": "no force pushes"}),
        j({"decision": "allow", "hookSpecificOutput": {"additionalContext": MARKER}}),
        j({"hookSpecificOutput": {"hookEventName": "BeforeTool", "tool_input": {"command": "ls"}}}),
        j({"continue": False, "stopReason": "halt"}),
        j(json.dumps({"decision": "block", "reason": "wrapped"})),
        j({"decision": "ask"}),
        j({"hookSpecificOutput": {"tailToolCallRequest": {"name": "x"}}}),
        b"plain text reason",
        b"",
    ],
}

AGENT_INPUTS = {
    "claude-code": [
        read("examples/demo/claude-pre-force-push.json"),
        j({"session_id": "s", "hook_event_name": "PostToolUse", "cwd": "/w", "tool_name": "Bash",
           "tool_input": {"command": "env"},
           "tool_response": {"stdout": "TOKEN=x", "stderr": "", "interrupted": False},
           "tool_use_id": "t"}),
        j({"session_id": "s", "hook_event_name": "PostToolUseFailure", "tool_name": "Bash",
           "tool_input": {"command": "false"}, "error": MARKER, "tool_use_id": "t"}),
    ],
    "gemini": [
        read("examples/demo/gemini-pre-force-push.json"),
        j({"session_id": "s", "transcript_path": "", "cwd": "/w", "hook_event_name": "AfterTool",
           "timestamp": "2026-12-01T11:18:44.208Z", "tool_name": "run_shell_command",
           "tool_input": {"command": "env"},
           "tool_response": {"llmContent": "TOKEN=x", "returnDisplay": "TOKEN=x"}}),
    ],
    "qwen-code": [
        j({"session_id": "s", "hook_event_name": "PreToolUse", "permission_mode": "yolo",
           "tool_name": "run_shell_command", "tool_input": {"command": "rm -rf /"},
           "tool_use_id": "toolu_1", "tool_call_id": "call_0"}),
        j({"session_id": "s", "hook_event_name": "PostToolUse", "permission_mode": "yolo",
           "tool_name": "run_shell_command", "tool_input": {"command": "env"},
           "tool_response": {"llmContent": "x", "returnDisplay": "x"},
           "tool_use_id": "toolu_1", "tool_call_id": "call_0", "duration_ms": 5}),
        j({"session_id": "s", "hook_event_name": "PostToolUseFailure", "permission_mode": "yolo",
           "tool_name": "run_shell_command", "tool_input": {"command": "false"},
           "error": "e", "is_interrupt": False, "tool_use_id": "toolu_1", "tool_call_id": "call_0"}),
        j({"session_id": "s", "hook_event_name": "PostToolBatch", "permission_mode": "yolo",
           "tool_calls": [{"tool_name": "run_shell_command", "tool_input": {"command": "ls"},
                           "status": "error",
                           "tool_response": {"error": "e", "error_type": "execution_denied"}}]}),
    ],
    "copilot": [
        j({"sessionId": "s", "timestamp": 1796123927192, "cwd": "/elsewhere", "toolName": "bash",
           "toolArgs": {"command": "git push --force", "description": "d"}}),
        j({"sessionId": "s", "timestamp": 1796123927192, "cwd": "/elsewhere", "toolName": "bash",
           "toolArgs": {"command": "env", "description": "d"},
           "toolResult": {"resultType": "success", "textResultForLlm": "TOKEN=x"}}),
    ],
    "cursor": [
        j({"conversation_id": "c", "generation_id": "g", "model": "default",
           "hook_event_name": "preToolUse", "cursor_version": "1.7.2",
           "workspace_roots": ["/elsewhere"], "user_email": None, "transcript_path": None,
           "tool_name": "Shell", "tool_input": {"command": "rm -rf /", "working_directory": "/p"},
           "tool_use_id": "abc123", "cwd": ""}),
        j({"conversation_id": "c", "generation_id": "g", "model": "default",
           "hook_event_name": "postToolUse", "cursor_version": "1.7.2",
           "workspace_roots": ["/elsewhere"], "tool_name": "Shell",
           "tool_input": {"command": "env"}, "tool_use_id": "abc123", "cwd": "",
           "tool_output": json.dumps({"exitCode": 0, "stdout": "TOKEN=x"}), "duration": 5}),
    ],
    "opencode": [
        j({"event": "tool.execute.before", "tool": "bash", "sessionID": "ses_1", "callID": "call_1",
           "args": {"command": "rm -rf /"}, "directory": "/w"}),
        j({"event": "tool.execute.after", "tool": "bash", "sessionID": "ses_1", "callID": "call_1",
           "args": {"command": "env"}, "output": {"output": "TOKEN=x"}, "directory": "/w"}),
    ],
}
AGENT_INPUTS["codex"] = AGENT_INPUTS["claude-code"][:2]

SERVE_LINES = [
    j({"id": 1, "version": 1, "op": "evaluate", "mode": "claude-code", "workspace": "/w",
       "input": read("examples/demo/claude-pre-force-push.json").decode(), "deadline_ms": 1000,
       "context": {"global": "/g", "trust": "/t", "path": "/usr/bin"}}),
    j({"id": "a", "version": 1, "op": "evaluate", "mode": "check", "workspace": "/w",
       "input": read("examples/demo/force-push.json").decode(), "event": "pre_tool_use",
       "tool": "shell"}),
    j({"id": 2, "version": 1, "op": "status"}),
    j({"id": 3, "version": 2, "op": "status"}),
    j({"id": 4, "op": "status"}),
    j({"id": 5, "version": 1, "op": "evaluate", "mode": MARKER, "workspace": "/w", "input": ""}),
]

WIRE_REQUESTS = [
    read("examples/demo/force-push.json"),
    read("examples/demo/rm-rf.json"),
    read("examples/demo/write-env.json"),
    read("examples/demo/big-output.json"),
    j({"schema": 1, "event": "post_tool_use", "hook": "h", "tool": "shell",
       "input": {"command": "ls"}, "result": {"output": "x", "is_error": True},
       "session_id": "s", "turn_id": "t", "tool_call_id": "c", "cwd": "/", "config": {}}),
    j({"event": "pre_tool_use", "tool": "shell", "input": {}, MARKER: 1}),
]

HOOKS_JSON = [
    read("examples/demo/.toolgate/hooks.json"),
    read("sdk/templates/common/hooks.json"),
    j({"schema": 1, "hooks": [{"name": "a", "wasm": "secret.wat"}]}),
    j({"schema": 1, "hooks": [{"name": "b", "wasm": "secret.wasm", "fuel": 1000,
                               "memory_mb": 16, "timeout_ms": 100}]}),
    j({"schema": 1, "hooks": [{"name": "c", "command": ["secret.txt"], "protocol": "gemini",
                               "trust_files": ["secret.json"]}]}),
    j({"schema": 1, "hooks": [{"name": "d", "command": ["hooks/guard.sh", "--x"],
                               "protocol": "claude-code", "event": ["pre_tool_use", "post_tool_use"],
                               "matcher": "Bash|Write", "on_failure": "allow",
                               "config": {"k": [1, 2]}}]}),
    j({"schema": 1, "chain_timeout_ms": 5000, "untrusted_hooks": "skip",
       "require_confinement": True, "hooks": []}),
]

# Canonical ABI of result<verdict, string> (toolgate_fuzz::GUEST_WAT): 32
# bytes of return area, then the strings the pointers point at (address 32).


def area(result=0, decision=0, a=0, b=0, c=0, context=0, cptr=0, clen=0):
    return struct.pack("<B3xB3xIII", result, decision, a, b, c) + struct.pack("<B3xII", context, cptr, clen)


def guest_seeds():
    s = []
    s.append(b"")  # all zero: ok(allow)
    s.append(area() + b"")
    s.append(area(context=1, cptr=32, clen=2) + b"hi")
    s.append(area(decision=1, a=32, b=2) + b"no")
    s.append(area(decision=1, a=32, b=2, context=1, cptr=34, clen=3) + b"noctx")
    s.append(area(decision=2, a=32, b=16) + b'{"command":"ls"}')
    s.append(area(decision=3, a=32, b=3, c=1) + b'"x"')
    s.append(struct.pack("<B3xII", 1, 32, 3).ljust(32, b"\0") + b"bad")  # err("bad")
    s.append(area(decision=1, a=32, b=2) + b"\xff\xfe")
    s.append(area(decision=1, a=0xFFFF0000, b=8))
    s.append(area(decision=2, a=32, b=4) + b"nope")
    s.append(area(decision=7))
    return s


def main():
    out = sys.argv[1]
    trust_dir = sys.argv[2] if len(sys.argv) > 2 else None
    seeds = {"protocol": [], "config": [], "guest": []}
    for inward, answers in ANSWERS.items():
        for event in EVENTS:
            for exit_ in EXITS:
                for on_stderr in (False, True):
                    for text in answers:
                        seeds["protocol"].append(bytes([answer_index(inward, event, exit_, on_stderr)]) + text)
    seeds["protocol"] += [bytes([WIRE_REQUEST]) + r for r in WIRE_REQUESTS]
    seeds["protocol"] += [bytes([SERVE_REQUEST]) + r for r in SERVE_LINES]
    for name, inputs in AGENT_INPUTS.items():
        seeds["protocol"] += [bytes([AGENT[name]]) + i for i in inputs]
    seeds["protocol"].append(bytes([REPLAY]) + read("examples/demo/session.jsonl"))
    seeds["protocol"].append(bytes([REPLAY]) + b"\n".join(WIRE_REQUESTS[:2] + [b"not json"]))
    seeds["config"] += [b"\0" + h for h in HOOKS_JSON]
    if trust_dir:
        for name in sorted(os.listdir(trust_dir)):
            with open(os.path.join(trust_dir, name), "rb") as f:
                seeds["config"].append(b"\1" + f.read())
    seeds["guest"] = guest_seeds()
    for target, items in seeds.items():
        d = os.path.join(out, target)
        os.makedirs(d, exist_ok=True)
        for n, item in enumerate(dict.fromkeys(items)):
            with open(os.path.join(d, f"seed-{n:03}"), "wb") as f:
                f.write(item)
        print(target, len(set(items)))


if __name__ == "__main__":
    main()
