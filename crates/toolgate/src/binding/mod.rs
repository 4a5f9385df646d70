//! The participant seam, and the bindings behind it.
//!
//! # Why one seam
//!
//! The chain (`runner`) orders, short-circuits, threads rewrites, applies
//! failure policy, merges context and records runs. None of that depends on
//! *how* a hook is asked. So a binding is exactly one thing: a [`Decider`]
//! that turns a [`HookRequest`] into a [`Reply`] (an answer or a failure, plus
//! what the operator should see), the shape of tower's `Service`. The
//! alternative — the chain matching on the binding kind — is how semantics
//! drift between bindings; here the chain never learns which binding spoke.
//!
//! # What a configured binding owns
//!
//! A binding that hooks.json can configure owns its fields, their
//! validation and its defaults (`command`, `protocol` for the subprocess
//! binding; `wasm`, `fuel`, `memory_mb` for components): a [`Configurable`]
//! entry in [`CONFIGURABLE`] says which field selects it, which fields only
//! it reads, its default `timeout_ms`, and how to parse its part of a hook.
//! The config loader validates the common fields (name, events, tools,
//! timeout, policy) and hands the rest to the binding the hook selected; it
//! has no per-binding branches. Measurements only one binding makes (fuel)
//! travel in [`Reply::metrics`] and land in the run record under their own
//! names.
//!
//! # Adding a binding
//!
//! 1. A new module here (`binding/webhook.rs`, say) with the decider, its
//!    spec struct implementing [`Binding`], and a `CONFIG:
//!    Configurable` for its hooks.json fields;
//! 2. in this file: a [`BindingKind`] variant, a [`BindingSpec`] variant, its
//!    line in `BindingSpec::config` and its entry in [`CONFIGURABLE`].
//!
//! Two files; a binding with new ways to fail adds its variants to
//! `failure.rs` too. Nothing else (the chain, the loader, `toolgate hooks`)
//! changes. A binding built only in code (as in-process interceptors are)
//! needs only step 1's decider and a [`Participant`].

pub(crate) mod command;
pub(crate) mod in_process;
pub(crate) mod parse;
pub mod wasm;

pub(crate) use crate::contract::BindingKind;
use crate::contract::Source;
use crate::contract::{Event, HookRequest, ToolFilter, Verdict};
use crate::failure::{HookFailure, OnFailure};
use crate::safe_fs::FileIdentity;
use parse::{Common, HookCtx};
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use command::CommandSpec;
pub use wasm::WasmSpec;

/// How a configured hook runs: the part of a hook that belongs to its binding.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "binding", rename_all = "snake_case")]
#[non_exhaustive]
pub enum BindingSpec {
    /// An argv command.
    Subprocess(CommandSpec),
    /// A WebAssembly component.
    Wasm(WasmSpec),
}

impl BindingSpec {
    /// The one place that knows every configured binding.
    pub(crate) fn as_binding(&self) -> &dyn Binding {
        match self {
            BindingSpec::Subprocess(spec) => spec,
            BindingSpec::Wasm(spec) => spec,
        }
    }

    /// The binding's kind.
    pub fn kind(&self) -> BindingKind {
        self.as_binding().kind()
    }

    /// What runs, in one line (for listings).
    pub fn runs(&self) -> String {
        self.as_binding().runs()
    }

    /// The binding's own limits in one line, if it has any beyond `timeout_ms`.
    pub fn limits(&self) -> Option<String> {
        self.as_binding().limits()
    }

    /// Something loading it found that the operator should fix (an
    /// untrusted compile cache).
    pub fn warning(&self) -> Option<&str> {
        self.as_binding().warning()
    }

    pub(crate) fn decider(&self, timeout_ms: u64) -> Arc<dyn Decider> {
        self.as_binding().decider(timeout_ms)
    }

    /// The files a long-lived process must watch (see
    /// [`Binding::watched`]).
    pub(crate) fn watched(&self) -> Vec<(PathBuf, Option<FileIdentity>)> {
        self.as_binding().watched()
    }
}

