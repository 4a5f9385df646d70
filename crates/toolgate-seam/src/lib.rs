//! The participant seam every binding implements, and the kit a
//! configurable binding parses its hooks.json fields with.
//!
//! # Why a crate of its own
//!
//! The chain (in `toolgate`) and the bindings meet here and nowhere else.
//! The wasm binding is a crate of its own (`toolgate-wasm`: wasmtime, the
//! compile cache, OCI), so an embedder who wants only in-process and
//! subprocess hooks builds no wasmtime. For that the seam cannot live in
//! the library: the wasm crate would depend on the library and the library
//! on it. Below both, the seam is what each side compiles against; it holds
//! no binding and no chain.
//!
//! # Why one seam
//!
//! The chain orders, short-circuits, threads rewrites, applies failure
//! policy, merges context and records runs. None of that depends on *how*
//! a hook is asked. So a binding is exactly one thing: a [`Decider`] that
//! turns a [`HookRequest`] into a [`Reply`] (an answer or a failure, plus
//! what the operator should see), the shape of tower's `Service`. The
//! alternative (the chain matching on the binding kind) is how semantics
//! drift between bindings; here the chain never learns which binding spoke.
//!
//! [`signing`] is here too: the wasm binding verifies a component's
//! signature while it loads it, and the config layer parses the rules.

pub mod parse;
pub mod signing;

// The layers below, under the names the modules were written against.
use toolgate_contract::{contract, text};
use toolgate_fs as safe_fs;

use contract::{BindingKind, HookRequest, Verdict};
use parse::{Common, HookCtx};
use safe_fs::FileIdentity;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use toolgate_contract::failure::HookFailure;

/// What every configured binding's spec answers. Every method is required:
/// a new binding cannot be added without saying whether a repository's hook
/// of its kind needs the user's trust, what it pins and which files a
/// server must watch (a default here is how a webhook binding would have
/// run from an untrusted repository as if it were sandboxed).
pub trait Binding {
    /// Its kind.
    fn kind(&self) -> BindingKind;
    /// What runs, in one line (for listings).
    fn runs(&self) -> String;
    /// Its own limits in one line, if it has any beyond `timeout_ms`.
    fn limits(&self) -> Option<String>;
    /// Something loading it found that the operator should fix.
    fn warning(&self) -> Option<&str>;
    /// What answers a call, with `timeout_ms` as the hook's deadline.
    fn decider(&self, timeout_ms: u64) -> Arc<dyn Decider>;
    /// Whether a workspace hook of this kind may run without the user's
    /// trust, and what trusting it pins.
    fn workspace_trust(&self) -> WorkspaceTrust<'_>;
    /// The files whose change must make a long-lived process (`toolgate
    /// serve`) load the config again, each with the identity of the bytes
    /// loaded. Files the trust gate checks before each call need not be
    /// here.
    fn watched(&self) -> Vec<(PathBuf, Option<FileIdentity>)>;
}

/// What a workspace hook of one binding needs before it may run: the
/// binding's answer to the trust layer (`crate::trust`), which decides and
/// gates. Each variant is a way of pinning; a new binding picks one, or adds
/// one and the trust layer's exhaustive match points at what to write.
#[derive(Debug)]
pub enum WorkspaceTrust<'a> {
    /// It can only decide, in a sandbox toolgate controls (a component): it
    /// runs without trust. `reviewed` is shown and pinned by digest in a
    /// review, for the record, and is not checked before a call.
    Sandboxed {
        /// The files a review shows and pins by digest.
        reviewed: Vec<PathBuf>,
    },
    /// It runs a program the repository chose: trusted only as the
    /// closed-world reading of this argv pins it (`trust::closed`), and run
    /// from a snapshot of the pinned bytes.
    Program {
        /// The argv, as written.
        argv: &'a [String],
        /// `argv[0]` as the loader resolved it.
        program: &'a Path,
        /// `trust_files`: (as written, resolved).
        trust_files: &'a [(String, PathBuf)],
    },
    /// It acts outside toolgate's sandbox in some other way (sends the tool
    /// input to a URL, say): trusted only while `target` is exactly what was
    /// reviewed and `files` hold the bytes reviewed.
    // No shipped binding pins this way yet; trust's tests add a webhook
    // binding that does.
    Exact {
        /// Where it acts (a URL, say), exactly as reviewed.
        target: String,
        /// The files whose bytes were reviewed.
        files: Vec<PathBuf>,
    },
}

