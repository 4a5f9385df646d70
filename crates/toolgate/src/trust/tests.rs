//! The trust layer against a binding it has never seen: a throwaway
//! webhook binding, written here and nowhere else, that says (as every
//! binding must, `Binding::workspace_trust`) that a repository's hook
//! of its kind needs trust. Nothing in the trust layer names it, and its
//! hook is still refused until the user trusts exactly what it pins.

use super::*;
use crate::binding::{Answer, Binding, BindingKind, Decider, Reply, WorkspaceTrust};
use crate::contract::{Decision, Event, HookRequest, Verdict};
use crate::failure::HookFailure;
use crate::safe_fs::FileIdentity;
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// "POSTs every tool input to a URL the repository chose" (the issue's
/// example): here it only counts how often it was asked.
struct Webhook {
    url: String,
    /// A file it sends along (a body template, say).
    template: PathBuf,
    asked: Arc<AtomicUsize>,
}

struct Counting(Arc<AtomicUsize>);

#[async_trait::async_trait]
impl Decider for Counting {
    async fn decide(&self, _: &HookRequest<'_>) -> Reply {
        self.0.fetch_add(1, Ordering::SeqCst);
        Reply::from(Ok(Verdict::allow()))
    }
}

impl Binding for Webhook {
    fn kind(&self) -> BindingKind {
        BindingKind::Subprocess
    }
    fn runs(&self) -> String {
        format!("POST {}", self.url)
    }
    fn limits(&self) -> Option<String> {
        None
    }
    fn warning(&self) -> Option<&str> {
        None
    }
    fn decider(&self, _: u64) -> Arc<dyn Decider> {
        Arc::new(Counting(self.asked.clone()))
    }
    fn workspace_trust(&self) -> WorkspaceTrust<'_> {
        WorkspaceTrust::Exact {
            target: self.url.clone(),
            files: vec![self.template.clone()],
        }
    }
    fn watched(&self) -> Vec<(PathBuf, Option<FileIdentity>)> {
        Vec::new()
    }
}

struct Case {
    _dir: tempfile::TempDir,
    root: PathBuf,
    ctx: TrustCtx,
    hook: Webhook,
}

fn case() -> Case {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws").canonicalize().unwrap_or_else(|_| {
        std::fs::create_dir(dir.path().join("ws")).unwrap();
        dir.path().join("ws").canonicalize().unwrap()
    });
    let store = dir.path().join("trust");
    std::fs::create_dir(&store).unwrap();
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::write(root.join("body.json"), "{}").unwrap();
    Case {
        hook: Webhook {
            url: "https://collector.example/hook".into(),
            template: root.join("body.json"),
            asked: Arc::new(AtomicUsize::new(0)),
        },
        root,
        ctx: TrustCtx {
            store: Some(TrustStore::new(store)),
            ..TrustCtx::default()
        },
        _dir: dir,
    }
}

impl Case {
    fn admission(&self) -> Admission<'_> {
        Admission::new(
            "blake3:config",
            &self.root,
            &self.ctx,
            UntrustedPolicy::Deny,
            Confinement {
                required: false,
                unconfined: Vec::new(),
                reads: Vec::new(),
                env: Vec::new(),
            },
        )
    }

    /// One call through the hook's gated decider.
    async fn call(&self) -> (TrustState, Answer) {
        let judged = self.admission().judge("webhook", &self.hook);
        let decider = match judged.gate {
            Some(gate) => guard(gate, self.hook.decider(1000)),
            None => self.hook.decider(1000),
        };
        (judged.state, ask(decider.as_ref()).await)
    }

    fn trust(&self) {
        let (pin, needs_trust) = pin_of("webhook", &self.hook, &self.root, None).unwrap();
        assert!(needs_trust);
        let manifest = Manifest {
            workspace: self.root.clone(),
            config: "blake3:config".into(),
            hooks: vec![pin],
        };
        self.ctx
            .store
            .as_ref()
            .unwrap()
            .write(&manifest, &Default::default())
            .unwrap();
    }
}

/// One call, as the chain makes it.
async fn ask(decider: &dyn Decider) -> Answer {
    let input = json!({"command": "ls"});
    let request = HookRequest {
        event: Event::PreToolUse,
        hook: "webhook",
        tool: "Bash",
        input: &input,
        result: None,
        session_id: None,
        turn_id: None,
        tool_call_id: None,
        cwd: None,
        config: None,
        state: Default::default(),
    };
    decider.decide(&request).await.answer
}

/// Refused as a failure that always denies (never a verdict of the hook's).
fn denied(answer: &Answer) -> bool {
    matches!(answer, Answer::Failed(HookFailure::NotTrusted { reason })
        if reason.contains("is not trusted"))
}

#[tokio::test]
async fn a_binding_that_declares_it_needs_trust_is_refused_until_trusted() {
    let case = case();
    let (state, answer) = case.call().await;
    assert!(matches!(state, TrustState::Untrusted { .. }), "{state:?}");
    assert!(denied(&answer), "{answer:?}");
    assert_eq!(case.hook.asked.load(Ordering::SeqCst), 0, "it was asked");

    case.trust();
    let (state, answer) = case.call().await;
    assert_eq!(state, TrustState::Trusted);
    assert!(matches!(answer, Answer::Decided(ref v) if v.decision == Decision::Allow));
    assert_eq!(case.hook.asked.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn what_it_pins_is_checked_again_before_each_call() {
    let case = case();
    case.trust();
    let judged = case.admission().judge("webhook", &case.hook);
    assert_eq!(judged.state, TrustState::Trusted);
    let decider = guard(judged.gate.unwrap(), case.hook.decider(1000));
    // The file it pins changes after the load: the next call is refused.
    std::fs::write(case.root.join("body.json"), r#"{"exfiltrate": true}"#).unwrap();
    let answer = ask(decider.as_ref()).await;
    assert!(denied(&answer), "{answer:?}");
    assert_eq!(case.hook.asked.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_changed_target_is_a_different_hook() {
    let mut case = case();
    case.trust();
    case.hook.url = "https://elsewhere.example/hook".into();
    let (state, answer) = case.call().await;
    assert!(
        matches!(&state, TrustState::Untrusted { reason, .. } if reason.contains("command changed")),
        "{state:?}"
    );
    assert!(denied(&answer));
}

#[tokio::test]
async fn under_skip_an_untrusted_hook_is_not_run_and_the_reply_says_why() {
    let case = case();
    let admission = Admission::new(
        "blake3:config",
        &case.root,
        &case.ctx,
        UntrustedPolicy::Skip,
        Confinement {
            required: false,
            unconfined: Vec::new(),
            reads: Vec::new(),
            env: Vec::new(),
        },
    );
    let judged = admission.judge("webhook", &case.hook);
    let decider = guard(judged.gate.unwrap(), case.hook.decider(1000));
    match ask(decider.as_ref()).await {
        Answer::NotRun { reason } => assert!(reason.contains("not trusted"), "{reason}"),
        other => panic!("expected a skip, got {other:?}"),
    }
    assert_eq!(case.hook.asked.load(Ordering::SeqCst), 0);
}
