//! mentra's real agent loop (its scripted provider, `MockRuntime`) with
//! toolgate registered once on each seam, and a chain of an in-process
//! interceptor, a subprocess hook and a wasm guest. Each test asserts what
//! the next model request contained, what the tool actually received, and
//! what mentra's own event stream kept.

use async_trait::async_trait;
use mentra::agent::AgentEvent;
use mentra::provider::{ContentBlock, Message};
use mentra::test::{MockRuntime, MockToolCall};
use mentra::tool::{ParallelToolContext, ToolDefinition, ToolExecutor, ToolResult, ToolSpec};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use toolgate::{BoxError, Config, Decision, HookRequest, HookRunner, Interceptor, Verdict};
use toolgate_mentra::ToolgateHooks;

/// A tool that records every input it really ran with and answers with
/// output that carries an AWS key id.
struct Run {
    name: &'static str,
    ran: Arc<Mutex<Vec<Value>>>,
}

#[async_trait]
impl ToolDefinition for Run {
    fn descriptor(&self) -> ToolSpec {
        ToolSpec::builder(self.name)
            .description("runs a command")
            .input_schema(json!({
                "type": "object",
                "properties": {"command": {"type": "string"}},
                "required": ["command"],
                "additionalProperties": false
            }))
            .build()
    }
}

#[async_trait]
impl ToolExecutor for Run {
    async fn execute(&self, _ctx: ParallelToolContext, input: Value) -> ToolResult {
        self.ran.lock().unwrap().push(input.clone());
        Ok(format!(
            "ran {}; key AKIAIOSFODNN7EXAMPLE",
            input["command"].as_str().unwrap_or("?")
        ))
    }
}

/// The host's own guard: no recursive deletes.
struct NoRm;

#[async_trait]
impl Interceptor for NoRm {
    async fn pre_tool_use(&self, req: &HookRequest<'_>) -> Result<Verdict, BoxError> {
        let cmd = req.input["command"].as_str().unwrap_or_default();
        Ok(if cmd.contains("rm -rf") {
            Verdict::deny("the host does not run recursive deletes")
        } else {
            Verdict::allow()
        })
    }
}

fn write_exec(path: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, body).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A workspace with a python rewriter (`ls` → `ls -la`, with context), a
/// python redactor after the call, and the demo's wasm network guard; the
/// hooks' code in `hooks/` (trust pins and runs that folder), with two more
/// scripts the `extra` hooks may name (`hooks/cache.py`: a pre replace;
/// `hooks/broken.py`: exits 3).
fn workspace(extra: Value) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    std::fs::create_dir_all(ws.join(".toolgate")).unwrap();
    std::fs::create_dir_all(ws.join("hooks")).unwrap();
    write_exec(
        &ws.join("hooks/cache.py"),
        "import json,sys; r=json.load(sys.stdin); print(json.dumps({'decision':'replace','result':{'output':'cached listing','is_error':False}} if r['input']['command']=='cached' else {'decision':'allow'}))\n",
    );
    write_exec(
        &ws.join("hooks/broken.py"),
        "import json,sys; r=json.load(sys.stdin); sys.exit(3) if r['input']['command']=='broken' else print(json.dumps({'decision':'allow'}))\n",
    );
    write_exec(
        &ws.join("hooks/rewrite.py"),
        r#"#!/usr/bin/env python3
import json, sys
req = json.load(sys.stdin)
cmd = req["input"].get("command")
if cmd == "ls":
    print(json.dumps({"decision": "modify", "input": {"command": "ls -la"}, "context": "listing in long form"}))
elif cmd == "bad-rewrite":
    print(json.dumps({"decision": "modify", "input": {"command": "ls", "extra": 1}}))
elif cmd == "bad-rewrite-noted":
    print(json.dumps({"decision": "modify", "input": {"command": "pwd", "extra": 1}, "context": "noted before the refusal"}))
else:
    print(json.dumps({"decision": "allow"}))
"#,
    );
    write_exec(
        &ws.join("hooks/redact.py"),
        r#"#!/usr/bin/env python3
import json, re, sys
req = json.load(sys.stdin)
out = req["result"]["output"]
if "withhold" in json.dumps(req["input"]):
    print(json.dumps({"decision": "deny", "reason": "this output may not be shown"}))
elif isinstance(out, str) and "AKIA" in out:
    print(json.dumps({"decision": "replace", "result": {"output": re.sub(r"AKIA[0-9A-Z]{16}", "[REDACTED]", out), "is_error": False}}))
else:
    print(json.dumps({"decision": "allow"}))
"#,
    );
    let demo =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/demo/hooks/no_network.wat");
    std::fs::copy(demo, ws.join("no_network.wat")).unwrap();
    let mut hooks = vec![
        json!({"name": "rewriter", "command": ["./hooks/rewrite.py"], "tools": ["run"]}),
        json!({"name": "no-network", "wasm": "no_network.wat", "matcher": "Web.*"}),
        json!({"name": "redactor", "command": ["./hooks/redact.py"], "event": "post_tool_use"}),
    ];
    if let Value::Array(more) = extra {
        hooks.extend(more);
    }
    std::fs::write(
        ws.join(".toolgate/hooks.json"),
        json!({"schema": 1, "hooks": hooks}).to_string(),
    )
    .unwrap();
    dir
}

