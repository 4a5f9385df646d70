//! The guards toolgate ships: `{"name": "shell", "use": "toolgate:shell"}`,
//! and likewise `toolgate:paths`, `toolgate:secrets`, `toolgate:egress`,
//! `toolgate:taint`.
//!
//! # Why components built into the binary
//!
//! A standard guard is a policy an operator relies on without writing it,
//! so it runs the way every third-party guard runs: as a WebAssembly
//! component, fuel-limited, memory-bounded, with no ambient authority
//! (a bug in a shell parser fed hostile text stays inside the sandbox).
//! Its bytes are embedded here, so `use` needs no file on disk, no network
//! and no trust review (nothing in a workspace changes what runs), and
//! every machine runs the same artefact. The bytes are `guards/dist/`,
//! built from `guards/<name>/` by the Rust guest recipe; the test command
//! rebuilds them and fails unless they match bit for bit
//! (`guards/build.sh`). An in-process guard would be faster per call, and
//! was not chosen: the sandbox is the point, and the per-call cost is
//! measured (`toolgate bench --guards`) against the goal.

use super::spec::{WasmSpec, compile_options};
use super::{DEFAULT_MEMORY_MB, WasmHook};
use serde_json::{Map, Value, json};
use std::path::PathBuf;
use std::sync::Arc;
use toolgate_seam::parse::{Common, Field, HookCtx, type_name};
use toolgate_seam::{Configurable, Decider};

/// The fuel a built-in guard gets per call: ten times a third-party
/// hook's default. A guard's work grows with what it reads (the secrets
/// guard scans every byte of a tool's output, about 150 fuel a byte with
/// the JSON around it), and a guard that runs out fails closed: with the
/// default a 1 MB output was withheld. This budget reads about 6 MB in
/// well under the 1 s wall-clock backstop, which stays the bound; the
/// memory limit stays the default (128 MB).
pub(crate) const BUILTIN_FUEL: u64 = 1_000_000_000;

/// The prefix a hook's `use` names a built-in guard with.
pub(crate) const SCHEME: &str = "toolgate:";

/// One built-in guard.
#[derive(Debug)]
pub(crate) struct Guard {
    /// Its name after `toolgate:`.
    pub(crate) name: &'static str,
    /// The component.
    pub(crate) bytes: &'static [u8],
}

/// Every built-in guard's component, by name: one for each entry of
/// `toolgate_guards::GUARDS` (pinned by a test), in the same order.
pub(crate) const GUARDS: &[Guard] = &[
    Guard {
        name: "shell",
        bytes: include_bytes!("../../../guards/dist/shell.wasm"),
    },
    Guard {
        name: "paths",
        bytes: include_bytes!("../../../guards/dist/paths.wasm"),
    },
    Guard {
        name: "secrets",
        bytes: include_bytes!("../../../guards/dist/secrets.wasm"),
    },
    Guard {
        name: "egress",
        bytes: include_bytes!("../../../guards/dist/egress.wasm"),
    },
    Guard {
        name: "taint",
        bytes: include_bytes!("../../../guards/dist/taint.wasm"),
    },
];

/// What the published schema says of each built-in guard's `config`: for
/// `use: "toolgate:NAME"`, that guard's options (each a list of strings;
/// `allow_classes` from its classes), and no other key. The guard's own
/// list (toolgate-guards) is the one both it and this read.
pub(crate) fn config_schemas() -> serde_json::Value {
    let each: Vec<serde_json::Value> = toolgate_guards::GUARDS
        .iter()
        .map(|guard| {
            let options: serde_json::Map<String, serde_json::Value> = guard
                .options
                .iter()
                .map(|(name, about)| {
                    let items = match *name {
                        "allow_classes" => json!({"enum": guard.classes}),
                        _ => json!({"type": "string", "minLength": 1}),
                    };
                    let schema = json!({"type": "array", "items": items, "description": about});
                    ((*name).to_owned(), schema)
                })
                .collect();
            json!({
                "if": {"properties": {"use": {"const": format!("{SCHEME}{}", guard.name)}}, "required": ["use"]},
                "then": {"properties": {"config": {
                    "type": "object",
                    "additionalProperties": false,
                    "properties": options,
                }}},
            })
        })
        .collect();
    json!({ "allOf": each })
}

/// The guard `use` names (`toolgate:shell`), if there is one.
pub(crate) fn find(written: &str) -> Option<&'static Guard> {
    let name = written.strip_prefix(SCHEME)?;
    GUARDS.iter().find(|g| g.name == name)
}

/// Every name `use` accepts, as written in hooks.json.
pub(crate) fn names() -> Vec<String> {
    GUARDS
        .iter()
        .map(|g| format!("{SCHEME}{}", g.name))
        .collect()
}

