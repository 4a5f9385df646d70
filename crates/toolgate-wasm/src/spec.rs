//! The component binding's part of hooks.json: `wasm` (the component's
//! path), `fuel`, `memory_mb` and `signed`.
//!
//! `signed` is this binding's field, not a common one: only a component's
//! bytes are what runs, so only a component is signed (`crate::signing`
//! says why a command is not). A command hook that gives it is refused as
//! any other binding's field is.

use super::{ComponentInfo, DEFAULT_FUEL, DEFAULT_MEMORY_MB, MAX_FUEL, MAX_MEMORY_MB, WasmHook};
use crate::contract::BindingKind;
use crate::contract::Source;
use crate::safe_fs::FileIdentity;
use crate::signing::{Expect, InForce};
use serde::Serialize;
use serde_json::{Map, Value, json};
use std::path::PathBuf;
use std::sync::Arc;
use toolgate_seam::parse::{Common, Field, HookCtx, got_instead_of_text, whole_number};
use toolgate_seam::{Binding, Configurable, Decider, WorkspaceTrust};

/// `signed`: absent is `Some(None)`; `None` is a problem reported.
#[allow(clippy::option_option)]
fn parse_signed(
    value: Option<&Value>,
    ctx: &mut HookCtx<'_>,
) -> Option<Option<(Option<String>, u64)>> {
    let Some(value) = value else {
        return Some(None);
    };
    let shape = "expected {\"name\": \"<signed name>\", \"min_version\": <unsigned integer>}, \
                 both optional";
    let Value::Object(obj) = value else {
        ctx.problem("signed", shape);
        return None;
    };
    if obj.keys().any(|k| k != "name" && k != "min_version") {
        ctx.problem("signed", format!("unknown field; {shape}"));
        return None;
    }
    let name = match obj.get("name") {
        None => None,
        Some(Value::String(n)) if !n.is_empty() && !n.contains(char::is_whitespace) => {
            Some(n.clone())
        }
        Some(_) => {
            ctx.problem(
                "signed",
                "`name` must be a non-empty string without spaces (it is matched against the \
                 trusted comment's name=)",
            );
            return None;
        }
    };
    let min_version = match obj.get("min_version") {
        None => 0,
        Some(v) => match v.as_u64() {
            Some(n) => n,
            None => {
                ctx.problem("signed", "`min_version` must be an unsigned integer");
                return None;
            }
        },
    };
    Some(Some((name, min_version)))
}

/// The binding's hooks.json fields (`wasm`, `fuel`, `memory_mb`, `signed`) and
/// their parser: the library lists it among the bindings a hook may select.
pub const CONFIG: Configurable<WasmSpec> = Configurable {
    key: Field {
        name: "wasm",
        about: "The WebAssembly component (a .wasm component or a .wat file), resolved \
                against the same folder as a command's program; a workspace may only name \
                files in its own tree. Or a component in an OCI registry, \
                oci://host[:port]/repo[:tag][@sha256:<digest>] (a workspace must give the \
                digest).",
        schema: || json!({"type": "string", "minLength": 1}),
    },
    fields: &[
        Field {
            name: "fuel",
            about: "Fuel per call (instructions, roughly): a guest that computes too long \
                    fails with out_of_fuel.",
            schema: || whole_number(1, MAX_FUEL),
        },
        Field {
            name: "memory_mb",
            about: "Linear-memory limit per call, in MiB.",
            schema: || whole_number(1, MAX_MEMORY_MB),
        },
        Field {
            name: "signed",
            about: "The minisign signature the component (X.minisig beside it) must carry: \
                    the `name` its trusted comment names (default: the hook's name) and the \
                    lowest `version` accepted (`min_version`, default 0: a rollback below it \
                    is refused). Checked against the global config's `signing.keys`; when \
                    `signing.required` is set every component is checked, with or without \
                    this field.",
            schema: || {
                json!({
                    "type": "object",
                    "additionalProperties": false,
                    "properties": {
                        "name": {"type": "string", "minLength": 1},
                        "min_version": {"type": "integer", "minimum": 0},
                    },
                })
            },
        },
    ],
    example: "a component such as \"hooks/guard.wasm\"",
    default_timeout_ms: super::DEFAULT_TIMEOUT_MS,
    entry_schema: || json!({}),
    default_events: |_| &["pre_tool_use"],
    parse,
};