/// The workspace's config, loaded as a harness does for a user who reviewed
/// and trusted its hooks: a trust store of the test's own (a private
/// temporary directory, outside the workspace), and the workspace trusted
/// as it is now, the way `toolgate trust` records it. The record is read at
/// load; the hooks then run from their snapshot in the store, which lives as
/// long as the returned directory.
fn trusted_config(ws: &Path) -> (Config, tempfile::TempDir) {
    let state = tempfile::tempdir().expect("a private directory");
    let store = toolgate::trust::TrustStore::new(state.path().join("trust"));
    let path = std::env::var_os("PATH").unwrap_or_default();
    let loader = || {
        Config::loader()
            .workspace(ws)
            .trust(store.clone())
            .search_path(path.clone())
    };
    let config = loader().load().expect("the workspace config loads");
    let review = toolgate::trust::Review::of(&config, &store, Some(&path))
        .expect("the workspace can be reviewed");
    review
        .record(&store, &review.digest)
        .expect("trust is recorded");
    let config = loader().load().expect("the trusted workspace config loads");
    (config, state)
}

fn hooks_for(ws: &Path) -> (Arc<ToolgateHooks>, tempfile::TempDir) {
    let (config, state) = trusted_config(ws);
    let hooks = ToolgateHooks::new(
        HookRunner::builder()
            .interceptor("no-rm", NoRm)
            .config(config)
            .build(),
    );
    (hooks, state)
}

struct Scenario {
    mock: MockRuntime,
    hooks: Arc<ToolgateHooks>,
    ran: Arc<Mutex<Vec<Value>>>,
    _ws: tempfile::TempDir,
    _state: tempfile::TempDir,
}

fn scenario(calls: Vec<MockToolCall>, extra_hooks: Value) -> Scenario {
    let ws = workspace(extra_hooks);
    let (hooks, state) = hooks_for(ws.path());
    let mock = MockRuntime::builder()
        .with_pre_hook(Arc::clone(&hooks))
        .with_post_hook(Arc::clone(&hooks))
        .tool_calls(calls)
        .text("done")
        .build()
        .expect("the mock runtime builds");
    let ran = Arc::new(Mutex::new(Vec::new()));
    mock.runtime().register_tool(Run {
        name: "run",
        ran: Arc::clone(&ran),
    });
    mock.runtime().register_tool(Run {
        name: "WebFetch",
        ran: Arc::clone(&ran),
    });
    Scenario {
        mock,
        hooks,
        ran,
        _ws: ws,
        _state: state,
    }
}

