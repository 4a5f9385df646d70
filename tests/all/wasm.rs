//! The WebAssembly binding with real components (built from WAT at test
//! time): the contract across the WIT boundary, every failure kind failing
//! closed and obeying `on_failure: allow` with the next call still working,
//! no state between calls, no ambient authority, and loading errors.

use crate::guests::{self, PROBE_TEMPLATE};
use crate::support::*;
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use toolgate::{BindingKind, Config, Decision, FailureKind, Outcome, Request, Step, ToolResult};

fn wasm_hook(name: &str, guest: &str, extra: Value) -> Value {
    let mut hook = json!({"name": name, "wasm": guests::path(guest)});
    if let (Value::Object(h), Value::Object(e)) = (&mut hook, extra) {
        h.extend(e);
    }
    hook
}

async fn pre(fx: &Fixture, input: Value) -> Outcome {
    fx.runner()
        .pre_tool_use(&Request::pre("shell", input))
        .await
}

#[tokio::test]
async fn a_component_answers_allow_deny_modify_and_replace() {
    let fx = Fixture::new();
    let cases = [
        ("allow", Decision::Allow),
        (
            "deny",
            Decision::Deny {
                reason: "no force-pushing from a sandbox".into(),
            },
        ),
        (
            "modify",
            Decision::Modify {
                input: json!({"command": "git push --dry-run"}),
            },
        ),
        (
            "replace",
            Decision::Replace {
                result: ToolResult::ok(json!({"files": ["a", "b"]})),
            },
        ),
    ];
    for (guest, expected) in cases {
        fx.workspace_hooks(json!([wasm_hook("g", guest, json!({}))]));
        let outcome = pre(&fx, json!({"command": "git push"})).await;
        assert_eq!(outcome.decision, expected, "{guest}: {:#?}", outcome.runs);
        let rec = record(&outcome, "g");
        assert_eq!(rec.binding, BindingKind::Wasm);
        assert!(rec.metrics["fuel_used"] > 0, "fuel used is reported");
    }
    fx.workspace_hooks(json!([wasm_hook("g", "allow-with-context", json!({}))]));
    let outcome = pre(&fx, json!({})).await;
    assert_eq!(
        outcome.context.as_deref(),
        Some("this call was checked by a wasm guard")
    );
}

#[tokio::test]
async fn the_request_crosses_as_json_text_with_the_hooks_config() {
    let fx = Fixture::new();
    fx.workspace_hooks(json!([wasm_hook(
        "echo",
        "echo",
        json!({"config": {"allowed": ["ls"], "n": 2}})
    )]));
    let input = json!({"command": "ls \"quoted\" ünïcode", "n": [1, 2.5, null]});
    let outcome = pre(&fx, input.clone()).await;
    let Decision::Deny { reason } = &outcome.decision else {
        panic!("{:?}", outcome.decision)
    };
    assert_eq!(serde_json::from_str::<Value>(reason).unwrap(), input);
    let context: Value = serde_json::from_str(outcome.context.as_deref().unwrap()).unwrap();
    assert_eq!(context, json!({"allowed": ["ls"], "n": 2}));

    fx.workspace_hooks(json!([wasm_hook(
        "echo",
        "echo-result",
        json!({"event": "post_tool_use"})
    )]));
    let outcome = fx
        .runner()
        .post_tool_use(&Request::post(
            "shell",
            json!({}),
            ToolResult::ok(json!({"lines": 3})),
        ))
        .await;
    let Decision::Deny { reason } = &outcome.decision else {
        panic!("{:?}", outcome.decision)
    };
    assert_eq!(
        serde_json::from_str::<Value>(reason).unwrap(),
        json!({"lines": 3})
    );
}

