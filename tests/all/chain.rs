//! The chain's rules (DESIGN §2), each pinned with real subprocess hooks and
//! in-process interceptors side by side.

use crate::support::*;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use toolgate::{BindingKind, Decision, HookRunner, Request, Source, Step, ToolResult, Verdict};

/// Appends its name to `input.trace` once (idempotent, like `TRACE_HOOK`, so
/// it agrees with its own rewrite when asked again in a later round).
fn trace_interceptor(name: &'static str) -> impl toolgate::Interceptor {
    scripted(move |req| {
        let mut input = req.input.clone();
        match input["trace"].as_array_mut() {
            Some(t) if t.contains(&json!(name)) => {}
            Some(t) => t.push(json!(name)),
            None => input["trace"] = json!([name]),
        }
        Ok(Verdict::modify(input))
    })
    .0
}

/// Participants in the order they were first consulted (re-judgement rounds
/// consult earlier ones again).
fn first_seen(outcome: &toolgate::Outcome) -> Vec<&str> {
    let mut seen: Vec<&str> = Vec::new();
    for name in ran(outcome) {
        if !seen.contains(&name) {
            seen.push(name);
        }
    }
    seen
}

#[tokio::test]
async fn order_is_interceptors_then_global_then_workspace() {
    let fx = Fixture::new();
    let g = fx.global_script("trace.py", TRACE_HOOK);
    let w = fx.script("trace.py", TRACE_HOOK);
    fx.global_hooks(
        json!([{"name": "global-1", "command": [&g]}, {"name": "global-2", "command": [&g]}]),
    );
    fx.workspace_hooks(json!([{"name": "workspace-1", "command": [&w]}]));

    // Registered config first and interceptors after: order is by source,
    // then registration order within a source.
    let runner = HookRunner::builder()
        .config(fx.config())
        .interceptor("host-1", trace_interceptor("host-1"))
        .interceptor("host-2", trace_interceptor("host-2"))
        .build();
    let outcome = runner.pre_tool_use(&Request::pre("shell", json!({}))).await;

    let expected = ["host-1", "host-2", "global-1", "global-2", "workspace-1"];
    assert_eq!(first_seen(&outcome), expected);
    match &outcome.decision {
        Decision::Modify { input } => assert_eq!(input["trace"], json!(expected)),
        other => panic!("expected modify, got {other:?}"),
    }
    // Each rewrite started a round in which everyone before the rewriter
    // judged it again; the last round is the one everybody agreed in.
    let last_round = outcome.runs.last().unwrap().round;
    let last: Vec<&str> = outcome
        .runs
        .iter()
        .filter(|r| r.round == last_round)
        .map(|r| r.name.as_str())
        .collect();
    assert_eq!(last, ["host-1", "host-2", "global-1", "global-2"]);
    let mut sources: Vec<(String, Source)> = outcome
        .runs
        .iter()
        .map(|r| (r.name.clone(), r.source))
        .collect();
    sources.dedup_by(|a, b| a.0 == b.0);
    let sources: Vec<Source> = expected
        .iter()
        .map(|n| sources.iter().find(|(name, _)| name == n).unwrap().1)
        .collect();
    assert_eq!(
        sources,
        [
            Source::Host,
            Source::Host,
            Source::Global,
            Source::Global,
            Source::Workspace
        ]
    );
}

#[tokio::test]
async fn deny_short_circuits_so_later_hooks_never_run() {
    let fx = Fixture::new();
    let deny = fx.global_script(
        "deny.sh",
        &answer_script(&json!({"decision": "deny", "reason": "no"})),
    );
    let marker = fx.marker("workspace-hook-ran");
    let mark = fx.script("mark.sh", &marker_script(&marker));
    fx.global_hooks(json!([{"name": "denier", "command": [&deny]}]));
    fx.workspace_hooks(json!([{"name": "marker", "command": [&mark]}]));
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let (late, _) = scripted(move |_| {
        counted.fetch_add(1, Ordering::SeqCst);
        Ok(Verdict::allow())
    });

    let runner = HookRunner::builder()
        .config(fx.config())
        .interceptor("host", late)
        .build();
    let outcome = runner
        .pre_tool_use(&Request::pre("shell", json!({"command": "x"})))
        .await;

    assert_eq!(
        outcome.decision,
        Decision::Deny {
            reason: "no".into()
        }
    );
    assert_eq!(outcome.decided_by.as_deref(), Some("denier"));
    assert_eq!(ran(&outcome), ["host", "denier"]);
    assert!(
        !marker.exists(),
        "the workspace hook after the deny must not run"
    );

    // An interceptor's deny stops every configured hook too.
    let (denier, _) = scripted(|_| Ok(Verdict::deny("host says no")));
    let runner = HookRunner::builder()
        .interceptor("host", denier)
        .config(fx.config())
        .build();
    let outcome = runner.pre_tool_use(&Request::pre("shell", json!({}))).await;
    assert_eq!(ran(&outcome), ["host"]);
    assert!(!marker.exists());
}

