//! `toolgate qwen-code`, driven through the real binary with Qwen Code's hook
//! stdin (as Qwen Code 0.24.4 sent it in the live runs): what each of the
//! chain's answers is printed as, for each event. The live tests
//! (`live::qwen`) show what Qwen Code then does with it.

use crate::support::*;
use serde_json::{Value, json};
use std::process::Output;

/// A workspace hook that answers by marker words in the command (before the
/// call) or in the output (after it), and one that adds context.
fn fixture() -> Fixture {
    let fx = Fixture::new();
    let decider = fx.script(
        "decide.py",
        r#"#!/usr/bin/env python3
import json, sys
req = json.load(sys.stdin)
cmd = req['input'].get('command', '')
answer = {'decision': 'allow'}
if req['event'] == 'pre_tool_use':
    if 'deny-me' in cmd:
        answer = {'decision': 'deny', 'reason': 'denied by the guard'}
    elif 'rewrite-me' in cmd:
        answer = {'decision': 'modify', 'input': dict(req['input'], command='echo rewritten')}
    elif 'ask-me' in cmd:
        answer = {'decision': 'ask', 'reason': 'a person decides this'}
    elif 'answer-me' in cmd:
        answer = {'decision': 'replace', 'result': {'output': 'answered', 'is_error': False}}
else:
    out = req['result']['output']
    if not isinstance(out, str):
        answer = {'decision': 'deny', 'reason': 'the output is not the text the model sees: ' + json.dumps(out)}
    elif 'SECRET' in out:
        answer = {'decision': 'deny', 'reason': 'a secret'}
    elif 'long' in out:
        answer = {'decision': 'replace', 'result': {'output': 'trimmed', 'is_error': False}}
print(json.dumps(answer))
"#,
    );
    let advisor = fx.script(
        "advise.py",
        "#!/usr/bin/env python3\nimport json, sys\nreq = json.load(sys.stdin)\nanswer = {'decision': 'allow'}\nif 'advise' in json.dumps(req['input']):\n    answer['context'] = 'a note'\nprint(json.dumps(answer))\n",
    );
    // The advisor first: a deny ends the chain, and its context is kept.
    fx.workspace_hooks(json!([
        {"name": "advisor", "command": [&advisor], "event": ["pre_tool_use", "post_tool_use"]},
        {"name": "decider", "command": [&decider], "event": ["pre_tool_use", "post_tool_use"]},
    ]));
    fx.trust();
    fx
}

/// Runs `toolgate qwen-code` on `stdin` (with its `cwd` set to a
/// subdirectory of the workspace, where Qwen Code runs) the way Qwen Code
/// does: `CLAUDE_PROJECT_DIR` set to that same directory.
fn qwen_code(fx: &Fixture, mut stdin: Value) -> Output {
    let sub = fx.workspace().join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    stdin["cwd"] = json!(sub);
    run_with_stdin(
        toolgate()
            .arg("qwen-code")
            .env("TOOLGATE_CONFIG_DIR", fx.global())
            .env("CLAUDE_PROJECT_DIR", &sub)
            .env("QWEN_PROJECT_DIR", &sub),
        &stdin.to_string(),
    )
}

fn answer(fx: &Fixture, stdin: Value) -> Value {
    let out = qwen_code(fx, stdin);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    if out.stdout.is_empty() {
        return Value::Null;
    }
    stdout_json(&out)
}

fn pre(command: &str) -> Value {
    json!({"session_id": "s", "hook_event_name": "PreToolUse", "permission_mode": "yolo",
           "tool_name": "run_shell_command", "tool_input": {"command": command},
           "tool_use_id": "toolu_1", "tool_call_id": "call_0"})
}

fn post(command: &str, output: &str) -> Value {
    json!({"session_id": "s", "hook_event_name": "PostToolUse", "permission_mode": "yolo",
           "tool_name": "run_shell_command", "tool_input": {"command": command},
           "tool_response": {"llmContent": output, "returnDisplay": output},
           "tool_use_id": "toolu_1", "tool_call_id": "call_0", "duration_ms": 5})
}

fn failure(command: &str, error: &str) -> Value {
    json!({"session_id": "s", "hook_event_name": "PostToolUseFailure", "permission_mode": "yolo",
           "tool_name": "run_shell_command", "tool_input": {"command": command},
           "error": error, "is_interrupt": false, "tool_use_id": "toolu_1", "tool_call_id": "call_0"})
}