/// A configured WebAssembly component.
#[derive(Clone, Debug, Serialize)]
#[non_exhaustive]
pub struct WasmSpec {
    /// The component file, resolved against the config's root.
    pub wasm: PathBuf,
    /// Fuel per call.
    pub fuel: u64,
    /// Linear-memory limit per call, in MiB.
    pub memory_mb: u64,
    /// What loading it found (size, cache, imports).
    pub component: ComponentInfo,
    /// For an `oci://` component: the ref, the digest run, where it came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oci: Option<Box<super::oci::OciComponent>>,
    /// For a guard toolgate ships (`use`): its name, `toolgate:shell`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub builtin: Option<String>,
    /// The compiled, pre-instantiated component.
    #[serde(skip)]
    pub(crate) loaded: Arc<WasmHook>,
}

impl Binding for WasmSpec {
    fn kind(&self) -> BindingKind {
        BindingKind::Wasm
    }

    fn runs(&self) -> String {
        if let Some(name) = &self.builtin {
            return format!(
                "{name} (built into toolgate, {} KiB)",
                self.component.bytes / 1024
            );
        }
        let what = match &self.oci {
            Some(oci) if oci.reference == oci.pinned => oci.reference.clone(),
            Some(oci) => format!("{} → {}", oci.reference, oci.digest),
            None => self.wasm.display().to_string(),
        };
        format!(
            "{} ({} KiB{}{})",
            what,
            self.component.bytes / 1024,
            if self.component.imports.is_empty() {
                ", no WASI imports".to_owned()
            } else {
                format!(", {} WASI imports", self.component.imports.len())
            },
            match &self.component.signature {
                Some(verified) => format!("; {verified}"),
                None => String::new(),
            }
        )
    }

    fn limits(&self) -> Option<String> {
        Some(format!("fuel {}, {} MiB", self.fuel, self.memory_mb))
    }

    fn warning(&self) -> Option<&str> {
        self.component.cache_warning.as_deref()
    }

    fn decider(&self, _timeout_ms: u64) -> Arc<dyn Decider> {
        // The deadline was fixed when the component was loaded.
        self.loaded.clone()
    }

    /// A component can only decide, in a fresh sandbox with no ambient
    /// authority: it runs without trust (its digest is in the review).
    fn workspace_trust(&self) -> WorkspaceTrust<'_> {
        WorkspaceTrust::Sandboxed {
            // A built-in guard's bytes are toolgate's: nothing of the
            // workspace's to review.
            reviewed: match self.builtin {
                Some(_) => Vec::new(),
                None => vec![self.wasm.clone()],
            },
        }
    }

    /// The component file: a server serves the compiled bytes it loaded, so
    /// a replaced file must make it load again.
    /// And its signature, when one was checked.
    fn watched(&self) -> Vec<(PathBuf, Option<FileIdentity>)> {
        if self.builtin.is_some() {
            return Vec::new();
        }
        let signature = self
            .component
            .signature_file
            .iter()
            .map(|(path, identity)| (path.clone(), Some(*identity)));
        std::iter::once((self.wasm.clone(), self.component.identity))
            .chain(signature)
            .collect()
    }
}