/// What every configured binding's spec answers. Every method is required:
/// a new binding cannot be added without saying whether a repository's hook
/// of its kind needs the user's trust, what it pins and which files a
/// server must watch (a default here is how a webhook binding would have
/// run from an untrusted repository as if it were sandboxed).
pub(crate) trait Binding {
    fn kind(&self) -> BindingKind;
    fn runs(&self) -> String;
    /// Its own limits in one line, if it has any beyond `timeout_ms`.
    fn limits(&self) -> Option<String>;
    /// Something loading it found that the operator should fix.
    fn warning(&self) -> Option<&str>;
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
pub(crate) enum WorkspaceTrust<'a> {
    /// It can only decide, in a sandbox toolgate controls (a component): it
    /// runs without trust. `reviewed` is shown and pinned by digest in a
    /// review, for the record, and is not checked before a call.
    Sandboxed { reviewed: Vec<PathBuf> },
    /// It runs a program the repository chose: trusted only as the
    /// closed-world reading of this argv pins it (`trust::closed`), and run
    /// from a snapshot of the pinned bytes.
    Program {
        argv: &'a [String],
        /// `argv[0]` as the loader resolved it.
        program: &'a Path,
        /// `trust_files`: (as written, resolved).
        trust_files: &'a [(String, PathBuf)],
    },
    /// It acts outside toolgate's sandbox in some other way (sends the tool
    /// input to a URL, say): trusted only while `target` is exactly what was
    /// reviewed and `files` hold the bytes reviewed.
    #[cfg_attr(
        not(test),
        expect(
            dead_code,
            reason = "no shipped binding pins this way yet; trust's tests add a webhook binding \
                      that does"
        )
    )]
    Exact { target: String, files: Vec<PathBuf> },
}

/// A binding hooks.json can select.
pub(crate) struct Configurable {
    /// The field that selects it (`command`, `wasm`).
    pub(crate) key: parse::Field,
    /// The fields only it reads, besides `key`.
    pub(crate) fields: &'static [parse::Field],
    /// What `key` takes, in words, for the error when a hook names no
    /// binding (`an argv such as ["./hooks/guard.py"]`).
    pub(crate) example: &'static str,
    /// `timeout_ms` when the hook gives none.
    pub(crate) default_timeout_ms: u64,
    /// Validates its fields and builds its spec; reports problems on `ctx`.
    pub(crate) parse: fn(&Map<String, Value>, &Common<'_>, &mut HookCtx<'_>) -> Option<BindingSpec>,
}

/// Every binding hooks.json can configure. The first is the default when a
/// hook names none (its `missing` message lists them all).
pub(crate) const CONFIGURABLE: [&Configurable; 2] = [&command::CONFIG, &wasm::CONFIG];

/// Measurements a binding makes of one call, by name (`fuel_used`). They
/// appear in the run record under that name.
pub(crate) type Metrics = BTreeMap<&'static str, u64>;

/// What a binding hands back for one consultation.
pub(crate) struct Reply {
    pub(crate) answer: Answer,
    /// Operator-facing output the hook produced (stderr), already bounded.
    pub(crate) diagnostics: Option<String>,
    /// Something the binding noticed that the operator should know.
    pub(crate) warning: Option<String>,
    /// What the binding measured.
    pub(crate) metrics: Metrics,
}

/// What became of one consultation. The chain matches on it exhaustively.
#[derive(Debug)]
pub(crate) enum Answer {
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
            metrics: Metrics::new(),
        }
    }
}

/// The seam every binding implements.
#[async_trait::async_trait]
pub(crate) trait Decider: Send + Sync {
    async fn decide(&self, request: &HookRequest<'_>) -> Reply;
}

/// One link of the chain: a decider plus everything the chain needs to know
/// about it.
pub(crate) struct Participant {
    pub(crate) name: String,
    pub(crate) binding: BindingKind,
    pub(crate) source: Source,
    pub(crate) events: Vec<Event>,
    pub(crate) filter: ToolFilter,
    pub(crate) on_failure: OnFailure,
    pub(crate) config: Option<Value>,
    /// What answers; for a workspace hook that needs trust, wrapped in the
    /// trust gate (`crate::trust::guard`).
    pub(crate) decider: Arc<dyn Decider>,
}

impl Participant {
    pub(crate) fn applies(&self, event: Event, tool: &str) -> bool {
        self.events.contains(&event) && self.filter.matches(tool)
    }
}