/// Runs `guest` with the default policy and with `on_failure: allow`, then
/// once more to show the hook still works after failing.
async fn fails_closed_obeys_allow_and_recovers(
    guest: &str,
    extra: Value,
    kind: FailureKind,
) -> Outcome {
    let fx = Fixture::new();
    fx.workspace_hooks(json!([wasm_hook("h", guest, extra.clone()), {"name": "after", "wasm": guests::path("allow")}]));
    let runner = fx.runner();
    let closed = runner.pre_tool_use(&Request::pre("shell", json!({}))).await;
    assert_eq!(failure_kind(&closed, "h"), kind, "{:#?}", closed.runs);
    assert!(!closed.may_proceed(), "{kind} must deny by default");
    assert_eq!(ran(&closed), ["h"], "a failure that denies ends the chain");

    let mut open_hook = wasm_hook("h", guest, extra);
    open_hook["on_failure"] = json!("allow");
    fx.workspace_hooks(json!([open_hook, {"name": "after", "wasm": guests::path("allow")}]));
    let open = fx
        .runner()
        .pre_tool_use(&Request::pre("shell", json!({})))
        .await;
    assert_eq!(
        open.decision,
        Decision::Allow,
        "on_failure: allow lets {kind} through"
    );
    assert!(
        record(&open, "h")
            .warning
            .as_ref()
            .unwrap()
            .contains("failed open")
    );
    assert_eq!(ran(&open), ["h", "after"]);

    // The same runner, again: a fresh instance, the same failure, no damage.
    let again = runner.pre_tool_use(&Request::pre("shell", json!({}))).await;
    assert_eq!(failure_kind(&again, "h"), kind);
    closed
}

#[tokio::test]
async fn an_infinite_loop_runs_out_of_fuel() {
    let outcome = fails_closed_obeys_allow_and_recovers(
        "infinite-loop",
        json!({"fuel": 1_000_000}),
        FailureKind::OutOfFuel,
    )
    .await;
    assert_eq!(
        record(&outcome, "h").metrics.get("fuel_used"),
        Some(&1_000_000)
    );
}

