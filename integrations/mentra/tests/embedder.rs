//! What an embedder takes on by registering toolgate in mentra: the
//! dependency tree it builds, and the memory a long-lived runtime's hooks
//! hold however many calls its agents make.

use mentra::runtime::{
    HookDecision, PostExecutionContext, PostExecutionHook, PreExecutionContext, PreExecutionHook,
    ResultDecision,
};
use mentra::tool::ToolResultContent;
use serde_json::{Value, json};
use toolgate::{BoxError, HookRequest, HookRunner, Interceptor, Verdict};
use toolgate_mentra::{OUTCOMES_KEPT, PENDING_KEPT, ToolgateHooks};

/// Crates only toolgate's command-line tool and its bench use.
const CLI_ONLY: &[&str] = &[
    "toolgate-cli",
    "toolgate-bench",
    "toolgate-log",
    "toolgate-server",
    "plotters",
    "prometheus-client",
    "clap",
    "anyhow",
    "comfy-table",
    "tracing-subscriber",
    "anstyle",
    "terminal_size",
];

/// `cargo tree -p toolgate-mentra -e normal`, one `(depth, name)` a line.
fn embedder_tree() -> Vec<(usize, String)> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = std::process::Command::new(cargo)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "tree",
            "-p",
            "toolgate-mentra",
            "-e",
            "normal",
            "--prefix",
            "depth",
            "--locked",
            "--offline",
        ])
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo tree failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("cargo tree prints UTF-8")
        .lines()
        .filter_map(|line| {
            let name_at = line.find(|c: char| !c.is_ascii_digit())?;
            let depth = line[..name_at].parse().ok()?;
            let name = line[name_at..].split(' ').next()?.to_owned();
            Some((depth, name))
        })
        .collect()
}

/// Crates only the wasm binding (toolgate's `wasm` feature) brings.
const WASM_ONLY: &[&str] = &[
    "toolgate-wasm",
    "wasmtime",
    "wasmtime-wasi",
    "cranelift-codegen",
    "wit-component",
    "oci-client",
];

#[test]
fn an_embedder_builds_no_crate_of_toolgates_command_line_tool_and_no_wasmtime() {
    let tree = embedder_tree();
    let at = tree
        .iter()
        .position(|(_, name)| name == "toolgate")
        .unwrap_or_else(|| panic!("toolgate is not in the tree: {tree:?}"));
    let depth = tree[at].0;
    // toolgate's own dependencies: the lines under it, one level down.
    let direct: Vec<&str> = tree[at + 1..]
        .iter()
        .take_while(|(d, _)| *d > depth)
        .filter(|(d, _)| *d == depth + 1)
        .map(|(_, name)| name.as_str())
        .collect();
    assert!(
        direct.contains(&"toolgate-seam"),
        "the tree was not read: {direct:?}"
    );
    for crate_name in CLI_ONLY {
        assert!(
            !direct.contains(crate_name),
            "toolgate brings {crate_name} into an embedder's build \
             (toolgate's dependencies: {direct:?})"
        );
    }
    // Nothing else brings the tool's crates either, nor the wasm binding's:
    // the chain with in-process and subprocess hooks builds no wasmtime.
    for crate_name in CLI_ONLY.iter().chain(WASM_ONLY) {
        assert!(
            !tree.iter().any(|(_, name)| name == crate_name),
            "{crate_name} is in an embedder's tree"
        );
    }
}

/// Rewrites `{"command": "ls"}` to `{"command": "ls -la"}` with advisory
/// context, and allows anything else.
struct LongForm;

#[async_trait::async_trait]
impl Interceptor for LongForm {
    async fn pre_tool_use(&self, req: &HookRequest<'_>) -> Result<Verdict, BoxError> {
        Ok(if req.input["command"] == "ls" {
            Verdict::modify(json!({"command": "ls -la"})).with_context("listing in long form")
        } else {
            Verdict::allow()
        })
    }
}

fn hooks() -> std::sync::Arc<ToolgateHooks> {
    ToolgateHooks::new(
        HookRunner::builder()
            .interceptor("long-form", LongForm)
            .build(),
    )
}

fn before(id: &str, input: &Value) -> PreExecutionContext {
    PreExecutionContext {
        agent_id: "agent".into(),
        tool_name: "run".into(),
        tool_call_id: id.into(),
        input_json: input.to_string(),
        working_directory: std::env::temp_dir(),
    }
}

fn after(id: &str, input: &Value, text: &str) -> PostExecutionContext {
    PostExecutionContext {
        agent_id: "agent".into(),
        tool_name: "run".into(),
        tool_call_id: id.into(),
        input_json: input.to_string(),
        working_directory: std::env::temp_dir(),
        content: ToolResultContent::text(text),
        is_error: false,
    }
}