/// A binding hooks.json can select.
#[derive(Debug)]
pub struct Configurable<S> {
    /// The field that selects it (`command`, `wasm`).
    pub key: parse::Field,
    /// The fields only it reads, besides `key`.
    pub fields: &'static [parse::Field],
    /// What `key` takes, in words, for the error when a hook names no
    /// binding (`an argv such as ["./hooks/guard.py"]`).
    pub example: &'static str,
    /// `timeout_ms` when the hook gives none.
    pub default_timeout_ms: u64,
    /// The events (wire names) a hook that selects it is consulted on when
    /// it gives no `event`: `pre_tool_use` for a hook someone wrote; for a
    /// standard guard, the events it needs (the secrets guard redacts
    /// output, so it is consulted after the call too). Given the hook's
    /// object.
    pub default_events: fn(&Map<String, Value>) -> &'static [&'static str],
    /// What the published schema adds to a hook that selects it: JSON
    /// Schema keywords merged into its `oneOf` entry (`serde_json::json!({})`
    /// for none).
    pub entry_schema: fn() -> Value,
    /// Validates its fields and builds its spec; reports problems on `ctx`.
    pub parse: fn(&Map<String, Value>, &Common<'_>, &mut HookCtx<'_>) -> Option<S>,
}

/// Measurements a binding makes of one call, by name (`fuel_used`). They
/// appear in the run record under that name.
pub type Metrics = BTreeMap<&'static str, u64>;

/// What a binding hands back for one consultation.
#[derive(Debug)]
pub struct Reply {
    /// What the hook answered, or why it could not.
    pub answer: Answer,
    /// Operator-facing output the hook produced (stderr), already bounded.
    pub diagnostics: Option<String>,
    /// Something the binding noticed that the operator should know.
    pub warning: Option<String>,
    /// What the hook wrote to its session state while it ran
    /// (`toolgate_contract::session`); the chain keeps it only if the hook
    /// decided.
    pub state: toolgate_contract::session::StateChanges,
    /// What the binding measured.
    pub metrics: Metrics,
}

/// What became of one consultation. The chain matches on it exhaustively.
#[derive(Debug)]
pub enum Answer {
    /// The hook decided.
    Decided(Verdict),
    /// It could not decide: its `on_failure` applies.
    Failed(HookFailure),
    /// It was not asked, and the chain goes on without it: a workspace hook
    /// the user has not trusted, under the operator's `untrusted_hooks:
    /// skip`. Its run record says so and why (never a silent skip).
    NotRun {
        /// Why, for the run record.
        reason: String,
    },
}

impl From<Result<Verdict, HookFailure>> for Answer {
    fn from(answer: Result<Verdict, HookFailure>) -> Self {
        match answer {
            Ok(verdict) => Answer::Decided(verdict),
            Err(failure) => Answer::Failed(failure),
        }
    }
}

impl From<Result<Verdict, HookFailure>> for Reply {
    fn from(answer: Result<Verdict, HookFailure>) -> Self {
        Answer::from(answer).into()
    }
}

impl From<Answer> for Reply {
    fn from(answer: Answer) -> Self {
        Reply {
            answer,
            diagnostics: None,
            warning: None,
            state: Default::default(),
            metrics: Metrics::new(),
        }
    }
}

/// The seam every binding implements.
#[async_trait::async_trait]
pub trait Decider: Send + Sync {
    /// Asks the hook about one call.
    async fn decide(&self, request: &HookRequest<'_>) -> Reply;
}