#[tokio::test]
async fn a_guest_computing_past_its_timeout_hits_the_deadline() {
    let started = Instant::now();
    fails_closed_obeys_allow_and_recovers(
        "infinite-loop",
        json!({"fuel": 100_000_000_000u64, "timeout_ms": 50}),
        FailureKind::TimedOut,
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_guest_blocked_in_a_host_call_hits_the_deadline() {
    let started = Instant::now();
    fails_closed_obeys_allow_and_recovers(
        "sleeper",
        json!({"timeout_ms": 100}),
        FailureKind::TimedOut,
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_memory_grow_bomb_hits_the_memory_limit() {
    let outcome = fails_closed_obeys_allow_and_recovers(
        "memory-bomb",
        json!({"memory_mb": 4}),
        FailureKind::MemoryLimit,
    )
    .await;
    assert!(
        failure_message(&outcome, "h").contains("4194304"),
        "{}",
        failure_message(&outcome, "h")
    );
}

#[tokio::test]
async fn unbounded_recursion_is_a_stack_overflow() {
    fails_closed_obeys_allow_and_recovers("recursion", json!({}), FailureKind::StackOverflow).await;
}

#[tokio::test]
async fn unreachable_is_a_trap() {
    let outcome =
        fails_closed_obeys_allow_and_recovers("unreachable", json!({}), FailureKind::Trap).await;
    assert!(failure_message(&outcome, "h").contains("unreachable"));
}

#[tokio::test]
async fn a_trap_the_guest_explained_first_is_its_guest_error_with_that_message() {
    // A Rust panic (panic = "abort") or a C assert: the guest says why
    // through `about-to-fail`, then traps.
    let outcome =
        fails_closed_obeys_allow_and_recovers("explained-trap", json!({}), FailureKind::GuestError)
            .await;
    assert!(
        failure_message(&outcome, "h").contains(guests::EXPLANATION),
        "{}",
        failure_message(&outcome, "h")
    );
    // A guest that explains and then answers has answered.
    let fx = Fixture::new();
    fx.workspace_hooks(json!([wasm_hook("h", "explained-then-allows", json!({}))]));
    let outcome = pre(&fx, json!({"command": "ls"})).await;
    assert_eq!(outcome.decision, Decision::Allow, "{outcome:?}");
    // Running out of fuel is the host's limit, whatever the guest said first.
    fails_closed_obeys_allow_and_recovers(
        "explained-then-loops",
        json!({"fuel": 1_000_000}),
        FailureKind::OutOfFuel,
    )
    .await;
}

#[tokio::test]
async fn the_guests_own_error_is_a_failure() {
    let outcome =
        fails_closed_obeys_allow_and_recovers("guest-error", json!({}), FailureKind::GuestError)
            .await;
    assert!(failure_message(&outcome, "h").contains("config lacks `allowed`"));
    // The guest's message is for the operator; the model gets the policy's reason.
    let Decision::Deny { reason } = &outcome.decision else {
        panic!()
    };
    assert!(!reason.contains("config lacks"), "{reason}");
}

#[tokio::test]
async fn modify_or_replace_with_text_that_is_not_json_is_unusable() {
    let outcome = fails_closed_obeys_allow_and_recovers(
        "modify-not-json",
        json!({}),
        FailureKind::UnusableRewrite,
    )
    .await;
    assert!(failure_message(&outcome, "h").contains("not JSON"));
    fails_closed_obeys_allow_and_recovers(
        "replace-not-json",
        json!({}),
        FailureKind::UnusableRewrite,
    )
    .await;
}

#[tokio::test]
async fn modify_on_a_post_event_is_unusable() {
    let fx = Fixture::new();
    for (policy, proceeds) in [("deny", false), ("allow", true)] {
        fx.workspace_hooks(json!([wasm_hook(
            "h",
            "modify",
            json!({"event": "post_tool_use", "on_failure": policy})
        )]));
        let outcome = fx
            .runner()
            .post_tool_use(&Request::post("t", json!({}), ToolResult::ok(1)))
            .await;
        assert_eq!(failure_kind(&outcome, "h"), FailureKind::UnusableRewrite);
        assert_eq!(outcome.may_proceed(), proceeds);
    }
}

#[tokio::test]
async fn oversized_context_is_truncated_with_a_notice() {
    let fx = Fixture::new();
    fx.workspace_hooks(json!([wasm_hook("chatty", "big-context", json!({}))]));
    let outcome = pre(&fx, json!({})).await;
    assert_eq!(outcome.decision, Decision::Allow);
    let context = outcome.context.clone().unwrap();
    assert!(context.len() <= toolgate::limits::DEFAULT_CONTEXT_LIMIT);
    assert!(context.contains("advisory context truncated"));
    assert!(
        record(&outcome, "chatty")
            .warning
            .as_ref()
            .unwrap()
            .contains("truncated")
    );
}

#[tokio::test]
async fn no_state_survives_between_calls() {
    let fx = Fixture::new();
    fx.workspace_hooks(json!([wasm_hook("counter", "counter", json!({}))]));
    let runner = fx.runner();
    for call in 0..5 {
        let outcome = runner.pre_tool_use(&Request::pre("t", json!({}))).await;
        assert_eq!(
            outcome.decision,
            Decision::Allow,
            "call {call} saw a counter above 1"
        );
    }
}

#[tokio::test]
async fn a_guest_reaching_for_files_env_sockets_or_stdin_gets_nothing() {
    let fx = Fixture::new();
    fx.workspace_hooks(json!([wasm_hook("probe", "probe", json!({}))]));
    let outcome = pre(&fx, json!({"path": "/etc/passwd"})).await;
    let Decision::Deny { reason } = &outcome.decision else {
        panic!("{:#?}", outcome.runs)
    };
    // No preopened directory to open /etc/passwd through, no environment, no
    // arguments; TCP: err(access-denied = 1); stdin: err(closed = 1).
    let expected = PROBE_TEMPLATE
        .replacen('?', "0", 3)
        .replacen("??", "11", 1)
        .replacen("??", "11", 1);
    assert_eq!(reason, &expected);
    // Its stdout reached the operator's record, not the model, stripped of escapes.
    let diagnostics = record(&outcome, "probe").diagnostics.clone().unwrap();
    assert!(diagnostics.contains("probe: hello"), "{diagnostics:?}");
    assert!(!diagnostics.contains('\u{1b}'), "{diagnostics:?}");
    assert!(!outcome.context.unwrap_or_default().contains("hello"));
}

#[tokio::test]
async fn an_import_toolgate_does_not_provide_fails_to_load_naming_it_and_the_hook() {
    let fx = Fixture::new();
    fx.workspace_hooks(json!([wasm_hook("fetcher", "needs-http", json!({}))]));
    let err = Config::load(None, Some(&fx.workspace())).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("hooks[0] (\"fetcher\")") && text.contains("field `wasm`"),
        "{text}"
    );
    assert!(text.contains("wasi:http/outgoing-handler"), "{text}");
}

#[tokio::test]
async fn a_file_that_is_not_a_component_fails_to_load() {
    let fx = Fixture::new();
    std::fs::write(fx.workspace().join("junk.wasm"), b"\0asm junk").unwrap();
    std::fs::write(
        fx.workspace().join("core.wasm"),
        wat::parse_str("(module)").unwrap(),
    )
    .unwrap();
    for file in ["junk.wasm", "core.wasm", "missing.wasm"] {
        fx.workspace_hooks(json!([{"name": "bad", "wasm": file}]));
        let err = Config::load(None, Some(&fx.workspace())).unwrap_err();
        assert_eq!(
            err.problems[0].field.as_deref(),
            Some("wasm"),
            "{file}: {err}"
        );
    }
}

#[tokio::test]
async fn wasm_fields_are_validated_strictly() {
    let fx = Fixture::new();
    let allow = guests::path("allow");
    fx.script("hook.sh", "#!/bin/sh\n");
    for (hook, field, says) in [
        (
            json!({"name": "x", "wasm": &allow, "command": ["./hook.sh"]}),
            "wasm",
            "not both",
        ),
        (
            json!({"name": "x", "command": ["./hook.sh"], "fuel": 10}),
            "fuel",
            "only for `wasm` hooks",
        ),
        (
            json!({"name": "x", "command": ["./hook.sh"], "memory_mb": 10}),
            "memory_mb",
            "only for `wasm` hooks",
        ),
        (
            json!({"name": "x", "wasm": &allow, "fuel": 0}),
            "fuel",
            "out of range",
        ),
        (
            json!({"name": "x", "wasm": &allow, "fuel": "lots"}),
            "fuel",
            "whole number",
        ),
        (
            json!({"name": "x", "wasm": &allow, "memory_mb": 5000}),
            "memory_mb",
            "1..=4096",
        ),
        (
            json!({"name": "x", "wasm": 7}),
            "wasm",
            "path of a component",
        ),
        (json!({"name": "x"}), "command", "or `wasm`"),
    ] {
        fx.workspace_hooks(json!([hook]));
        let err = Config::load(None, Some(&fx.workspace())).unwrap_err();
        let p = &err.problems[0];
        assert_eq!(p.field.as_deref(), Some(field), "{err}");
        assert!(err.to_string().contains(says), "expected {says:?} in {err}");
        assert_eq!((p.index, p.name.as_deref()), (Some(0), Some("x")));
    }
}

#[tokio::test]
async fn wasm_hooks_get_their_documented_defaults() {
    let fx = Fixture::new();
    fx.workspace_hooks(json!([wasm_hook("g", "allow", json!({}))]));
    let config = fx.config();
    let hook = &config.hooks()[0];
    assert_eq!(hook.timeout_ms, toolgate::wasm::DEFAULT_TIMEOUT_MS);
    let toolgate::BindingSpec::Wasm(toolgate::WasmSpec {
        fuel,
        memory_mb,
        component,
        ..
    }) = &hook.binding
    else {
        panic!()
    };
    assert_eq!(
        (*fuel, *memory_mb),
        (
            toolgate::wasm::DEFAULT_FUEL,
            toolgate::wasm::DEFAULT_MEMORY_MB
        )
    );
    assert!(component.imports.is_empty(), "{:?}", component.imports);
}

#[tokio::test]
async fn a_chain_mixes_wasm_and_argv_hooks_in_order_with_threading() {
    let fx = Fixture::new();
    // wasm rewrites the command; the argv hook after it sees the rewrite.
    let check = fx.script(
        "check.py",
        r#"#!/usr/bin/env python3
import json, sys
req = json.load(sys.stdin)
ok = req["input"] == {"command": "git push --dry-run"}
print(json.dumps({"decision": "allow"} if ok else {"decision": "deny", "reason": "saw %r" % req["input"]}))
"#,
    );
    fx.global_hooks(json!([wasm_hook("rewrite", "modify", json!({}))]));
    fx.workspace_hooks(json!([{"name": "argv-check", "command": [&check]}, wasm_hook("final", "allow", json!({}))]));
    let outcome = pre(&fx, json!({"command": "git push --force"})).await;
    assert_eq!(ran(&outcome), ["rewrite", "argv-check", "final"]);
    assert_eq!(
        outcome.decision,
        Decision::Modify {
            input: json!({"command": "git push --dry-run"})
        }
    );
    let bindings: Vec<_> = outcome.runs.iter().map(|r| (r.binding, r.step)).collect();
    assert_eq!(
        bindings,
        [
            (BindingKind::Wasm, Step::Modify),
            (BindingKind::Subprocess, Step::Allow),
            (BindingKind::Wasm, Step::Allow)
        ]
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_computing_guest_never_holds_the_runtime_thread() {
    // One thread runs both the guest and a ticker task. The guest loops until
    // its 300 ms deadline; because it yields at every epoch tick, the ticker
    // keeps ticking meanwhile.
    let fx = Fixture::new();
    fx.workspace_hooks(json!([wasm_hook(
        "spin",
        "infinite-loop",
        json!({"fuel": 100_000_000_000u64, "timeout_ms": 300})
    )]));
    let runner = fx.runner();
    let ticker = tokio::spawn(async {
        let mut ticks = 0u32;
        let started = Instant::now();
        while started.elapsed() < Duration::from_millis(250) {
            tokio::time::sleep(Duration::from_millis(5)).await;
            ticks += 1;
        }
        ticks
    });
    let outcome = runner.pre_tool_use(&Request::pre("t", json!({}))).await;
    assert_eq!(failure_kind(&outcome, "spin"), FailureKind::TimedOut);
    let ticks = ticker.await.unwrap();
    assert!(
        ticks >= 10,
        "the ticker ran only {ticks} times while the guest spun"
    );
}

#[tokio::test]
async fn concurrent_calls_each_get_their_own_instance() {
    let fx = Fixture::new();
    fx.workspace_hooks(json!([
        wasm_hook("counter", "counter", json!({})),
        wasm_hook("echo", "echo", json!({}))
    ]));
    let runner = fx.runner();
    let calls: Vec<_> = (0..32)
        .map(|n| {
            let runner = runner.clone();
            tokio::spawn(async move {
                (
                    n,
                    runner
                        .pre_tool_use(&Request::pre("t", json!({"n": n})))
                        .await,
                )
            })
        })
        .collect();
    for call in calls {
        let (n, outcome) = call.await.unwrap();
        let Decision::Deny { reason } = &outcome.decision else {
            panic!("{:#?}", outcome.runs)
        };
        assert_eq!(
            serde_json::from_str::<Value>(reason).unwrap(),
            json!({"n": n})
        );
    }
}

#[tokio::test]
async fn the_reference_guest_builds_in_process_and_allows() {
    let fx = Fixture::new();
    let path = fx.dir.path().join("reference.wasm");
    std::fs::write(&path, toolgate::wasm::reference_guest()).unwrap();
    fx.workspace_hooks(json!([{"name": "ref", "wasm": path}]));
    let outcome = pre(&fx, json!({"command": "anything"})).await;
    assert_eq!(outcome.decision, Decision::Allow);
    assert!(record(&outcome, "ref").metrics["fuel_used"] > 0);
}

#[tokio::test]
async fn a_wat_file_is_built_into_a_component_at_load() {
    let fx = Fixture::new();
    let demo =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/demo/hooks/no_network.wat");
    std::fs::copy(&demo, fx.workspace().join("guard.wat")).unwrap();
    fx.workspace_hooks(json!([{"name": "net", "wasm": "guard.wat"}]));
    let runner = fx.runner();
    let denied = runner
        .pre_tool_use(&Request::pre("WebFetch", json!({"url": "x"})))
        .await;
    assert!(
        matches!(&denied.decision, Decision::Deny { reason } if reason.contains("Network tools are disabled"))
    );
    let allowed = runner.pre_tool_use(&Request::pre("Bash", json!({}))).await;
    assert_eq!(allowed.decision, Decision::Allow);

    std::fs::write(
        fx.workspace().join("bad.wat"),
        "(module (func $f (result i32)))",
    )
    .unwrap();
    fx.workspace_hooks(json!([{"name": "bad", "wasm": "bad.wat"}]));
    let err = Config::load(None, Some(&fx.workspace())).unwrap_err();
    assert_eq!(err.problems[0].field.as_deref(), Some("wasm"));
    assert!(err.to_string().contains("WAT"), "{err}");
}

/// Appends a custom section to a component so that it is exactly `size`
/// bytes long (custom sections change nothing a guest does).
fn padded_to(mut bytes: Vec<u8>, size: usize) -> Vec<u8> {
    fn leb(mut n: usize, out: &mut Vec<u8>) {
        loop {
            let byte = (n & 0x7f) as u8;
            n >>= 7;
            if n == 0 {
                out.push(byte);
                return;
            }
            out.push(byte | 0x80);
        }
    }
    for payload in 0..size {
        let mut section = vec![0u8];
        let mut contents = vec![1u8, b'p'];
        contents.extend(std::iter::repeat_n(0u8, payload));
        leb(contents.len(), &mut section);
        section.extend(contents);
        if bytes.len() + section.len() == size {
            bytes.extend(section);
            return bytes;
        }
    }
    panic!("cannot pad to {size}");
}

/// Whether the compile cache in `dir` holds a stat index entry.
fn has_stat_index(dir: &std::path::Path) -> bool {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .any(|e| e.path().extension().is_some_and(|x| x == "stat"))
}

/// The stat index lets a one-shot process skip reading a component it has
/// seen; it must never serve the old one for new bytes. Here the file is
/// rewritten in place with another guest of exactly the same size and its
/// mtime put back: only the ctime (which no user can set) differs, and the
/// new guest is what answers.
#[test]
fn a_component_rewritten_to_the_same_size_and_mtime_is_loaded_anew() {
    let fx = Fixture::new();
    let deny = std::fs::read(crate::guests::path("deny")).unwrap();
    let allow = std::fs::read(crate::guests::path("allow")).unwrap();
    let size = deny.len().max(allow.len()) + 64;
    let (deny, allow) = (padded_to(deny, size), padded_to(allow, size));
    let guest = fx.workspace().join("guard.wasm");
    std::fs::write(&guest, &deny).unwrap();
    let mtime = std::fs::metadata(&guest).unwrap().modified().unwrap();
    // Older than the index's racy window, so the first load records it.
    std::thread::sleep(std::time::Duration::from_millis(2100));
    let cache = tempfile::tempdir().unwrap();
    std::fs::write(
        fx.global().join("hooks.json"),
        serde_json::json!({"schema": 1, "hooks": [{"name": "g", "wasm": &guest}]}).to_string(),
    )
    .unwrap();
    let check = || {
        let out = crate::support::run_with_stdin(
            crate::support::toolgate()
                .args(["check", "--workspace"])
                .arg(fx.workspace())
                .env("TOOLGATE_CONFIG_DIR", fx.global())
                .env("TOOLGATE_CACHE_DIR", cache.path()),
            r#"{"event":"pre_tool_use","tool":"shell","input":{"command":"ls"}}"#,
        );
        out.status.code()
    };
    assert_eq!(check(), Some(2));
    assert_eq!(
        check(),
        Some(2),
        "the second load (from the index) still denies"
    );
    assert!(has_stat_index(cache.path()), "the stat index was recorded");
    // Same inode, same size, same mtime; new bytes.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&guest)
        .and_then(|mut f| std::io::Write::write_all(&mut f, &allow))
        .unwrap();
    std::fs::File::options()
        .write(true)
        .open(&guest)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    assert_eq!(std::fs::metadata(&guest).unwrap().len() as usize, size);
    assert_eq!(
        std::fs::metadata(&guest).unwrap().modified().unwrap(),
        mtime
    );
    assert_eq!(
        check(),
        Some(0),
        "the rewritten guest must answer, not the cached one"
    );
}

/// The stat index must hold the identity of the bytes that were read, not
/// of whatever sits at the path once the compile is done. Here toolgate is
/// held between reading the guard (a denying guest) and recording its
/// identity; meanwhile the file is replaced by an allowing guest that is
/// old enough to be recorded. The next one-shot call must answer with the
/// file on disk, not with the denying guest's cached code.
#[cfg(debug_assertions)]
#[test]
fn a_component_swapped_while_it_loads_is_not_indexed_as_the_old_one() {
    let fx = Fixture::new();
    let guest = fx.workspace().join("guard.wasm");
    std::fs::copy(guests::path("deny"), &guest).unwrap();
    // Older than the index's racy window, so the load records it.
    std::thread::sleep(Duration::from_millis(2100));
    let cache = tempfile::tempdir().unwrap();
    std::fs::write(
        fx.global().join("hooks.json"),
        json!({"schema": 1, "hooks": [{"name": "g", "wasm": &guest}]}).to_string(),
    )
    .unwrap();
    let check = |cmd: &mut std::process::Command| {
        spawn_with_stdin(
            cmd.args(["check", "--workspace"])
                .arg(fx.workspace())
                .env("TOOLGATE_CONFIG_DIR", fx.global())
                .env("TOOLGATE_CACHE_DIR", cache.path()),
            r#"{"event":"pre_tool_use","tool":"shell","input":{"command":"ls"}}"#,
        )
    };
    let pause = LoadPause::new();
    let paused = check(pause.arm(&mut toolgate()));
    pause.reached();
    replace_file(&guest, &std::fs::read(guests::path("allow")).unwrap());
    // The replacement is past the racy window too: nothing but the
    // identity taken at the read keeps it out of the index.
    std::thread::sleep(Duration::from_millis(2100));
    pause.release();
    let out = finish_within(paused, Duration::from_secs(60), "the paused check");
    assert_eq!(
        out.status.code(),
        Some(2),
        "the paused call decides with the bytes it read: {}",
        stderr(&out)
    );
    assert!(has_stat_index(cache.path()), "the stat index was recorded");
    let out = finish_within(check(&mut toolgate()), Duration::from_secs(60), "the check");
    assert_eq!(
        out.status.code(),
        Some(0),
        "the guest on disk answers, not the one read before the swap: {}",
        stderr(&out)
    );
}

/// A component whose `decide` answers `allow`, built against `wit` (a
/// variant of `wit/hook.wit`) instead of toolgate's own.
fn component_against(wit: &str) -> Vec<u8> {
    let mut module = wat::parse_str(
        r#"(module
  (memory (export "memory") 1)
  (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32) (i32.const 8192))
  (func (export "decide") (param i32) (result i32) (i32.const 512)))"#,
    )
    .unwrap();
    let mut resolve = wit_parser::Resolve::default();
    let pkg = resolve
        .push_str("hook.wit", wit)
        .expect("the variant parses");
    let world = resolve.select_world(&[pkg], Some("hook")).unwrap();
    wit_component::embed_component_metadata(
        &mut module,
        &resolve,
        world,
        wit_component::StringEncoding::UTF8,
    )
    .unwrap();
    wit_component::ComponentEncoder::default()
        .module(&module)
        .unwrap()
        .validate(true)
        .encode()
        .unwrap()
}

#[tokio::test]
async fn a_component_built_against_another_wit_version_loads_only_if_decide_is_unchanged() {
    let ours = include_str!("../../wit/hook.wit");
    let fx = Fixture::new();
    // The world exports a bare function: its name carries no version, so a
    // component built against another version with the same `decide` is
    // the same component to wasmtime, and answers.
    let renumbered = ours.replace("toolgate:hook@0.3.0", "toolgate:hook@0.9.0");
    assert_ne!(renumbered, ours);
    std::fs::write(
        fx.workspace().join("renumbered.wasm"),
        component_against(&renumbered),
    )
    .unwrap();
    fx.workspace_hooks(json!([{"name": "renumbered", "wasm": "renumbered.wasm"}]));
    let outcome = pre(&fx, json!({"command": "ls"})).await;
    assert_eq!(record(&outcome, "renumbered").step, Step::Allow);

    // A version whose request differs is refused when it loads, saying
    // which contract toolgate speaks; it is never called with the wrong
    // layout.
    let changed = renumbered.replace(
        "config: option<string>,\n    }",
        "config: option<string>,\n        workspace: string,\n    }",
    );
    assert_ne!(changed, renumbered);
    std::fs::write(
        fx.workspace().join("changed.wasm"),
        component_against(&changed),
    )
    .unwrap();
    fx.workspace_hooks(json!([{"name": "changed", "wasm": "changed.wasm"}]));
    let err = Config::load(None, Some(&fx.workspace())).unwrap_err();
    let text = err.to_string();
    assert_eq!(err.problems[0].field.as_deref(), Some("wasm"), "{text}");
    assert!(
        text.contains("does not export toolgate:hook@0.3.0's `decide`"),
        "{text}"
    );
}

/// A guard built before `ask` existed (against toolgate:hook@0.1.0, frozen
/// in crates/toolgate-wasm/wit/0.1.0) keeps loading and deciding after the
/// upgrade: a guard that stopped loading would block every call.
#[tokio::test]
async fn a_component_built_against_0_1_0_still_loads_and_decides() {
    let fx = Fixture::new();
    fx.workspace_hooks(json!([{"name": "old", "wasm": crate::guests::path("deny-0.1.0")}]));
    let outcome = pre(&fx, json!({"command": "ls"})).await;
    assert_eq!(
        outcome.decision,
        Decision::Deny {
            reason: "an old guard still guards".into()
        }
    );
    fx.workspace_hooks(json!([{"name": "old", "wasm": crate::guests::path("modify-0.1.0")}]));
    let outcome = pre(&fx, json!({"command": "ls"})).await;
    assert_eq!(
        outcome.decision,
        Decision::Modify {
            input: json!({"command": "git status"})
        }
    );
    assert!(record(&outcome, "old").metrics["fuel_used"] > 0);
}

/// A component answers `ask` (0.2.0): the chain waits for a person with its
/// reason; after the call the same answer is a failure.
#[tokio::test]
async fn a_component_can_ask_for_a_person_before_the_call_only() {
    let fx = Fixture::new();
    fx.workspace_hooks(json!([{"name": "asker", "wasm": crate::guests::path("ask")}]));
    let outcome = pre(&fx, json!({"command": "rm -r x"})).await;
    assert_eq!(
        outcome.decision,
        Decision::Ask {
            reason: "deleting needs a person".into(),
            input: None
        }
    );
    assert_eq!(record(&outcome, "asker").step, Step::Ask);
    fx.workspace_hooks(json!([
        {"name": "asker", "wasm": crate::guests::path("ask"), "event": "post_tool_use"},
    ]));
    let outcome = fx
        .runner()
        .post_tool_use(&Request::post(
            "shell",
            json!({"command": "rm -r x"}),
            toolgate::ToolResult::ok("gone"),
        ))
        .await;
    assert!(!outcome.may_proceed());
    assert_eq!(
        record(&outcome, "asker").failure.as_ref().unwrap().kind,
        toolgate::FailureKind::NotADecision
    );
}