/// Runs one user turn; returns mentra's events.
async fn turn(s: &Scenario) -> Vec<AgentEvent> {
    let mut agent = s
        .mock
        .runtime()
        .spawn("agent", s.mock.model())
        .expect("the agent spawns");
    let mut events = agent.subscribe_events();
    let reply = agent
        .send(vec![ContentBlock::text("go")])
        .await
        .expect("the turn completes");
    assert_eq!(reply.text(), "done");
    let mut seen = Vec::new();
    while let Ok(event) = events.try_recv() {
        seen.push(event);
    }
    seen
}

/// The tool results the model was sent in its second request, by call id.
async fn results_sent(s: &Scenario) -> Vec<(String, String, bool)> {
    let requests = s.mock.recorded_requests().await;
    assert!(
        requests.len() >= 2,
        "the model was asked again after the tools"
    );
    let messages: &[Message] = &requests[1].messages;
    messages
        .iter()
        .flat_map(|m| m.content.iter())
        .filter_map(|b| match b {
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => Some((tool_use_id.clone(), content.to_display_string(), *is_error)),
            _ => None,
        })
        .collect()
}

fn result<'a>(results: &'a [(String, String, bool)], id: &str) -> &'a (String, String, bool) {
    results
        .iter()
        .find(|r| r.0 == id)
        .unwrap_or_else(|| panic!("no result for {id}: {results:#?}"))
}