#[tokio::test]
async fn modify_threads_to_next_participant_and_tool_gets_final_input() {
    // The checker only goes along if it sees the rewriter's rewrite; both are
    // in-process mocks: what is pinned is the threading, not a binding.
    let (checker, _) = scripted(|req| {
        let mut input = req.input.clone();
        if input.get("command") != Some(&json!("ls --color=never")) {
            return Ok(Verdict::deny(format!("saw {input}")));
        }
        if input.get("checked").is_some() {
            return Ok(Verdict::allow());
        }
        input["checked"] = json!(true);
        Ok(Verdict::modify(input))
    });
    let (rewriter, _) = scripted(|req| {
        if req.event != toolgate::Event::PreToolUse {
            return Ok(Verdict::allow());
        }
        // Idempotent: asked again about a later rewrite that kept its flag,
        // it agrees.
        let command = req.input["command"].as_str().unwrap();
        if command.ends_with("--color=never") {
            return Ok(Verdict::allow());
        }
        let mut input = req.input.clone();
        input["command"] = json!(format!("{command} --color=never"));
        Ok(Verdict::modify(input))
    });
    let runner = HookRunner::builder()
        .interceptor("rewriter", rewriter)
        .interceptor("checker", checker)
        .build();

    let tool_saw = Arc::new(std::sync::Mutex::new(Value::Null));
    let saw = tool_saw.clone();
    let call = runner
        .call(
            Request::pre("shell", json!({"command": "ls"})),
            |input| async move {
                *saw.lock().unwrap() = input.clone();
                ToolResult::ok("file.txt")
            },
        )
        .await;

    assert!(call.tool_ran);
    assert_eq!(
        *tool_saw.lock().unwrap(),
        json!({"command": "ls --color=never", "checked": true})
    );
    assert_eq!(call.pre.decided_by.as_deref(), Some("checker"));
    assert_eq!(call.shown, ToolResult::ok("file.txt"));
}

#[tokio::test]
async fn pre_replace_ends_pre_chain_and_its_result_goes_through_post_chain() {
    let fx = Fixture::new();
    let marker = fx.marker("later-pre-hook-ran");
    let mark = fx.script("mark.sh", &marker_script(&marker));
    let redact = fx.script(
        "redact.py",
        r#"#!/usr/bin/env python3
import json, sys
req = json.load(sys.stdin)
out = req["result"]["output"].replace("hunter2", "[redacted]")
print(json.dumps({"decision": "replace", "result": {"output": out, "is_error": False}}))
"#,
    );
    fx.workspace_hooks(json!([
        {"name": "later-pre", "command": [&mark]},
        {"name": "redactor", "command": [&redact], "event": "post_tool_use"}
    ]));
    let (cache, _) = scripted(|req| {
        Ok(match req.event {
            toolgate::Event::PreToolUse => {
                Verdict::replace(ToolResult::ok("cached: password=hunter2"))
            }
            _ => Verdict::allow(),
        })
    });
    let runner = HookRunner::builder()
        .interceptor("cache", cache)
        .config(fx.config())
        .build();

    let call = runner
        .call(
            Request::pre("shell", json!({"command": "cat creds"})),
            |_| async { panic!("the tool must not run after a pre replace") },
        )
        .await;

    assert!(!call.tool_ran);
    assert!(!marker.exists(), "pre hooks after a replace must not run");
    assert_eq!(call.shown, ToolResult::ok("cached: password=[redacted]"));
    assert_eq!(
        call.pre.decision,
        Decision::Replace {
            result: ToolResult::ok("cached: password=[redacted]")
        }
    );
    // The record keeps what the replacing hook supplied.
    assert_eq!(
        call.pre.tool_result,
        Some(ToolResult::ok("cached: password=hunter2"))
    );
    let events: Vec<_> = call
        .pre
        .runs
        .iter()
        .map(|r| (r.name.as_str(), r.event))
        .collect();
    // The redactor's replacement is judged again by the interceptor before
    // it (re-judgement applies after the call too).
    assert_eq!(
        events,
        [
            ("cache", toolgate::Event::PreToolUse),
            ("cache", toolgate::Event::PostToolUse),
            ("redactor", toolgate::Event::PostToolUse),
            ("cache", toolgate::Event::PostToolUse)
        ]
    );
}

