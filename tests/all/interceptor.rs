//! The in-process binding: defaults, errors and panics as failures.

use crate::support::*;
use serde_json::json;
use toolgate::{
    BoxError, Decision, FailureKind, HookRequest, HookRunner, Interceptor, Request, Step,
    ToolResult, Verdict,
};

struct Silent;
impl Interceptor for Silent {}

#[tokio::test]
async fn interceptor_methods_default_to_allow() {
    let runner = HookRunner::builder().interceptor("silent", Silent).build();
    let pre = runner.pre_tool_use(&Request::pre("t", json!({}))).await;
    assert_eq!(pre.decision, Decision::Allow);
    let post = runner
        .post_tool_use(&Request::post("t", json!({}), ToolResult::ok(1)))
        .await;
    assert_eq!(post.decision, Decision::Allow);
    assert_eq!(post.shown, Some(ToolResult::ok(1)));
}

#[tokio::test]
async fn interceptor_error_is_a_failure_that_denies_by_default() {
    let (failing, _) = scripted(|_| Err::<Verdict, BoxError>("vault unreachable".into()));
    let runner = HookRunner::builder().interceptor("vault", failing).build();
    let outcome = runner.pre_tool_use(&Request::pre("t", json!({}))).await;
    assert!(!outcome.may_proceed());
    let failure = record(&outcome, "vault").failure.clone().unwrap();
    assert_eq!(failure.kind, FailureKind::InterceptorError);
    assert!(failure.message.contains("vault unreachable"));
}

struct Panicky;
#[async_trait::async_trait]
impl Interceptor for Panicky {
    async fn pre_tool_use(&self, request: &HookRequest<'_>) -> Result<Verdict, BoxError> {
        if request.input["boom"] == json!(true) {
            panic!("interceptor bug: {}", request.tool);
        }
        Ok(Verdict::allow())
    }
}

#[tokio::test]
async fn interceptor_panic_is_a_failure_and_the_runner_keeps_working() {
    let runner = HookRunner::builder()
        .interceptor("panicky", Panicky)
        .build();
    let outcome = runner
        .pre_tool_use(&Request::pre("shell", json!({"boom": true})))
        .await;
    assert!(!outcome.may_proceed());
    let failure = record(&outcome, "panicky").failure.clone().unwrap();
    assert_eq!(failure.kind, FailureKind::InterceptorPanic);
    assert!(
        failure.message.contains("interceptor bug: shell"),
        "{}",
        failure.message
    );

    // Same runner, next call: nothing is poisoned.
    let outcome = runner
        .pre_tool_use(&Request::pre("shell", json!({"boom": false})))
        .await;
    assert_eq!(outcome.decision, Decision::Allow);
    assert_eq!(record(&outcome, "panicky").step, Step::Allow);
}

#[tokio::test]
async fn fail_open_interceptor_is_skipped_with_a_warning() {
    let (failing, _) = scripted(|_| Err::<Verdict, BoxError>("metrics down".into()));
    let (next, seen) = scripted(|_| Ok(Verdict::allow()));
    let runner = HookRunner::builder()
        .fail_open_interceptor("metrics", failing)
        .fail_open_interceptor("panicky", Panicky)
        .interceptor("next", next)
        .build();
    let outcome = runner
        .pre_tool_use(&Request::pre("t", json!({"boom": true})))
        .await;
    assert_eq!(outcome.decision, Decision::Allow);
    assert_eq!(
        seen.lock().unwrap().len(),
        1,
        "the chain went on to the next interceptor"
    );
    for name in ["metrics", "panicky"] {
        let rec = record(&outcome, name);
        assert_eq!(rec.step, Step::Failed);
        assert!(rec.warning.as_ref().unwrap().contains("failed open"));
    }
}

#[tokio::test]
async fn interceptor_sees_the_request_ids_and_its_own_name() {
    let (spy, seen) = scripted(|_| Ok(Verdict::allow()));
    let runner = HookRunner::builder().interceptor("spy", spy).build();
    let mut request = Request::pre("shell", json!({"command": "ls"}));
    request.session_id = Some("s1".into());
    request.turn_id = Some("t1".into());
    request.tool_call_id = Some("c1".into());
    request.cwd = Some("/repo".into());
    runner.pre_tool_use(&request).await;
    let seen = seen.lock().unwrap()[0].clone();
    assert_eq!(
        seen,
        json!({"schema": 1, "event": "pre_tool_use", "hook": "spy", "tool": "shell",
               "input": {"command": "ls"}, "session_id": "s1", "turn_id": "t1",
               "tool_call_id": "c1", "cwd": "/repo"})
    );
}