fn parse(obj: &Map<String, Value>, common: &Common<'_>, ctx: &mut HookCtx<'_>) -> Option<WasmSpec> {
    let fuel = ctx.bounded(obj.get("fuel"), "fuel", 1, MAX_FUEL, DEFAULT_FUEL, "");
    let memory_mb = ctx.bounded(
        obj.get("memory_mb"),
        "memory_mb",
        1,
        MAX_MEMORY_MB,
        DEFAULT_MEMORY_MB,
        " MiB",
    );
    if let Some(mb) = memory_mb {
        crate::engine::note_budget(mb);
    }
    let signed = parse_signed(obj.get("signed"), ctx);
    let written = match obj.get("wasm") {
        Some(Value::String(s)) if !s.is_empty() => s,
        Some(other) => {
            ctx.problem(
                "wasm",
                format!(
                    "expected the path of a component, got {}",
                    got_instead_of_text(other, "an empty path")
                ),
            );
            return None;
        }
        None => return None,
    };
    // Compile only a hook whose every other field is valid.
    let (Some(fuel), Some(memory_mb), Some(timeout_ms), Some(signed), true) =
        (fuel, memory_mb, common.timeout_ms, signed, ctx.is_clean())
    else {
        return None;
    };
    let rule = common.options.get::<InForce>().map(|r| &r.0);
    let keys = rule.map_or(&[][..], |r| r.keys.as_slice());
    let is_oci = written.starts_with(super::oci::SCHEME);
    let check = match (rule.is_some_and(|r| r.required), signed) {
        (false, None) => None,
        (_, signed) => {
            if keys.is_empty() {
                ctx.problem(
                    "signed",
                    "no signing keys are pinned: give `signing.keys` in the global or managed config",
                );
                return None;
            }
            let (name, min_version) = signed.unwrap_or_default();
            Some(super::SignatureCheck {
                keys,
                expect: Expect {
                    name: name.or_else(|| ctx.name.clone())?,
                    min_version,
                },
                // A pulled component's signature is in the cache beside it
                // (checked by digest there), not in the workspace's tree.
                beneath: (common.source == Source::Workspace && !is_oci).then_some(common.root),
            })
        }
    };
    let default = super::WasmOptions::default();
    let options = common
        .options
        .get::<super::WasmOptions>()
        .unwrap_or(&default);
    if is_oci {
        return parse_oci(
            written,
            (fuel, memory_mb, timeout_ms),
            common,
            ctx,
            (options, check),
        );
    }
    // A workspace names only components in its own tree.
    let path = ctx.resolve(("wasm", "component"), written, common, true)?;
    if !common.load {
        // Not for this call: checked to be there, not compiled or mapped.
        if let Err(e) = crate::safe_fs::regular_file(&path) {
            ctx.refused_path("wasm", "component", written, &path, common.root, e);
        }
        return None;
    }
    // What the managed layer names binds the user: a component the user
    // (or anyone but root) could replace would let them choose the guard.
    if common.source == Source::Managed
        && common
            .options
            .get::<toolgate_seam::parse::CallerVouches>()
            .is_none()
        && let Err(e) = crate::safe_fs::root_owned_file(&path)
    {
        ctx.problem(
            "wasm",
            format!(
                "component {written:?}: the managed layer runs only what root alone can \
                 change: {}",
                crate::text::error_chain(&e)
            ),
        );
        return None;
    }
    match super::load(
        &path,
        &compile_options(common.source, options),
        super::CallBudget {
            fuel,
            memory_mb,
            timeout_ms,
            owner: super::share::Owner::of(common.source, common.root),
        },
        common.config,
        check,
        None,
    ) {
        Ok((loaded, component)) => Some(WasmSpec {
            wasm: path,
            fuel,
            memory_mb,
            component,
            oci: None,
            builtin: None,
            loaded: Arc::new(loaded),
        }),
        Err(e) => {
            ctx.problem(
                "wasm",
                format!("component {written:?}: {}", crate::text::error_chain(&e)),
            );
            None
        }
    }
}

/// The options a component from `source` is compiled with. A compiled
/// artifact is what runs, and the compile cache is the user's to write: a
/// user — or the agent's own shell tool, running as the user — who planted
/// an artifact under a guard's key would replace that guard. That is the
/// user's own business for their own hooks and a workspace's (section 3 of
/// SECURITY.md), but the managed layer binds the user: unless toolgate runs
/// as root, a managed component is compiled from its own bytes on every
/// load and nothing is read from or written to the cache for it.
pub(crate) fn compile_options(
    source: Source,
    options: &super::WasmOptions,
) -> std::borrow::Cow<'_, super::WasmOptions> {
    if user_cache_trusted(source) {
        std::borrow::Cow::Borrowed(options)
    } else {
        std::borrow::Cow::Owned(super::WasmOptions {
            cache_dir: None,
            ..options.clone()
        })
    }
}