fn batch(calls: Value) -> Value {
    json!({"session_id": "s", "hook_event_name": "PostToolBatch", "permission_mode": "yolo",
           "tool_calls": calls})
}

fn batch_call(command: &str, status: &str, error: Option<(&str, &str)>) -> Value {
    let response = match error {
        Some((text, kind)) => json!({"error": text, "error_type": kind}),
        None => json!({"result_display": "ok"}),
    };
    json!({"tool_name": "run_shell_command", "tool_input": {"command": command},
           "tool_use_id": "call_0", "tool_call_id": "call_0", "status": status,
           "tool_response": response})
}

#[test]
fn an_ask_is_qwen_codes_own_ask_unless_it_carries_a_rewrite_qwen_code_cannot_apply() {
    let fx = fixture();
    // Its own `ask`: a confirmation in its terminal, a refusal with the
    // reason in `-p` (live::qwen). Context rides in the reason, as beside a deny.
    assert_eq!(
        answer(&fx, pre("echo ask-me advise")),
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
            "permissionDecision": "ask",
            "permissionDecisionReason": "a person decides this\n\na note"}})
    );
    // An ask about a rewritten call: the rewrite cannot ride along, so the
    // call is refused, saying both.
    let fx = Fixture::new();
    rewrite_then_ask(&fx);
    fx.trust();
    let said = answer(&fx, pre("echo original"));
    assert_eq!(
        said["hookSpecificOutput"]["permissionDecision"], "deny",
        "{said}"
    );
    let reason = said["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap();
    assert!(
        reason.contains("needs a person's confirmation")
            && reason.contains("a person decides this")
            && reason.contains("echo rewritten"),
        "{reason}"
    );
}

#[test]
fn before_the_call_every_refusal_is_a_deny_whose_reason_the_model_reads() {
    let fx = fixture();
    assert_eq!(
        answer(&fx, pre("echo deny-me advise")),
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            // Qwen Code drops context beside a deny: it is in the reason.
            "permissionDecisionReason": "denied by the guard\n\na note"}})
    );
    // Qwen Code ignores `updatedInput`: a rewrite is refused, and named.
    assert_eq!(
        answer(&fx, pre("echo rewrite-me")),
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "toolgate would run this call rewritten, and Qwen Code \
                cannot apply a rewrite, so it was not run; the rewritten input: \
                {\"command\":\"echo rewritten\"}"}})
    );
    assert_eq!(
        answer(&fx, pre("echo answer-me")),
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "toolgate answered for the tool instead of running it: answered"}})
    );
    // An allow with context prints it (Qwen Code 0.24.4 drops it); a plain
    // allow prints nothing.
    assert_eq!(
        answer(&fx, pre("echo advise")),
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": "a note"}})
    );
    assert_eq!(answer(&fx, pre("ls")), Value::Null);
}