#[tokio::test]
async fn post_deny_shows_the_model_a_failure_while_the_record_keeps_the_real_output() {
    let fx = Fixture::new();
    let deny = fx.script(
        "deny.sh",
        &answer_script(&json!({"decision": "deny", "reason": "contains a secret"})),
    );
    let marker = fx.marker("after-post-deny");
    let mark = fx.script("mark.sh", &marker_script(&marker));
    fx.workspace_hooks(json!([
        {"name": "dlp", "command": [&deny], "event": "post_tool_use"},
        {"name": "after", "command": [&mark], "event": "post_tool_use"}
    ]));
    let real = ToolResult::ok("AKIAABCDEFGHIJKLMNOP");
    let outcome = fx
        .runner()
        .post_tool_use(&Request::post("shell", json!({}), real.clone()))
        .await;

    assert!(!outcome.may_proceed());
    assert_eq!(
        outcome.decision,
        Decision::Deny {
            reason: "contains a secret".into()
        }
    );
    let shown = outcome.shown.as_ref().unwrap();
    assert!(shown.is_error, "a withheld output is shown as an error");
    assert!(shown.output.as_str().unwrap().contains("contains a secret"));
    assert!(!shown.output.as_str().unwrap().contains("AKIA"));
    assert_eq!(
        outcome.tool_result,
        Some(real),
        "the audit record keeps the real output"
    );
    assert!(!marker.exists(), "a post deny ends the post chain");
}

#[tokio::test]
async fn post_modify_is_a_hook_error_and_the_failure_policy_applies() {
    let fx = Fixture::new();
    let modify = fx.script(
        "modify.sh",
        &answer_script(&json!({"decision": "modify", "input": {"x": 1}})),
    );
    fx.workspace_hooks(json!([
        {"name": "closed", "command": [&modify], "event": "post_tool_use"},
    ]));
    let real = ToolResult::ok("out");
    let outcome = fx
        .runner()
        .post_tool_use(&Request::post("shell", json!({}), real.clone()))
        .await;
    assert!(!outcome.may_proceed());
    let rec = record(&outcome, "closed");
    assert_eq!(rec.step, Step::Failed);
    assert_eq!(
        rec.failure.as_ref().unwrap().kind,
        toolgate::FailureKind::UnusableRewrite
    );
    assert!(outcome.shown.as_ref().unwrap().is_error);

    fx.workspace_hooks(json!([
        {"name": "open", "command": [&modify], "event": "post_tool_use", "on_failure": "allow"},
    ]));
    let outcome = fx
        .runner()
        .post_tool_use(&Request::post("shell", json!({}), real.clone()))
        .await;
    assert_eq!(outcome.decision, Decision::Allow);
    assert_eq!(outcome.shown, Some(real));
    assert!(
        record(&outcome, "open")
            .warning
            .as_ref()
            .unwrap()
            .contains("failed open")
    );

    // The same rule holds for an interceptor.
    let (bad, _) = scripted(|req| {
        Ok(match req.event {
            toolgate::Event::PostToolUse => Verdict::modify(json!({})),
            _ => Verdict::allow(),
        })
    });
    let runner = HookRunner::builder().interceptor("bad", bad).build();
    let outcome = runner
        .post_tool_use(&Request::post("t", json!({}), ToolResult::ok(1)))
        .await;
    assert_eq!(
        failure_kind(&outcome, "bad"),
        toolgate::FailureKind::UnusableRewrite
    );
    assert!(!outcome.may_proceed());
}

#[tokio::test]
async fn context_is_merged_in_chain_order() {
    let (a, _) = scripted(|_| Ok(Verdict::allow().with_context("first")));
    let (b, _) = scripted(|_| Ok(Verdict::deny("stop").with_context("second")));
    let runner = HookRunner::builder()
        .interceptor("a", a)
        .interceptor("b", b)
        .build();
    let outcome = runner.pre_tool_use(&Request::pre("t", json!({}))).await;
    assert_eq!(outcome.context.as_deref(), Some("first\n\nsecond"));
}

