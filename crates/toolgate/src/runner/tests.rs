//! The chain's rules against an in-process mock participant (as
//! tower-test's mock service): each answers from a script and records what
//! it was asked, and may be given any source, so order, threading,
//! re-judgement, policy and context are pinned without spawning a process.
//! The integration tests in `tests/all/chain.rs` pin the same rules through
//! real bindings where the binding is part of what is tested.

use super::*;
use crate::binding::{Decider, Reply};
use crate::contract::ToolFilter;
use crate::contract::{HookRequest, Verdict};
use crate::failure::FailureKind;
use crate::failure::{HookFailure, OnFailure};
use serde_json::json;
use std::sync::Mutex;

type Script = Box<dyn Fn(&HookRequest<'_>) -> Result<Verdict, HookFailure> + Send + Sync>;

/// A participant that answers from a script and logs (name, round input).
struct Mock {
    name: &'static str,
    log: Arc<Mutex<Vec<(&'static str, Value)>>>,
    script: Script,
    delay: Option<Duration>,
}

#[async_trait::async_trait]
impl Decider for Mock {
    async fn decide(&self, request: &HookRequest<'_>) -> Reply {
        let subject = match request.result {
            Some(result) => result.output.clone(),
            None => request.input.clone(),
        };
        self.log.lock().unwrap().push((self.name, subject));
        if let Some(delay) = self.delay {
            tokio::time::sleep(delay).await;
        }
        Reply::from((self.script)(request))
    }
}

struct Chain {
    builder: HookRunnerBuilder,
    log: Arc<Mutex<Vec<(&'static str, Value)>>>,
}

impl Chain {
    fn new() -> Self {
        Chain {
            builder: HookRunner::builder(),
            log: Arc::default(),
        }
    }

    fn mock(
        self,
        name: &'static str,
        source: Source,
        on_failure: OnFailure,
        script: impl Fn(&HookRequest<'_>) -> Result<Verdict, HookFailure> + Send + Sync + 'static,
    ) -> Self {
        self.mock_slow(name, source, on_failure, None, script)
    }

    fn mock_slow(
        mut self,
        name: &'static str,
        source: Source,
        on_failure: OnFailure,
        delay: Option<Duration>,
        script: impl Fn(&HookRequest<'_>) -> Result<Verdict, HookFailure> + Send + Sync + 'static,
    ) -> Self {
        self.builder.participants.push(Participant {
            name: name.into(),
            binding: BindingKind::InProcess,
            source,
            events: Event::ALL.to_vec(),
            filter: ToolFilter::default(),
            on_failure,
            shadow: false,
            config: None,
            scope: format!("{source}:{name}"),
            decider: Arc::new(Mock {
                name,
                log: self.log.clone(),
                script: Box::new(script),
                delay,
            }),
        });
        self
    }
}

fn allow(_: &HookRequest<'_>) -> Result<Verdict, HookFailure> {
    Ok(Verdict::allow())
}

fn pre(command: &str) -> Request {
    Request::pre("shell", json!({"command": command}))
}

#[tokio::test]
async fn order_is_by_source_whatever_the_registration_order() {
    let chain = Chain::new()
        .mock("w", Source::Workspace, OnFailure::Deny, allow)
        .mock("g", Source::Global, OnFailure::Deny, allow)
        .mock("h", Source::Host, OnFailure::Deny, allow)
        .mock("m", Source::Managed, OnFailure::Deny, allow)
        .mock("g2", Source::Global, OnFailure::Deny, allow);
    let log = chain.log.clone();
    let outcome = chain.builder.build().pre_tool_use(&pre("ls")).await;
    assert_eq!(outcome.decision, Decision::Allow);
    let names: Vec<_> = log.lock().unwrap().iter().map(|(n, _)| *n).collect();
    assert_eq!(names, ["h", "m", "g", "g2", "w"]);
}

#[tokio::test]
async fn a_deny_ends_the_chain_and_names_who_decided() {
    let chain = Chain::new()
        .mock("g", Source::Global, OnFailure::Deny, |_| {
            Ok(Verdict::deny("no"))
        })
        .mock("w", Source::Workspace, OnFailure::Deny, allow);
    let log = chain.log.clone();
    let outcome = chain.builder.build().pre_tool_use(&pre("ls")).await;
    assert_eq!(
        outcome.decision,
        Decision::Deny {
            reason: "no".into()
        }
    );
    assert_eq!(outcome.decided_by.as_deref(), Some("g"));
    assert_eq!(log.lock().unwrap().len(), 1, "the workspace hook never ran");
}

#[tokio::test]
async fn a_rewrite_threads_on_and_is_judged_again_by_those_before_it() {
    let chain = Chain::new()
        .mock("g", Source::Global, OnFailure::Deny, allow)
        .mock("w", Source::Workspace, OnFailure::Deny, |req| {
            Ok(if req.input["command"] == "ls" {
                Verdict::modify(json!({"command": "ls -la"}))
            } else {
                Verdict::allow()
            })
        })
        .mock("w2", Source::Workspace, OnFailure::Deny, allow);
    let chain_log = chain.log.clone();
    let outcome = chain.builder.build().pre_tool_use(&pre("ls")).await;
    assert_eq!(
        outcome.decision,
        Decision::Modify {
            input: json!({"command": "ls -la"})
        }
    );
    assert_eq!(outcome.decided_by.as_deref(), Some("w"));
    let asked = chain_log.lock().unwrap().clone();
    assert_eq!(
        asked,
        [
            ("g", json!({"command": "ls"})),
            ("w", json!({"command": "ls"})),
            // Round 2: the guard before the rewriter sees the rewrite; the
            // rewriter is not asked about its own; the one after sees it.
            ("g", json!({"command": "ls -la"})),
            ("w2", json!({"command": "ls -la"})),
        ]
    );
    let rounds: Vec<u32> = outcome.runs.iter().map(|r| r.round).collect();
    assert_eq!(rounds, [1, 1, 2, 2]);
}

#[tokio::test]
async fn a_rewrite_the_earlier_guard_refuses_is_denied() {
    let chain = Chain::new()
        .mock("g", Source::Global, OnFailure::Deny, |req| {
            Ok(if req.input["command"] == "ls" {
                Verdict::allow()
            } else {
                Verdict::deny("only ls")
            })
        })
        .mock("w", Source::Workspace, OnFailure::Deny, |_| {
            Ok(Verdict::modify(json!({"command": "git push --force"})))
        });
    let outcome = chain.builder.build().pre_tool_use(&pre("ls")).await;
    assert_eq!(
        outcome.decision,
        Decision::Deny {
            reason: "only ls".into()
        }
    );
    assert_eq!(outcome.decided_by.as_deref(), Some("g"));
}

#[tokio::test]
async fn rewriters_that_never_agree_are_denied_after_the_bound() {
    let chain = Chain::new()
        .mock("a", Source::Global, OnFailure::Deny, |req| {
            let n = req.input["n"].as_u64().unwrap_or(0);
            Ok(Verdict::modify(json!({"n": n + 1})))
        })
        .mock("b", Source::Workspace, OnFailure::Deny, |req| {
            let n = req.input["n"].as_u64().unwrap_or(0);
            Ok(Verdict::modify(json!({"n": n + 1})))
        });
    let outcome = chain
        .builder
        .build()
        .pre_tool_use(&Request::pre("t", json!({})))
        .await;
    let Decision::Deny { reason } = &outcome.decision else {
        panic!("{:?}", outcome.decision)
    };
    assert!(
        reason.contains(&format!("more than {MAX_REWRITES} times")),
        "{reason}"
    );
}

#[tokio::test]
async fn a_post_replace_threads_on_and_the_record_keeps_the_real_output() {
    let append = |suffix: &'static str| {
        move |req: &HookRequest<'_>| {
            let out = req.result.unwrap().output.as_str().unwrap().to_owned();
            Ok(if out.contains(suffix) {
                Verdict::allow()
            } else {
                Verdict::replace(ToolResult::ok(out + suffix))
            })
        }
    };
    let chain = Chain::new()
        .mock("g", Source::Global, OnFailure::Deny, append("-g"))
        .mock("w", Source::Workspace, OnFailure::Deny, append("-w"));
    let names = chain.log.clone();
    let outcome = chain
        .builder
        .build()
        .post_tool_use(&Request::post("t", json!({}), ToolResult::ok("out")))
        .await;
    let shown = ToolResult::ok("out-g-w");
    assert_eq!(
        outcome.decision,
        Decision::Replace {
            result: shown.clone()
        }
    );
    assert_eq!(outcome.shown, Some(shown));
    assert_eq!(outcome.tool_result, Some(ToolResult::ok("out")));
    assert_eq!(outcome.decided_by.as_deref(), Some("w"));
    assert_eq!(
        names.lock().unwrap().len(),
        3,
        "g, w, then g again on w's replacement"
    );
}

#[tokio::test]
async fn a_post_modify_is_a_failure_and_the_policy_applies() {
    let chain = Chain::new().mock("m", Source::Global, OnFailure::Deny, |_| {
        Ok(Verdict::modify(json!({})))
    });
    let outcome = chain
        .builder
        .build()
        .post_tool_use(&Request::post("t", json!({}), ToolResult::ok("secret")))
        .await;
    assert!(!outcome.may_proceed());
    assert_eq!(outcome.runs[0].step, Step::Failed);
    assert_eq!(
        outcome.runs[0].failure.as_ref().unwrap().kind,
        FailureKind::UnusableRewrite
    );
    assert!(
        outcome.shown.unwrap().is_error,
        "a failure is shown, not the output"
    );
}

#[tokio::test]
async fn a_failure_denies_unless_the_participant_fails_open() {
    let broken = |_: &HookRequest<'_>| {
        Err(HookFailure::ExitedNonZero {
            status: "exit code 7".into(),
        })
    };
    let closed = Chain::new()
        .mock("b", Source::Global, OnFailure::Deny, broken)
        .mock("w", Source::Workspace, OnFailure::Deny, allow);
    let outcome = closed.builder.build().pre_tool_use(&pre("ls")).await;
    let Decision::Deny { reason } = &outcome.decision else {
        panic!()
    };
    assert!(
        reason.contains("hook `b` could not decide (exited_non_zero)"),
        "{reason}"
    );

    let open = Chain::new()
        .mock("b", Source::Global, OnFailure::Allow, broken)
        .mock("w", Source::Workspace, OnFailure::Deny, allow);
    let names = open.log.clone();
    let outcome = open.builder.build().pre_tool_use(&pre("ls")).await;
    assert_eq!(outcome.decision, Decision::Allow);
    assert!(
        outcome.runs[0]
            .warning
            .as_ref()
            .unwrap()
            .contains("failed open")
    );
    assert_eq!(names.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn context_is_merged_in_order_and_bounded_visibly() {
    let chain = Chain::new()
        .mock("a", Source::Host, OnFailure::Deny, |_| {
            Ok(Verdict::allow().with_context("é".repeat(60)))
        })
        .mock("b", Source::Global, OnFailure::Deny, |_| {
            Ok(Verdict::allow().with_context("x".repeat(500)))
        });
    let mut builder = chain.builder;
    builder = builder.context_limit(300);
    let outcome = builder.build().pre_tool_use(&pre("ls")).await;
    let context = outcome.context.unwrap();
    assert!(context.len() <= 300, "{} bytes", context.len());
    assert!(
        context.starts_with(&"é".repeat(60)),
        "the earlier context is whole"
    );
    assert!(context.contains("advisory context truncated"), "{context}");
    assert!(
        outcome.runs[1]
            .warning
            .as_ref()
            .unwrap()
            .contains("truncated")
    );
    assert!(outcome.runs[0].warning.is_none());
}

#[tokio::test]
async fn the_chain_deadline_denies_whatever_the_policy_and_names_the_hook() {
    let chain = Chain::new()
        .mock("quick", Source::Global, OnFailure::Deny, allow)
        .mock_slow(
            "slow",
            Source::Workspace,
            OnFailure::Allow,
            Some(Duration::from_secs(5)),
            allow,
        );
    let runner = chain
        .builder
        .chain_timeout(Duration::from_millis(50))
        .build();
    let outcome = runner.pre_tool_use(&pre("ls")).await;
    let Decision::Deny { reason } = &outcome.decision else {
        panic!("{:?}", outcome.decision)
    };
    assert!(reason.contains("while hook `slow` was running"), "{reason}");
    assert_eq!(
        outcome.runs[1].failure.as_ref().unwrap().kind,
        FailureKind::ChainDeadline
    );
}

#[tokio::test]
async fn participants_apply_only_to_their_events_and_tools() {
    let mut chain = Chain::new().mock("pre-only", Source::Global, OnFailure::Deny, |_| {
        Ok(Verdict::deny("pre"))
    });
    chain.builder.participants[0].events = vec![Event::PreToolUse];
    chain.builder.participants[0].filter = ToolFilter {
        tools: Some(vec!["Bash".into()]),
        matcher: None,
    };
    let runner = chain.builder.build();
    assert!(
        !runner
            .pre_tool_use(&Request::pre("Bash", json!({})))
            .await
            .may_proceed()
    );
    assert!(
        runner
            .pre_tool_use(&Request::pre("Read", json!({})))
            .await
            .may_proceed()
    );
    let post = Request::post("Bash", json!({}), ToolResult::ok("x"));
    assert!(runner.post_tool_use(&post).await.may_proceed());
    assert_eq!(chain.log.lock().unwrap().len(), 1);
}

fn listed(description: &str) -> Request {
    let mut request = Request::pre(
        "mcp__fs__read_file",
        json!({"name": "read_file", "description": description}),
    );
    request.event = Event::ListTools;
    request
}

#[tokio::test]
async fn a_list_rewrite_is_judged_again_and_a_list_deny_names_who_hid_the_tool() {
    let chain = Chain::new()
        .mock("g", Source::Global, OnFailure::Deny, |req| {
            assert_eq!(req.event, Event::ListTools);
            Ok(if req.input["description"] == "poisoned" {
                Verdict::deny("a poisoned description")
            } else {
                Verdict::allow()
            })
        })
        .mock("w", Source::Workspace, OnFailure::Deny, |req| {
            Ok(Verdict::modify(json!({
                "name": req.input["name"],
                "description": format!("{} (checked)", req.input["description"].as_str().unwrap()),
            })))
        });
    let log = chain.log.clone();
    let runner = chain.builder.build();
    let outcome = runner.list_tools(&listed("Reads a file")).await;
    assert_eq!(outcome.event, Event::ListTools);
    assert_eq!(
        outcome.decision,
        Decision::Modify {
            input: json!({"name": "read_file", "description": "Reads a file (checked)"})
        }
    );
    // The guard before the rewriter saw the rewrite too.
    assert_eq!(log.lock().unwrap().len(), 3);
    let hidden = runner.list_tools(&listed("poisoned")).await;
    assert_eq!(
        hidden.decision,
        Decision::Deny {
            reason: "a poisoned description".into()
        }
    );
    assert_eq!(hidden.decided_by.as_deref(), Some("g"));
    // `evaluate` answers a list the same way.
    assert_eq!(
        runner.evaluate(&listed("poisoned")).await.decision,
        hidden.decision
    );
}

#[tokio::test]
async fn a_list_replace_or_ask_is_a_failure_and_the_policy_applies() {
    for answer in [
        Verdict::replace(ToolResult::ok("x")),
        Verdict::ask("a person, please"),
    ] {
        let closed = answer.clone();
        let runner = Chain::new()
            .mock("g", Source::Global, OnFailure::Deny, move |_| {
                Ok(closed.clone())
            })
            .builder
            .build();
        let outcome = runner.list_tools(&listed("Reads a file")).await;
        assert!(
            matches!(outcome.decision, Decision::Deny { .. }),
            "{outcome:?}"
        );
        let failure = outcome.runs[0].failure.as_ref().unwrap();
        assert_eq!(failure.kind, FailureKind::NotADecision);
        let open = Chain::new()
            .mock("g", Source::Global, OnFailure::Allow, move |_| {
                Ok(answer.clone())
            })
            .builder
            .build();
        assert_eq!(
            open.list_tools(&listed("Reads a file")).await.decision,
            Decision::Allow
        );
    }
}

#[tokio::test]
async fn a_participant_not_registered_for_lists_is_not_asked_about_one() {
    let mut chain = Chain::new().mock("calls", Source::Global, OnFailure::Deny, |_| {
        Ok(Verdict::deny("no"))
    });
    chain.builder.participants[0].events = vec![Event::PreToolUse, Event::PostToolUse];
    let log = chain.log.clone();
    let runner = chain.builder.build();
    assert_eq!(
        runner.list_tools(&listed("Reads a file")).await.decision,
        Decision::Allow
    );
    assert!(log.lock().unwrap().is_empty());
}

/// A participant that counts its calls in its session state, and answers
/// or fails as told; it reports the count it saw.
struct Keeper {
    fails: bool,
    seen: Arc<Mutex<Vec<Option<String>>>>,
}

#[async_trait::async_trait]
impl Decider for Keeper {
    async fn decide(&self, request: &HookRequest<'_>) -> Reply {
        let count = match request.state {
            crate::session::Kept::State(state) => state.get("count").cloned(),
            crate::session::Kept::NoSession | crate::session::Kept::Unavailable(_) => None,
        };
        self.seen.lock().unwrap().push(count.clone());
        let next = count.map_or(1, |c| c.parse::<u32>().unwrap() + 1);
        let mut reply = Reply::from(if self.fails {
            Err(HookFailure::EmptyOutput)
        } else {
            Ok(Verdict::allow())
        });
        reply.state.insert("count".into(), Some(next.to_string()));
        reply
    }
}

fn keeper(fails: bool) -> (HookRunner, Arc<Mutex<Vec<Option<String>>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut builder = HookRunner::builder();
    builder.participants.push(Participant {
        name: "keeper".into(),
        binding: BindingKind::InProcess,
        source: Source::Global,
        events: Event::ALL.to_vec(),
        filter: ToolFilter::default(),
        on_failure: OnFailure::Allow,
        shadow: false,
        config: None,
        scope: "global:keeper".into(),
        decider: Arc::new(Keeper {
            fails,
            seen: seen.clone(),
        }),
    });
    (builder.build(), seen)
}

fn in_session(session: &str) -> Request {
    let mut request = pre("ls");
    request.session_id = Some(session.into());
    request
}

#[tokio::test]
async fn a_hooks_writes_are_kept_for_its_next_call_in_that_session_only() {
    let (runner, seen) = keeper(false);
    for session in ["s1", "s1", "s2", "s1"] {
        let outcome = runner.pre_tool_use(&in_session(session)).await;
        assert_eq!(outcome.decision, Decision::Allow);
    }
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        [None, Some("1".into()), None, Some("2".into())],
        "s2 starts from nothing; s1 goes on"
    );
}

#[tokio::test]
async fn a_hook_that_failed_keeps_nothing_and_a_sessionless_write_is_a_failure() {
    let (runner, seen) = keeper(true);
    for _ in 0..2 {
        runner.pre_tool_use(&in_session("s")).await;
    }
    assert_eq!(seen.lock().unwrap().clone(), [None, None]);

    let (runner, _) = keeper(false);
    let outcome = runner.pre_tool_use(&pre("ls")).await;
    let failure = outcome.runs[0].failure.as_ref().expect("a failure");
    assert_eq!(failure.kind, FailureKind::StateNotKept);
    assert!(
        failure.message.contains("no agent session id"),
        "{}",
        failure.message
    );
}