#[test]
fn after_the_call_the_chain_judges_what_the_model_sees_and_a_stop_replaces_it() {
    let fx = fixture();
    // The chain is handed `llmContent` (the decider denies anything else).
    assert_eq!(answer(&fx, post("ls", "a b")), Value::Null);
    assert_eq!(
        answer(&fx, post("echo advise", "fine")),
        json!({"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "a note"}})
    );
    assert_eq!(
        answer(&fx, post("cat .env", "Output: SECRET=abc")),
        json!({"continue": false,
            "stopReason": "toolgate withheld the output of this call: a secret"})
    );
    assert_eq!(
        answer(&fx, post("echo advise", "a long output")),
        json!({"continue": false, "stopReason": "trimmed\n\na note"})
    );
}

#[test]
fn a_failed_call_gets_context_and_its_batch_is_stopped() {
    let fx = fixture();
    // At PostToolUseFailure only context counts.
    assert_eq!(
        answer(
            &fx,
            failure("cat .env; exit 3", "Output: SECRET=abc\nExit Code: 3")
        ),
        json!({"hookSpecificOutput": {"hookEventName": "PostToolUseFailure",
            "additionalContext": "toolgate withheld the output of this call: a secret; disregard it"}})
    );
    assert_eq!(answer(&fx, failure("false", "Exit Code: 1")), Value::Null);
    // At PostToolBatch, the batch's last call is judged again when it
    // failed, and a stop replaces its result.
    let secret = Some(("Output: SECRET=abc\nExit Code: 3", "shell_execute_error"));
    assert_eq!(
        answer(
            &fx,
            batch(json!([batch_call("cat .env; exit 3", "error", secret)]))
        ),
        json!({"continue": false,
            "stopReason": "toolgate withheld the output of this call: a secret"})
    );
    // A successful call was judged at PostToolUse; a refused one never ran;
    // an earlier call's result cannot be replaced from here.
    for calls in [
        json!([batch_call("ls", "success", None)]),
        json!([batch_call(
            "rm x",
            "error",
            Some(("denied: SECRET", "execution_denied"))
        )]),
        json!([
            batch_call("cat .env; exit 3", "error", secret),
            batch_call("ls", "success", None)
        ]),
    ] {
        assert_eq!(answer(&fx, batch(calls.clone())), Value::Null, "{calls}");
    }
}

#[test]
fn the_workspace_is_found_from_the_calls_cwd_not_qwens_project_variable() {
    // Qwen Code sets CLAUDE_PROJECT_DIR to its working directory: here a
    // subdirectory with no `.toolgate/`. The guard in the workspace above it
    // still decides.
    let fx = fixture();
    assert!(!fx.workspace().join("sub/.toolgate").exists());
    let answer = answer(&fx, pre("echo deny-me"));
    assert_eq!(
        answer["hookSpecificOutput"]["permissionDecision"], "deny",
        "{answer}"
    );
}

#[test]
fn toolgates_own_failure_is_a_stop_on_stdout_that_refuses_and_withholds() {
    let fx = Fixture::new();
    fx.workspace_raw("{\"schema\": 1, \"hooks\": [oops]}");
    let failed = batch(json!([batch_call(
        "false",
        "error",
        Some(("Exit Code: 1", "shell_execute_error"))
    )]));
    for stdin in [pre("ls"), post("ls", "a"), failed] {
        let out = qwen_code(&fx, stdin.clone());
        // Exit 0: Qwen Code reads stdout then; it ignores exit 2 after the
        // call.
        assert_eq!(out.status.code(), Some(0), "{stdin}");
        let json = stdout_json(&out);
        let reason = json["reason"].as_str().unwrap_or_default();
        assert!(
            reason.starts_with("toolgate could not evaluate this call, so it is blocked"),
            "{json}"
        );
        assert_eq!(json["decision"], "block");
        assert_eq!(json["continue"], false);
        assert_eq!(json["stopReason"], reason);
        assert!(stderr(&out).contains(reason), "{}", stderr(&out));
    }
    // An input Qwen Code would never send is refused the same way.
    let out = qwen_code(&fx, json!({"hook_event_name": "PostToolBatch"}));
    assert_eq!(stdout_json(&out)["continue"], false);
}

#[test]
fn at_post_tool_batch_toolgate_answers_inside_qwens_15_s_wait() {
    // Qwen Code waits 15 s for a PostToolBatch hook whatever its `timeout`,
    // then shows the output: toolgate's deadline there is 12 s, not 50.
    let fx = Fixture::new();
    let slow = fx.script(
        "slow.py",
        "#!/usr/bin/env python3\nimport time\ntime.sleep(40)\n",
    );
    fx.workspace_hooks(json!([
        {"name": "slow", "command": [&slow], "event": "post_tool_use", "timeout_ms": 60000},
    ]));
    fx.trust();
    let started = std::time::Instant::now();
    let failed = batch(json!([batch_call(
        "cat .env; exit 3",
        "error",
        Some(("Output: SECRET=abc", "shell_execute_error"))
    )]));
    let answer = answer(&fx, failed);
    let took = started.elapsed();
    assert!(
        took < std::time::Duration::from_secs(14),
        "answered after {took:?}"
    );
    assert_eq!(answer["continue"], false, "{answer}");
    let reason = answer["stopReason"].as_str().unwrap_or_default();
    assert!(reason.contains("slow"), "{answer}");
}

#[test]
fn an_answer_or_a_stop_that_cannot_be_written_falls_back_to_exit_2() {
    // Exit 0 with nothing Qwen Code can read would let the call through;
    // exit 2 still refuses it before the call.
    let broken = Fixture::new();
    broken.workspace_raw("{\"schema\": 1, \"hooks\": [oops]}");
    for fx in [&fixture(), &broken] {
        let mut stdin = pre("echo deny-me");
        stdin["cwd"] = json!(fx.workspace());
        let out = run_with_stdin(
            toolgate_via_shell("exec >&-; exec \"$0\" \"$@\"")
                .arg("qwen-code")
                .env("TOOLGATE_CONFIG_DIR", fx.global()),
            &stdin.to_string(),
        );
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(stderr(&out).contains("blocked"), "{}", stderr(&out));
    }
}