#[tokio::test]
async fn context_over_budget_is_truncated_with_a_visible_notice() {
    let (chatty, _) = scripted(|_| Ok(Verdict::allow().with_context("x".repeat(6000))));
    let (first, _) = scripted(|_| Ok(Verdict::allow().with_context("é".repeat(3000))));
    let runner = HookRunner::builder()
        .interceptor("first", first)
        .interceptor("chatty", chatty)
        .build();
    let outcome = runner.pre_tool_use(&Request::pre("t", json!({}))).await;

    let context = outcome.context.clone().unwrap();
    assert!(
        context.len() <= toolgate::limits::DEFAULT_CONTEXT_LIMIT,
        "{} bytes",
        context.len()
    );
    assert!(
        context.starts_with(&"é".repeat(3000)),
        "earlier context is kept whole"
    );
    assert!(
        context.contains("[toolgate: advisory context truncated,"),
        "the cut is visible: {:#?}",
        outcome.runs
    );
    assert!(
        outcome.may_proceed(),
        "over-long context is truncated, not refused"
    );
    assert!(
        record(&outcome, "chatty")
            .warning
            .as_ref()
            .unwrap()
            .contains("truncated")
    );
    assert!(record(&outcome, "first").warning.is_none());

    // A smaller budget, set on the builder, holds too.
    let (long, _) = scripted(|_| Ok(Verdict::allow().with_context("y".repeat(500))));
    let runner = HookRunner::builder()
        .interceptor("long", long)
        .context_limit(200)
        .build();
    let context = runner
        .pre_tool_use(&Request::pre("t", json!({})))
        .await
        .context
        .unwrap();
    assert!(
        context.len() <= 200 && context.contains("bytes omitted]"),
        "{context}"
    );
}

#[tokio::test]
async fn run_record_per_participant_that_ran() {
    let fx = Fixture::new();
    let allow = fx.script(
        "allow.sh",
        "#!/bin/sh\necho 'to the operator' >&2\necho '{\"decision\":\"allow\"}'\n",
    );
    let broken = fx.script("broken.sh", "#!/bin/sh\necho nope\n");
    fx.workspace_hooks(json!([
        {"name": "ok", "command": [&allow]},
        {"name": "broken", "command": [&broken], "on_failure": "allow"},
        {"name": "other-tool", "command": [&allow], "tools": ["write_file"]}
    ]));
    let (host, _) = scripted(|_| Ok(Verdict::allow()));
    let runner = HookRunner::builder()
        .interceptor("host", host)
        .config(fx.config())
        .build();
    let outcome = runner.pre_tool_use(&Request::pre("shell", json!({}))).await;

    assert_eq!(
        ran(&outcome),
        ["host", "ok", "broken"],
        "a hook that did not apply has no record"
    );
    let host = record(&outcome, "host");
    assert_eq!(
        (host.binding, host.source, host.step),
        (BindingKind::InProcess, Source::Host, Step::Allow)
    );
    let ok = record(&outcome, "ok");
    assert_eq!(
        (ok.binding, ok.source, ok.step),
        (BindingKind::Subprocess, Source::Workspace, Step::Allow)
    );
    assert!(ok.duration.as_nanos() > 0);
    assert_eq!(ok.diagnostics.as_deref(), Some("to the operator\n"));
    let broken = record(&outcome, "broken");
    assert_eq!(broken.step, Step::Failed);
    assert!(broken.warning.is_some());
    let json = serde_json::to_value(&outcome.runs).unwrap();
    for key in [
        "name",
        "binding",
        "source",
        "event",
        "verdict",
        "duration_us",
    ] {
        assert!(json[1].get(key).is_some(), "record lacks {key}: {json}");
    }
}

