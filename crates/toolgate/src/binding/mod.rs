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
/// The WebAssembly component binding: the toolgate-wasm crate, with the
/// `wasm` feature.
#[cfg(feature = "wasm")]
pub use toolgate_wasm as wasm;

pub(crate) use crate::contract::BindingKind;
use crate::contract::Source;
use crate::contract::{Event, ToolFilter};
use crate::failure::OnFailure;
use crate::safe_fs::FileIdentity;
use serde::Serialize;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;
// The seam is a crate below the library and the wasm binding (see its docs).
pub(crate) use toolgate_seam::parse;
pub(crate) use toolgate_seam::{
    Answer, Binding, Configurable, Decider, Metrics, Reply, WorkspaceTrust,
};

pub use command::CommandSpec;
#[cfg(feature = "wasm")]
pub use wasm::WasmSpec;

/// How a configured hook runs: the part of a hook that belongs to its binding.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "binding", rename_all = "snake_case")]
#[non_exhaustive]
pub enum BindingSpec {
    /// An argv command.
    Subprocess(CommandSpec),
    /// A WebAssembly component.
    #[cfg(feature = "wasm")]
    Wasm(WasmSpec),
}

impl BindingSpec {
    /// The one place that knows every configured binding.
    pub(crate) fn as_binding(&self) -> &dyn Binding {
        match self {
            BindingSpec::Subprocess(spec) => spec,
            #[cfg(feature = "wasm")]
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

/// Every binding hooks.json can configure. The first is the default when a
/// hook names none (its `missing` message lists them all). The wasm binding
/// is here with or without the `wasm` feature: without it, a hook that
/// selects it is refused by name rather than met as an unknown field.
pub(crate) const CONFIGURABLE: [&Configurable<BindingSpec>; 3] = [&command::CONFIG, &WASM, &USE];

/// A guard toolgate ships (`use: "toolgate:shell"`): a component whose
/// bytes are built in, so it is the wasm binding's spec.
#[cfg(feature = "wasm")]
const USE: Configurable<BindingSpec> = Configurable {
    key: wasm::USE_CONFIG.key,
    fields: wasm::USE_CONFIG.fields,
    example: wasm::USE_CONFIG.example,
    default_timeout_ms: wasm::USE_CONFIG.default_timeout_ms,
    entry_schema: wasm::USE_CONFIG.entry_schema,
    default_events: wasm::USE_CONFIG.default_events,
    parse: |hook, common, ctx| (wasm::USE_CONFIG.parse)(hook, common, ctx).map(BindingSpec::Wasm),
};

/// Without the wasm binding: the standard guards are components, so `use`
/// is refused with what to build.
#[cfg(not(feature = "wasm"))]
const USE: Configurable<BindingSpec> = Configurable {
    key: parse::Field {
        name: "use",
        about: "Only with toolgate's `wasm` feature, which this program was built without.",
        schema: || serde_json::json!({}),
    },
    fields: &[],
    example: "a guard toolgate ships, such as \"toolgate:shell\", with toolgate's `wasm` feature",
    default_timeout_ms: crate::contract::MAX_TIMEOUT_MS,
    entry_schema: || serde_json::json!({}),
    default_events: |_| &["pre_tool_use"],
    parse: |_, _, ctx| {
        ctx.problem(
            "use",
            "toolgate's guards are WebAssembly components, and the WebAssembly binding is not \
             built into this program: build toolgate with its `wasm` feature",
        );
        None
    },
};

#[cfg(feature = "wasm")]
const WASM: Configurable<BindingSpec> = Configurable {
    key: wasm::CONFIG.key,
    fields: wasm::CONFIG.fields,
    example: wasm::CONFIG.example,
    default_timeout_ms: wasm::CONFIG.default_timeout_ms,
    entry_schema: wasm::CONFIG.entry_schema,
    default_events: wasm::CONFIG.default_events,
    parse: |hook, common, ctx| (wasm::CONFIG.parse)(hook, common, ctx).map(BindingSpec::Wasm),
};

/// The wasm binding's own fields, by name: without the binding built in
/// they are still its fields (not unknown ones), so a hook that uses them
/// gets the one refusal that says what to build. A test with the feature
/// pins them to the binding's own list.
#[cfg_attr(
    feature = "wasm",
    allow(dead_code, reason = "read by the test that pins it")
)]
const WASM_FIELDS: [&str; 3] = ["fuel", "memory_mb", "signed"];

/// Without the wasm binding built in: the same key and fields, and a
/// refusal that says how to get it.
#[cfg(not(feature = "wasm"))]
const WASM: Configurable<BindingSpec> = {
    const fn field(name: &'static str) -> parse::Field {
        parse::Field {
            name,
            about: "Only with toolgate's `wasm` feature, which this program was built without.",
            schema: || serde_json::json!({}),
        }
    }
    const FIELDS: [parse::Field; 3] = [
        field(WASM_FIELDS[0]),
        field(WASM_FIELDS[1]),
        field(WASM_FIELDS[2]),
    ];
    Configurable {
        key: field("wasm"),
        fields: &FIELDS,
        example: "a component such as \"hooks/guard.wasm\", with toolgate's `wasm` feature",
        default_timeout_ms: crate::contract::MAX_TIMEOUT_MS,
        entry_schema: || serde_json::json!({}),
        default_events: |_| &["pre_tool_use"],
        parse: |_, _, ctx| {
            ctx.problem(
                "wasm",
                "the WebAssembly binding is not built into this program: build toolgate with its \
                 `wasm` feature",
            );
            None
        },
    }
};

#[cfg(all(test, feature = "wasm"))]
#[test]
fn the_wasm_fields_known_without_the_feature_are_the_bindings_own() {
    let own: Vec<&str> = wasm::CONFIG.fields.iter().map(|f| f.name).collect();
    assert_eq!(own, WASM_FIELDS);
}

/// One link of the chain: a decider plus everything the chain needs to know
/// about it. (Cloned only for a shadow consultation, which runs as a task
/// of its own: see `runner::rounds`.)
#[derive(Clone)]
pub(crate) struct Participant {
    pub(crate) name: String,
    pub(crate) binding: BindingKind,
    pub(crate) source: Source,
    pub(crate) events: Vec<Event>,
    pub(crate) filter: ToolFilter,
    pub(crate) on_failure: OnFailure,
    /// `"mode": "shadow"`: consulted and recorded, never applied.
    pub(crate) shadow: bool,
    pub(crate) config: Option<Value>,
    /// Names its session state (`crate::sessions`): its layer, name and
    /// what runs, so a repository's hook of the same name as a global
    /// guard has a slot of its own.
    pub(crate) scope: String,
    /// What answers; for a workspace hook that needs trust, wrapped in the
    /// trust gate (`crate::trust::guard`).
    pub(crate) decider: Arc<dyn Decider>,
}

impl Participant {
    pub(crate) fn applies(&self, event: Event, tool: &str) -> bool {
        self.events.contains(&event) && self.filter.matches(tool)
    }
}