/// One turn with three parallel calls through the whole chain.
async fn three_calls_through_the_chain() {
    let s = scenario(
        vec![
            MockToolCall::new("run", json!({"command": "rm -rf /"})).with_id("rm"),
            MockToolCall::new("run", json!({"command": "ls"})).with_id("ls"),
            MockToolCall::new("WebFetch", json!({"command": "curl example.com"})).with_id("web"),
        ],
        json!([]),
    );
    let events = turn(&s).await;

    // The tool ran once, with the rewritten input.
    assert_eq!(*s.ran.lock().unwrap(), vec![json!({"command": "ls -la"})]);

    let results = results_sent(&s).await;
    let (_, rm, rm_error) = result(&results, "rm");
    assert!(
        *rm_error && rm.contains("the host does not run recursive deletes"),
        "{rm}"
    );
    let (_, web, web_error) = result(&results, "web");
    assert!(
        *web_error && web.contains("Network tools are disabled"),
        "{web}"
    );
    let (_, ls, ls_error) = result(&results, "ls");
    assert!(!*ls_error, "{ls}");
    assert!(ls.starts_with("ran ls -la; key [REDACTED]"), "{ls}");
    assert!(!ls.contains("AKIA"), "the key reached the model: {ls}");
    assert!(ls.ends_with("[toolgate] listing in long form"), "{ls}");

    // mentra's own event keeps the real output for the audit trail.
    let real = events.iter().any(|e| {
        matches!(e, AgentEvent::ToolExecutionFinished { result: ContentBlock::ToolResult { tool_use_id, content, .. } }
            if tool_use_id == "ls" && content.to_display_string().contains("AKIAIOSFODNN7EXAMPLE"))
    });
    assert!(real, "ToolExecutionFinished did not carry the real output");

    // toolgate's records: who decided each call.
    let outcomes = s.hooks.outcomes();
    let by = |id: &str, event: toolgate::Event| {
        outcomes
            .iter()
            .find(|(call, o)| call == id && o.event == event)
            .map(|(_, o)| o.decided_by.clone())
            .unwrap_or_else(|| panic!("no {event} outcome for {id}"))
    };
    assert_eq!(
        by("rm", toolgate::Event::PreToolUse).as_deref(),
        Some("no-rm")
    );
    assert_eq!(
        by("web", toolgate::Event::PreToolUse).as_deref(),
        Some("no-network")
    );
    assert_eq!(
        by("ls", toolgate::Event::PreToolUse).as_deref(),
        Some("rewriter")
    );
    assert_eq!(
        by("ls", toolgate::Event::PostToolUse).as_deref(),
        Some("redactor")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_of_parallel_calls_goes_through_the_chain_on_a_multi_thread_runtime() {
    three_calls_through_the_chain().await;
}

#[tokio::test(flavor = "current_thread")]
async fn a_turn_goes_through_the_chain_on_a_current_thread_runtime() {
    // Subprocess hooks wait on processes and the wasm guest yields at epoch
    // ticks: neither may stall or panic a single-threaded runtime.
    three_calls_through_the_chain().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rewrite_that_breaks_the_tools_schema_is_mentras_refusal_and_toolgates_record() {
    let s = scenario(
        vec![MockToolCall::new("run", json!({"command": "bad-rewrite"})).with_id("bad")],
        json!([]),
    );
    turn(&s).await;
    assert!(
        s.ran.lock().unwrap().is_empty(),
        "the tool ran a rewrite that does not fit its schema"
    );
    let results = results_sent(&s).await;
    let (_, text, is_error) = result(&results, "bad");
    assert!(*is_error, "{text}");
    // mentra's own words: its schema check refused the rewrite.
    assert!(text.contains("does not fit its schema"), "{text}");
    let (_, outcome) = &s.hooks.outcomes()[0];
    assert_eq!(outcome.decided_by.as_deref(), Some("rewriter"));
    assert!(
        matches!(outcome.decision, Decision::Modify { .. }),
        "{:?}",
        outcome.decision
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rewrite_mentra_refuses_leaves_no_context_waiting_for_a_result() {
    let s = scenario(
        vec![MockToolCall::new("run", json!({"command": "bad-rewrite-noted"})).with_id("bad")],
        json!([]),
    );
    turn(&s).await;
    assert!(s.ran.lock().unwrap().is_empty(), "the refused rewrite ran");
    let results = results_sent(&s).await;
    let (_, text, is_error) = result(&results, "bad");
    assert!(
        *is_error && text.contains("does not fit its schema"),
        "{text}"
    );
    // mentra answers the refused call through its post seam: that answer
    // takes the context the rewrite carried, and nothing is left waiting.
    assert!(
        text.ends_with("[toolgate] noted before the refusal"),
        "{text}"
    );
    assert_eq!(s.hooks.pending_contexts(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_post_deny_a_pre_replace_and_a_broken_hook_map_to_what_mentra_honours() {
    let s = scenario(
        vec![
            MockToolCall::new("run", json!({"command": "withhold"})).with_id("withheld"),
            MockToolCall::new("run", json!({"command": "cached"})).with_id("cached"),
            MockToolCall::new("run", json!({"command": "broken"})).with_id("broken"),
        ],
        json!([
            {"name": "cache", "command": ["python3", "hooks/cache.py"]},
            {"name": "broken", "command": ["python3", "hooks/broken.py"]}
        ]),
    );
    turn(&s).await;
    let results = results_sent(&s).await;
    // After the call: withheld, shown as an error with the reason.
    let (_, withheld, is_error) = result(&results, "withheld");
    assert!(*is_error, "{withheld}");
    assert!(
        withheld.contains("withheld") && withheld.contains("this output may not be shown"),
        "{withheld}"
    );
    assert!(!withheld.contains("AKIA"), "{withheld}");
    // Before the call, a replacement: the tool does not run; the model reads
    // what toolgate answered, as a blocked call.
    let (_, cached, is_error) = result(&results, "cached");
    assert!(*is_error, "{cached}");
    assert!(
        cached.contains("toolgate answered for the tool instead of running it: cached listing"),
        "{cached}"
    );
    // A hook that crashed (exit 3): the failure policy denies; never mentra's allow.
    let (_, broken, is_error) = result(&results, "broken");
    assert!(*is_error && broken.contains("could not decide"), "{broken}");
    // Only the withheld call ran.
    assert_eq!(*s.ran.lock().unwrap(), vec![json!({"command": "withhold"})]);
}