#[tokio::test]
async fn hooks_apply_to_tools_named_or_matched_whole() {
    let fx = Fixture::new();
    let allow = fx.script("allow.sh", &answer_script(&json!({"decision": "allow"})));
    fx.workspace_hooks(json!([
        {"name": "named", "command": [&allow], "tools": ["shell"]},
        {"name": "matched", "command": [&allow], "matcher": "Edit|Write"},
        {"name": "either", "command": [&allow], "tools": ["shell"], "matcher": "Web.*"},
        {"name": "all", "command": [&allow]}
    ]));
    let runner = fx.runner();
    let ran_for = |tool: &'static str| {
        let runner = runner.clone();
        async move {
            runner
                .pre_tool_use(&Request::pre(tool, json!({})))
                .await
                .runs
                .into_iter()
                .map(|r| r.name)
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(ran_for("shell").await, ["named", "either", "all"]);
    assert_eq!(ran_for("Edit").await, ["matched", "all"]);
    assert_eq!(
        ran_for("NotebookEdit").await,
        ["all"],
        "the matcher is anchored to the whole name"
    );
    assert_eq!(ran_for("WebFetch").await, ["either", "all"]);
}

#[tokio::test]
async fn hooks_run_only_for_their_events() {
    let fx = Fixture::new();
    let allow = fx.script("allow.sh", &answer_script(&json!({"decision": "allow"})));
    fx.workspace_hooks(json!([
        {"name": "pre-only", "command": [&allow]},
        {"name": "post-only", "command": [&allow], "event": "post_tool_use"},
        {"name": "both", "command": [&allow], "event": ["pre_tool_use", "post_tool_use"]}
    ]));
    let runner = fx.runner();
    let pre = runner.pre_tool_use(&Request::pre("t", json!({}))).await;
    assert_eq!(ran(&pre), ["pre-only", "both"]);
    let post = runner
        .post_tool_use(&Request::post("t", json!({}), ToolResult::ok(1)))
        .await;
    assert_eq!(ran(&post), ["post-only", "both"]);
}

#[tokio::test]
async fn a_failing_hook_denies_by_default_and_says_which_hook_and_why() {
    let fx = Fixture::new();
    let broken = fx.script("broken.sh", "#!/bin/sh\nexit 7\n");
    let marker = fx.marker("after-failure");
    let mark = fx.script("mark.sh", &marker_script(&marker));
    fx.workspace_hooks(
        json!([{"name": "broken", "command": [&broken]}, {"name": "after", "command": [&mark]}]),
    );
    let outcome = fx
        .runner()
        .pre_tool_use(&Request::pre("t", json!({})))
        .await;
    let Decision::Deny { reason } = &outcome.decision else {
        panic!("{:?}", outcome.decision)
    };
    assert!(
        reason.contains("`broken`") && reason.contains("exited_non_zero"),
        "{reason}"
    );
    assert!(
        !marker.exists(),
        "a failure that denies short-circuits like a deny"
    );
    let failure = record(&outcome, "broken").failure.clone().unwrap();
    assert_eq!(failure.on_failure, toolgate::OnFailure::Deny);
    assert!(
        failure.message.contains("exit code 7"),
        "{}",
        failure.message
    );
}

/// `ask` does not end the chain: a person's yes must not skip a guard, so
/// every later participant still judges the call, and a later deny wins.
#[tokio::test]
async fn an_ask_is_judged_by_every_later_participant_and_a_later_deny_wins() {
    let fx = Fixture::new();
    let ask = fx.global_script(
        "ask.sh",
        &answer_script(&json!({"decision": "ask", "reason": "force pushes need a person"})),
    );
    let deny = fx.script(
        "deny.sh",
        &answer_script(&json!({"decision": "deny", "reason": "not in this repository"})),
    );
    fx.global_hooks(json!([{"name": "asker", "command": [&ask]}]));
    fx.workspace_hooks(json!([{"name": "denier", "command": [&deny]}]));
    let outcome = fx
        .runner()
        .pre_tool_use(&Request::pre("shell", json!({"command": "git push -f"})))
        .await;
    assert_eq!(ran(&outcome), ["asker", "denier"]);
    assert_eq!(
        outcome.decision,
        Decision::Deny {
            reason: "not in this repository".into()
        }
    );
    assert_eq!(record(&outcome, "asker").step, Step::Ask);

    // With everyone else allowing, the call waits for a person, for the
    // asker's reason; nobody may let it through on their own.
    fx.workspace_hooks(json!([]));
    let outcome = fx
        .runner()
        .pre_tool_use(&Request::pre("shell", json!({"command": "git push -f"})))
        .await;
    assert_eq!(
        outcome.decision,
        Decision::Ask {
            reason: "force pushes need a person".into(),
            input: None
        }
    );
    assert_eq!(outcome.decided_by.as_deref(), Some("asker"));
    assert!(!outcome.may_proceed());
    assert!(outcome.blocked_by_failure().is_none());
    let rec = record(&outcome, "asker");
    assert_eq!(rec.reason.as_deref(), Some("force pushes need a person"));
}

/// A rewrite after an `ask` starts a new round: the asker is asked again
/// about the rewritten call, and the person is asked about what would run.
#[tokio::test]
async fn an_ask_is_asked_again_after_a_rewrite_and_carries_the_input_that_would_run() {
    let (asker, _) = scripted(|req| {
        Ok(match req.input["command"].as_str() {
            Some(c) if c.contains("push") => Verdict::ask(format!("a person confirms `{c}`")),
            _ => Verdict::allow(),
        })
    });
    let (rewriter, _) = scripted(|_| Ok(Verdict::modify(json!({"command": "git push"}))));
    let runner = HookRunner::builder()
        .interceptor("asker", asker)
        .interceptor("rewriter", rewriter)
        .build();
    let outcome = runner
        .pre_tool_use(&Request::pre("shell", json!({"command": "git push -f"})))
        .await;
    assert_eq!(
        outcome.decision,
        Decision::Ask {
            reason: "a person confirms `git push`".into(),
            input: Some(json!({"command": "git push"}))
        }
    );
    let rounds: Vec<(&str, u32, Step)> = outcome
        .runs
        .iter()
        .map(|r| (r.name.as_str(), r.round, r.step))
        .collect();
    assert_eq!(
        rounds,
        [
            ("asker", 1, Step::Ask),
            ("rewriter", 1, Step::Modify),
            ("asker", 2, Step::Ask)
        ]
    );

    // A rewrite the asker no longer minds: no person is needed.
    let (calm, _) = scripted(|_| Ok(Verdict::modify(json!({"command": "git status"}))));
    let (asker, _) = scripted(|req| {
        Ok(match req.input["command"].as_str() {
            Some(c) if c.contains("push") => Verdict::ask("push"),
            _ => Verdict::allow(),
        })
    });
    let runner = HookRunner::builder()
        .interceptor("asker", asker)
        .interceptor("calm", calm)
        .build();
    let outcome = runner
        .pre_tool_use(&Request::pre("shell", json!({"command": "git push"})))
        .await;
    assert_eq!(
        outcome.decision,
        Decision::Modify {
            input: json!({"command": "git status"})
        }
    );
}

/// After the call there is nothing left to confirm: `ask` is a failure, and
/// the failure policy applies (deny by default: the output is withheld).
#[tokio::test]
async fn ask_after_the_call_is_a_failure_and_fails_closed() {
    let fx = Fixture::new();
    let ask = fx.script(
        "ask.sh",
        &answer_script(&json!({"decision": "ask", "reason": "show this?"})),
    );
    fx.workspace_hooks(json!([
        {"name": "late", "command": [&ask], "event": "post_tool_use"},
    ]));
    let outcome = fx
        .runner()
        .post_tool_use(&Request::post("shell", json!({}), ToolResult::ok("secret")))
        .await;
    assert!(!outcome.may_proceed());
    assert_eq!(
        failure_kind(&outcome, "late"),
        toolgate::FailureKind::NotADecision
    );
    let shown = outcome.shown.as_ref().unwrap();
    assert!(shown.is_error && !shown.output.to_string().contains("secret"));
}

/// The library's `call` has no person to ask: the tool does not run, and
/// what the model is shown says a confirmation was needed.
#[tokio::test]
async fn the_librarys_call_never_runs_a_tool_a_person_was_not_asked_about() {
    let (asker, _) = scripted(|_| Ok(Verdict::ask("deleting needs a person")));
    let runner = HookRunner::builder().interceptor("asker", asker).build();
    let ran = Arc::new(AtomicUsize::new(0));
    let counted = ran.clone();
    let call = runner
        .call(
            Request::pre("shell", json!({"command": "rm -r x"})),
            |_| async move {
                counted.fetch_add(1, Ordering::SeqCst);
                ToolResult::ok("deleted")
            },
        )
        .await;
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    assert!(!call.tool_ran && call.shown.is_error);
    let text = call.shown.output.as_str().unwrap();
    assert!(
        text.contains("confirmation") && text.contains("deleting needs a person"),
        "{text}"
    );

    // An interceptor cannot ask about an input of its own making.
    let (sly, _) = scripted(|_| {
        Ok(Decision::Ask {
            reason: "r".into(),
            input: Some(json!({"command": "other"})),
        }
        .into())
    });
    let runner = HookRunner::builder().interceptor("sly", sly).build();
    let outcome = runner.pre_tool_use(&Request::pre("shell", json!({}))).await;
    assert_eq!(
        failure_kind(&outcome, "sly"),
        toolgate::FailureKind::NotADecision
    );
    assert!(!outcome.may_proceed());
}