/// `use`: a guard toolgate ships, by name (`toolgate:shell`); its options
/// go under `config` as any hook's do. The guards and their options:
/// docs/guards.md.
pub const USE_CONFIG: Configurable<WasmSpec> = Configurable {
    key: Field {
        name: "use",
        about: "A guard toolgate ships, by name: \"toolgate:shell\" (destructive and \
                dangerous shell commands), \"toolgate:paths\" (secrets read or written, \
                writes outside the workspace), \"toolgate:secrets\" (credentials redacted \
                from output, refused in writes), \"toolgate:egress\" (network destinations \
                against an allowlist), \"toolgate:taint\" (after a secret is read, no \
                network for the rest of the session). Each runs as a sandboxed component built into \
                toolgate; its options go under `config` (docs/guards.md).",
        schema: || json!({"enum": names()}),
    },
    fields: &[],
    example: "a guard toolgate ships, such as \"toolgate:shell\"",
    default_timeout_ms: super::DEFAULT_TIMEOUT_MS,
    entry_schema: config_schemas,
    default_events: |hook| {
        hook.get("use")
            .and_then(Value::as_str)
            .and_then(|written| written.strip_prefix(SCHEME))
            .and_then(|name| toolgate_guards::GUARDS.iter().find(|g| g.name == name))
            .map_or(&["pre_tool_use"], |g| g.events)
    },
    parse: parse_use,
};

fn parse_use(
    obj: &Map<String, Value>,
    common: &Common<'_>,
    ctx: &mut HookCtx<'_>,
) -> Option<WasmSpec> {
    let written = match obj.get("use") {
        Some(Value::String(s)) => s,
        Some(other) => {
            ctx.problem(
                "use",
                format!(
                    "expected the name of a guard toolgate ships, got {}",
                    type_name(other)
                ),
            );
            return None;
        }
        None => return None,
    };
    let Some(guard) = find(written) else {
        ctx.problem(
            "use",
            format!(
                "{:?} is not a guard toolgate ships; it ships {}",
                crate::text::excerpt(written, 80),
                names().join(", ")
            ),
        );
        return None;
    };
    let (Some(timeout_ms), true, true) = (common.timeout_ms, ctx.is_clean(), common.load) else {
        return None;
    };
    let default = super::WasmOptions::default();
    let options = common
        .options
        .get::<super::WasmOptions>()
        .unwrap_or(&default);
    let budget = super::CallBudget {
        fuel: BUILTIN_FUEL,
        memory_mb: DEFAULT_MEMORY_MB,
        timeout_ms,
        owner: super::share::Owner::of(common.source, common.root),
    };
    match super::load_builtin(
        guard,
        &compile_options(common.source, options),
        budget,
        common.config,
    ) {
        Ok((loaded, _))
            if let Some(message) = probe(&loaded, ctx.name.as_deref(), common.config) =>
        {
            ctx.problem("config", format!("{written}: {message}"));
            None
        }
        Ok((loaded, component)) => Some(WasmSpec {
            wasm: PathBuf::from(written),
            fuel: BUILTIN_FUEL,
            memory_mb: DEFAULT_MEMORY_MB,
            component,
            oci: None,
            builtin: Some(written.clone()),
            loaded: Arc::new(loaded),
        }),
        Err(e) => {
            ctx.problem(
                "use",
                format!("{written}: {}", crate::text::error_chain(&e)),
            );
            None
        }
    }
}

/// Asks a built-in guard once, at load, about a tool it does not judge:
/// it reads its options first, so a mistake in them (`protected_branch`
/// for `protected_branches`) is its error, reported here as a problem of
/// the file that names the hook and `config`, as any other field's is,
/// rather than as a blocked call later. The guard is the one reader of its
/// options (the published schema describes them for editors).
///
/// The call runs to completion here: a component without imports never
/// waits, and an epoch yield (this runtime's deadline check) only asks to
/// be polled again.
fn probe(loaded: &WasmHook, hook: Option<&str>, config: Option<&Value>) -> Option<String> {
    use std::future::Future;
    let input = json!({});
    let request = crate::contract::HookRequest {
        event: crate::contract::Event::PreToolUse,
        hook: hook.unwrap_or("probe"),
        tool: "toolgate:probe",
        input: &input,
        result: None,
        session_id: None,
        turn_id: None,
        tool_call_id: None,
        cwd: None,
        config,
        state: Default::default(),
    };
    let mut call = std::pin::pin!(Decider::decide(loaded, &request));
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    let reply = loop {
        if let std::task::Poll::Ready(reply) = call.as_mut().poll(&mut cx) {
            break reply;
        }
    };
    match reply.answer {
        toolgate_seam::Answer::Failed(failure) => Some(failure.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    /// The binary embeds a component for exactly the guards the library
    /// describes: a guard without bytes, or bytes without options and
    /// classes in the schema, would be half shipped.
    #[test]
    fn every_described_guard_has_its_component_and_no_other() {
        let described: Vec<&str> = toolgate_guards::GUARDS.iter().map(|g| g.name).collect();
        let embedded: Vec<&str> = super::GUARDS.iter().map(|g| g.name).collect();
        assert_eq!(described, embedded);
    }
}