/// Whether what the user can write (the compile cache, pulled components)
/// may stand in for a component from `source`: not for the managed layer's,
/// which binds the user, unless toolgate runs as root.
fn user_cache_trusted(source: Source) -> bool {
    match source {
        Source::Managed => nix::unistd::geteuid().is_root(),
        Source::Host | Source::Global | Source::Workspace => true,
    }
}

/// An `oci://` component: the ref checked (syntax, who may name a tag, the
/// allowed registries), then resolved to a verified file in the cache and
/// loaded like a local one. Not for this call: checked, not pulled.
fn parse_oci(
    written: &str,
    (fuel, memory_mb, timeout_ms): (u64, u64, u64),
    common: &Common<'_>,
    ctx: &mut HookCtx<'_>,
    (options, check): (&super::WasmOptions, Option<super::SignatureCheck<'_>>),
) -> Option<WasmSpec> {
    use super::oci;
    let refused = |ctx: &mut HookCtx<'_>, why: String| {
        ctx.problem("wasm", format!("component {written:?}: {why}"));
        None
    };
    let reference = match oci::OciRef::parse(written) {
        Ok(r) => r,
        Err(e) => return refused(ctx, e.to_string()),
    };
    if let Err(why) = oci::check_source(common.source, &reference) {
        return refused(ctx, why);
    }
    if let Err(why) = oci::check_registry(&reference, options.oci.allowed_registries.as_deref()) {
        return refused(ctx, why);
    }
    // Closed world: what a tag resolved to is recorded in the user's cache,
    // so for a hook the user must not replace, only a signature says what
    // runs.
    if reference.digest.is_none() && check.is_none() && !user_cache_trusted(common.source) {
        return refused(
            ctx,
            "a managed ref that follows a tag must be signed (give `signed`, or set \
             `signing.required` in the managed layer) or pinned with @sha256:…: the digest a \
             tag resolved to is recorded in the user's cache, which the user can change"
                .into(),
        );
    }
    if !common.load {
        return None;
    }
    let resolved = match oci::resolve(&reference, options.cache_dir.as_deref(), &options.oci) {
        Ok(resolved) => resolved,
        Err(e) => return refused(ctx, crate::text::error_chain(&e)),
    };
    let budget = super::CallBudget {
        fuel,
        memory_mb,
        timeout_ms,
        owner: super::share::Owner::of(common.source, common.root),
    };
    // The pulled bytes sit in the user's cache: for a hook the user must
    // not replace, they are checked against the manifest stored beside
    // them, itself checked against the digest run (see `compile_options`).
    let pulled_as = if user_cache_trusted(common.source) {
        None
    } else {
        match oci::stored_layer_digest(&reference, &resolved) {
            Ok(hex) => Some(hex),
            Err(e) => return refused(ctx, crate::text::error_chain(&e)),
        }
    };
    match super::load(
        &resolved.path,
        &compile_options(common.source, options),
        budget,
        common.config,
        check,
        pulled_as.as_deref(),
    ) {
        Ok((mut loaded, mut component)) => {
            if let Some(warning) = &resolved.warning {
                let joined = match component.cache_warning.take() {
                    Some(cache) => format!("{warning}; {cache}"),
                    None => warning.clone(),
                };
                component.cache_warning = Some(joined.clone());
                loaded.load_warning = Some(joined);
            }
            Some(WasmSpec {
                wasm: resolved.path.clone(),
                fuel,
                memory_mb,
                component,
                oci: Some(Box::new(resolved)),
                builtin: None,
                loaded: Arc::new(loaded),
            })
        }
        Err(e) => refused(
            ctx,
            format!(
                "{} ({}): {}",
                resolved.digest,
                reference,
                crate::text::error_chain(&e)
            ),
        ),
    }
}