#[tokio::test]
async fn the_outcomes_kept_never_pass_their_cap_and_keep_the_newest() {
    let hooks = hooks();
    let calls = OUTCOMES_KEPT + 100;
    for n in 0..calls {
        let decision = hooks
            .pre_tool_execution(&before(&format!("call-{n}"), &json!({"command": "pwd"})))
            .await
            .expect("the hook answers");
        assert_eq!(decision, HookDecision::Allow);
        assert!(hooks.outcomes().len() <= OUTCOMES_KEPT);
    }
    let kept = hooks.outcomes();
    assert_eq!(kept.len(), OUTCOMES_KEPT);
    assert_eq!(kept[0].0, format!("call-{}", calls - OUTCOMES_KEPT));
    assert_eq!(kept[OUTCOMES_KEPT - 1].0, format!("call-{}", calls - 1));
    // A host that audits every call drains them.
    assert_eq!(hooks.take_outcomes().len(), OUTCOMES_KEPT);
    assert!(hooks.outcomes().is_empty());
}

#[tokio::test]
async fn context_for_calls_mentra_never_answers_is_bounded_and_the_oldest_goes_first() {
    // A run mentra aborts (a limit, a failing hook after toolgate's) answers
    // none of the calls it had started: their context waits for a result
    // that never comes.
    let hooks = hooks();
    let ls = json!({"command": "ls"});
    for n in 0..PENDING_KEPT + 10 {
        hooks
            .pre_tool_execution(&before(&format!("call-{n}"), &ls))
            .await
            .expect("the hook answers");
        assert!(hooks.pending_contexts() <= PENDING_KEPT);
    }
    assert_eq!(hooks.pending_contexts(), PENDING_KEPT);
    let shown = |decision: ResultDecision| match decision {
        ResultDecision::Keep => None,
        ResultDecision::Replace { content, .. } => Some(content.to_display_string()),
    };
    // The oldest was dropped: its result comes back as it was.
    let rewritten = json!({"command": "ls -la"});
    let oldest = hooks
        .post_tool_execution(&after("call-0", &rewritten, "listing"))
        .await
        .expect("the hook answers");
    assert_eq!(shown(oldest), None);
    // The newest still gets its context, once.
    let newest = format!("call-{}", PENDING_KEPT + 9);
    let answer = hooks
        .post_tool_execution(&after(&newest, &rewritten, "listing"))
        .await
        .expect("the hook answers");
    assert_eq!(
        shown(answer).as_deref(),
        Some("listing\n\n[toolgate] listing in long form")
    );
    assert_eq!(hooks.pending_contexts(), PENDING_KEPT - 1);
}

#[tokio::test]
async fn a_call_id_asked_about_again_does_not_inherit_the_context_it_left() {
    let hooks = hooks();
    hooks
        .pre_tool_execution(&before("same", &json!({"command": "ls"})))
        .await
        .expect("the hook answers");
    assert_eq!(hooks.pending_contexts(), 1);
    // The same id again (a provider reusing ids), this time with no context.
    let pwd = json!({"command": "pwd"});
    hooks
        .pre_tool_execution(&before("same", &pwd))
        .await
        .expect("the hook answers");
    assert_eq!(hooks.pending_contexts(), 0);
    let answer = hooks
        .post_tool_execution(&after("same", &pwd, "/tmp"))
        .await
        .expect("the hook answers");
    assert!(matches!(answer, ResultDecision::Keep), "{answer:?}");
}

/// An embedder's own observer: what it was told, as (event, tool, decision).
#[derive(Default)]
struct Seen(std::sync::Mutex<Vec<(String, String, String)>>);

impl toolgate::observe::Observer for Seen {
    fn observe(&self, seen: &toolgate::observe::Observed<'_>) {
        use toolgate::observe::Ending;
        let what = match seen.ending {
            Ending::Decided(outcome) => outcome.decision.name().to_owned(),
            Ending::Tampered { .. } => "tampered".to_owned(),
            Ending::Refused { error } => format!("refused: {error}"),
        };
        let (event, tool) = seen.request.map_or((String::new(), String::new()), |r| {
            (r.event.as_str().to_owned(), r.tool.clone())
        });
        self.0.lock().unwrap().push((event, tool, what));
    }
}

#[tokio::test]
async fn an_embedder_that_opts_in_is_told_every_decision_mentras_calls_make() {
    // The outcome seam for an embedder: the observer is the runner's, so
    // mentra's hooks need nothing of their own to report through it.
    let seen = std::sync::Arc::new(Seen::default());
    let hooks = ToolgateHooks::new(
        HookRunner::builder()
            .interceptor("long-form", LongForm)
            .observer(seen.clone())
            .build(),
    );
    let ls = json!({"command": "ls"});
    hooks
        .pre_tool_execution(&before("call-1", &ls))
        .await
        .expect("the hook answers");
    hooks
        .post_tool_execution(&after("call-1", &ls, "listing"))
        .await
        .expect("the hook answers");
    let told = seen.0.lock().unwrap().clone();
    assert_eq!(told.len(), 2, "{told:?}");
    assert_eq!(told[0].0, "pre_tool_use", "{told:?}");
    assert_eq!(told[1].0, "post_tool_use", "{told:?}");
    assert!(told.iter().all(|(_, tool, _)| tool == "run"), "{told:?}");
    // The interceptor rewrote `ls` to its long form: the observer was told
    // the decision, not only that a call passed.
    assert_eq!(told[0].2, "modify", "{told:?}");
}
