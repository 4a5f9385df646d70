//! One hooks.json file, parsed: the top-level fields, then each hook's
//! common fields here, then its binding's own fields by the binding (see
//! `binding::CONFIGURABLE`). Nothing here knows a binding by name.

use super::{HookSpec, MAX_TIMEOUT_MS, MIN_TIMEOUT_MS};
use crate::binding::parse::{
    BindingOptions, Common, Field, HookCtx, Problem, one_of_names, type_name, whole_number,
};
use crate::binding::{BindingSpec, CONFIGURABLE, Configurable, WorkspaceTrust};
use crate::contract::{Event, Source, whole_name_matcher};
use crate::failure::OnFailure;
use regex_automata::meta::Regex;
use serde_json::{Map, Value, json};
use std::path::Path;
use strum::VariantNames;

/// The hooks.json schema this build reads.
pub const CONFIG_SCHEMA: u64 = 1;

/// Fields every hook may have, whatever its binding (each binding's own are
/// in its `Configurable`). The unknown-field check and the published schema
/// (`super::schema`) both read this list.
pub(crate) const COMMON_FIELDS: &[Field] = &[
    Field {
        name: "name",
        about: "The hook's name, unique in its file: run records and errors name hooks by it.",
        schema: || {
            // Not empty or blank, no control characters (`parse_name`).
            const C: &str = "\\u0000-\\u001f\\u007f-\\u009f";
            json!({"type": "string", "pattern": format!("^[^{C}]*[^\\s{C}][^{C}]*$")})
        },
    },
    Field {
        name: "event",
        about: "When the hook is consulted: before the tool runs (\"pre_tool_use\", the \
                default), after it (\"post_tool_use\"), when an MCP server's tools are \
                about to be offered through `toolgate mcp` (\"list_tools\": one call per \
                tool, its definition as the input), or a list of them. A standard guard's \
                default is the events it needs (toolgate:secrets: pre and post).",
        schema: || {
            let names: Vec<&str> = Event::ALL.iter().map(|e| e.as_str()).collect();
            let one = one_of_names(&names);
            json!({"anyOf": [
                one,
                {"type": "array", "minItems": 1, "uniqueItems": true, "items": one},
            ]})
        },
    },
    Field {
        name: "tools",
        about: "The exact tool names the hook applies to; omitted, every tool.",
        schema: || json!({"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}}),
    },
    Field {
        name: "matcher",
        about: "A regex (Rust syntax) the whole tool name must match; with `tools`, a tool \
                must satisfy both.",
        schema: || json!({"type": "string"}),
    },
    Field {
        name: "timeout_ms",
        about: "The hook's deadline per call, in milliseconds; past it the hook has failed \
                and `on_failure` applies.",
        schema: || whole_number(MIN_TIMEOUT_MS, MAX_TIMEOUT_MS),
    },
    Field {
        name: "on_failure",
        about: "What a failure of the hook (crash, timeout, bad answer) becomes: \"deny\" \
                (the default: the call is blocked) or \"allow\" (the chain goes on, with a \
                warning in the run record).",
        schema: || one_of_names(OnFailure::VARIANTS),
    },
    Field {
        name: "mode",
        about: "\"enforce\" (the default) or \"shadow\": a shadow hook runs as it would and \
                its verdict is recorded (run record, decision log, metrics), but the call goes \
                on as if it were absent: its rewrite is not applied and its failure never \
                blocks.",
        schema: || one_of_names(crate::failure::Mode::VARIANTS),
    },
    Field {
        name: "config",
        about: "Any JSON, handed to the hook in every request.",
        schema: || json!({}),
    },
];

/// The file's own fields. The unknown-field check and the published schema
/// both read this list.
pub(crate) const TOP_FIELDS: &[Field] = &[
    Field {
        name: "$schema",
        about: "The JSON Schema an editor checks this file against (toolgate prints it: \
                `toolgate hooks --schema`). toolgate itself ignores it.",
        schema: || json!({"type": "string"}),
    },
    Field {
        name: "schema",
        about: "The hooks.json format this file is written in.",
        schema: || json!({"const": CONFIG_SCHEMA}),
    },
    Field {
        name: "hooks",
        about: "The hooks, in the order they are consulted (global hooks run before a \
                workspace's).",
        schema: || json!({"type": "array", "items": {"$ref": "#/$defs/hook"}}),
    },
    Field {
        name: "mode",
        about: "\"shadow\" runs every hook in this file in shadow (see a hook's `mode`); \
                \"enforce\" (the default) leaves each hook's own `mode`. It reaches this \
                file's hooks only: no file can put another layer's hooks in shadow.",
        schema: || one_of_names(crate::failure::Mode::VARIANTS),
    },
    Field {
        name: "chain_timeout_ms",
        about: "Global or managed config only: the whole chain's deadline per call, in \
                milliseconds (a global value can only lower the managed one).",
        schema: || whole_number(MIN_TIMEOUT_MS, MAX_TIMEOUT_MS),
    },
    Field {
        name: "untrusted_hooks",
        about: "Global or managed config only: what an untrusted workspace command hook's \
                calls get: \"deny\" (the default) or \"skip\" (the hook is left out, and its \
                run record says so). A managed \"deny\" binds the global config.",
        schema: || one_of_names(crate::trust::UntrustedPolicy::VARIANTS),
    },
    Field {
        name: "require_confinement",
        about: "Global or managed config only: a hook that should run confined and cannot be \
                (no Landlock) fails closed instead of running unconfined with a warning. A \
                managed true binds the global config.",
        schema: || json!({"type": "boolean"}),
    },
    Field {
        name: "unconfined_workspace_hooks",
        about: "Global or managed config only: workspace hooks the operator lets run \
                unconfined, each named by its workspace's absolute root and its name. When the \
                managed config requires confinement, only its own entries count.",
        schema: || {
            json!({"type": "array", "items": {
                "type": "object",
                "required": ["workspace", "hook"],
                "additionalProperties": false,
                "properties": {
                    "workspace": {"type": "string", "pattern": "^/"},
                    "hook": {"type": "string"},
                },
            }})
        },
    },
    Field {
        name: "confined_reads",
        about: "Global or managed config only: absolute paths every confined hook may also read \
                (and execute) beneath, besides what it reads by default (the system, its \
                snapshot and workspace, its interpreter, its PATH). When the managed config \
                requires confinement, only its own entries count.",
        schema: || {
            json!({"type": "array", "uniqueItems": true,
                   "items": {"type": "string", "pattern": "^/"}})
        },
    },
    Field {
        name: "confined_env",
        about: "Global or managed config only: variables (name to value) set in every confined \
                hook's environment, which otherwise starts empty but for PATH, HOME, TMPDIR, \
                PYTHONDONTWRITEBYTECODE and LANG (which cannot be named here). When the \
                managed config requires confinement, only its own entries count.",
        schema: || {
            json!({"type": "object",
                   "propertyNames": {"pattern": "^[A-Za-z_][A-Za-z0-9_]*$",
                                     "not": {"enum": super::RESERVED_ENV}},
                   "additionalProperties": {"type": "string"}})
        },
    },
    // Signed components (crates/toolgate-seam/src/signing.rs).
    Field {
        name: "signing",
        about: "Global or managed config only: the minisign public keys (the base64 line, \
                \"RW…\") that may sign components, and whether every component must be \
                signed (`required`); a component X is signed by X.minisig beside it.",
        schema: || {
            json!({
                "type": "object",
                "required": ["keys", "required"],
                "additionalProperties": false,
                "properties": {
                    "keys": {"type": "array", "items": {"type": "string", "pattern": "^RW[A-Za-z0-9+/]{54}$"}},
                    "required": {"type": "boolean"},
                },
            })
        },
    },
    // The managed layer's own settings (see `TopFields::managed_only`).
    Field {
        name: "managed_hooks_only",
        about: "Managed config only: true runs the managed hooks alone; the user's global \
                config and the workspace's are not read.",
        schema: || json!({"type": "boolean"}),
    },
    Field {
        name: "shadow_hooks",
        about: "Managed config only: names of global or workspace hooks that run in shadow \
                (recorded, never applied), whatever their own `mode` says.",
        schema: || json!({"type": "array", "uniqueItems": true, "items": {"type": "string", "minLength": 1}}),
    },
    Field {
        name: "forbid_on_failure_allow",
        about: "Managed config only: true makes every global or workspace hook with \
                `on_failure: \"allow\"` run as \"deny\" (a failing guard blocks the call).",
        schema: || json!({"type": "boolean"}),
    },
    Field {
        name: "allowed_registries",
        about: "Managed config only: the OCI registries (`host` or `host:port`) a hook's \
                `oci://` component may come from; any other is refused at load.",
        schema: || {
            json!({"type": "array", "uniqueItems": true, "items": {
                "type": "string",
                "pattern": "^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:[0-9]{1,5})?$",
            }})
        },
    },
];

/// A file's top-level settings besides its hooks. Both are the operator's:
/// a workspace (or host) config that sets one is refused.
#[derive(Default)]
pub(crate) struct Top {
    pub(crate) chain_timeout_ms: Option<u64>,
    pub(crate) untrusted: Option<crate::trust::UntrustedPolicy>,
    /// `require_confinement`: a hook that should be confined and cannot be
    /// fails closed.
    pub(crate) require_confinement: Option<bool>,
    /// `unconfined_workspace_hooks`: (workspace root, hook name) pairs the
    /// operator lets run without confinement.
    pub(crate) unconfined: Vec<(std::path::PathBuf, String)>,
    /// `confined_reads`: what confined hooks may also read.
    pub(crate) confined_reads: Vec<std::path::PathBuf>,
    /// `confined_env`: variables set in confined hooks' environments.
    pub(crate) confined_env: Vec<(String, String)>,
    /// `signing`: the keys that sign components, and whether they must.
    pub(crate) signing: Option<crate::signing::Signing>,
    /// The managed layer's own settings (`None` in any other file, which
    /// may not set them).
    pub(crate) managed: Option<super::ManagedSettings>,
    /// `mode`: the mode of every hook in this file.
    pub(crate) mode: Option<crate::failure::Mode>,
}

/// One call a one-shot process evaluates: only hooks that apply to it are
/// loaded.
pub(crate) type Only<'a> = Option<(Event, &'a str)>;

pub(crate) fn parse_file(
    value: Value,
    source: Source,
    path: &Path,
    (root, options, only): (&Path, &BindingOptions, Only<'_>),
    signing: &crate::signing::Layers,
    problems: &mut Vec<Problem>,
) -> (Vec<HookSpec>, Top) {
    let Value::Object(mut top) = value else {
        problems.push(Problem::file(
            path,
            "expected an object like {\"schema\": 1, \"hooks\": [...]}".into(),
        ));
        return (Vec::new(), Top::default());
    };
    let settings = TopFields {
        top: &top,
        source,
        path,
        problems,
    }
    .parse();
    // The signing rule this file's components load under: the layers read
    // before it, with this file's own `signing`.
    let options = &crate::signing::with_rule(options, source, signing, settings.signing.as_ref());
    let hooks = match top.remove("hooks") {
        None => return (Vec::new(), settings),
        Some(Value::Array(hooks)) => hooks,
        Some(other) => {
            problems.push(top_problem(
                path,
                "hooks",
                format!("expected an array of hooks, got {}", type_name(&other)),
            ));
            return (Vec::new(), settings);
        }
    };
    let specs = parse_hooks(hooks, source, path, (root, options, only), problems);
    (specs, settings)
}

/// A problem in one of the file's own fields.
fn top_problem(path: &Path, field: &str, message: String) -> Problem {
    Problem {
        field: Some(field.to_owned()),
        ..Problem::file(path, message)
    }
}

/// The file's own fields: its schema, and the settings only the operator's
/// global config may give.
struct TopFields<'a> {
    top: &'a Map<String, Value>,
    source: Source,
    path: &'a Path,
    problems: &'a mut Vec<Problem>,
}

impl<'a> TopFields<'a> {
    fn parse(mut self) -> Top {
        let known = names(TOP_FIELDS);
        for key in self.top.keys() {
            if !known.contains(&key.as_str()) {
                self.problem(key, unknown_field(key, &known));
            }
        }
        // For editors only: any string, never read.
        if let Some(other) = self.top.get("$schema").filter(|v| !v.is_string()) {
            let message = format!(
                "expected the URL or path of a JSON Schema (a string; toolgate ignores it), got {}",
                type_name(other)
            );
            self.problem("$schema", message);
        }
        match self.top.get("schema") {
            Some(Value::Number(n)) if n.as_u64() == Some(CONFIG_SCHEMA) => {}
            Some(Value::Number(n)) => self.problem(
                "schema",
                format!("unsupported schema {n}; this toolgate reads schema {CONFIG_SCHEMA}"),
            ),
            // Not quoted: any value but a number is the file's content (found
            // by the property tests, tests/all/props.rs).
            Some(other) => self.problem(
                "schema",
                format!(
                    "expected the number {CONFIG_SCHEMA}, got {}",
                    type_name(other)
                ),
            ),
            None => self.problem(
                "schema",
                format!("missing; write \"schema\": {CONFIG_SCHEMA}"),
            ),
        }
        Top {
            chain_timeout_ms: self.chain_timeout_ms(),
            untrusted: self.untrusted(),
            require_confinement: self.require_confinement(),
            unconfined: self.unconfined(),
            confined_reads: self.confined_reads(),
            confined_env: self.confined_env(),
            signing: self.signing(),
            managed: self.managed(),
            mode: self.mode(),
        }
    }

    /// `mode`, for the whole file.
    fn mode(&mut self) -> Option<crate::failure::Mode> {
        let value = self.top.get("mode")?;
        let mode = parse_mode(value);
        if mode.is_none() {
            self.problem("mode", mode_problem(value));
        }
        mode
    }

    /// `shadow_hooks`: hook names, in the managed file only.
    fn shadow_hooks(&mut self) -> Vec<String> {
        let Some(value) = self.managed_only("shadow_hooks") else {
            return Vec::new();
        };
        let names = value.as_array().and_then(|items| {
            items
                .iter()
                .map(|i| i.as_str().filter(|s| !s.is_empty()).map(str::to_owned))
                .collect::<Option<Vec<_>>>()
        });
        names.unwrap_or_else(|| {
            self.problem(
                "shadow_hooks",
                "expected an array of hook names (non-empty strings)".into(),
            );
            Vec::new()
        })
    }

    /// A managed-only field's value in the managed file; a problem saying
    /// so in any other.
    fn managed_only(&mut self, field: &str) -> Option<&'a Value> {
        let top: &'a Map<String, Value> = self.top;
        let value = top.get(field)?;
        match self.source {
            Source::Managed => Some(value),
            Source::Global | Source::Workspace | Source::Host => {
                self.problem(
                    field,
                    format!(
                        "only the managed layer (the root-owned /etc/toolgate/hooks.json) sets \
                         `{field}`; a {} config cannot",
                        self.source
                    ),
                );
                None
            }
        }
    }

    fn managed_bool(&mut self, field: &str) -> bool {
        let Some(value) = self.managed_only(field) else {
            return false;
        };
        value.as_bool().unwrap_or_else(|| {
            self.problem(
                field,
                format!("expected true or false, got {}", type_name(value)),
            );
            false
        })
    }

    /// The managed layer's settings, in the managed file only (a problem
    /// for each one set in another file).
    fn managed(&mut self) -> Option<super::ManagedSettings> {
        let hooks_only = self.managed_bool("managed_hooks_only");
        let forbid_on_failure_allow = self.managed_bool("forbid_on_failure_allow");
        let registries = self.allowed_registries();
        let shadow_hooks = self.shadow_hooks();
        (self.source == Source::Managed).then_some(super::ManagedSettings {
            hooks_only,
            forbid_on_failure_allow,
            shadow_hooks,
            allowed_registries: registries,
            ..super::ManagedSettings::default()
        })
    }

    /// `allowed_registries`: `host` or `host:port` each, kept lowercased
    /// (host names are case-insensitive).
    fn allowed_registries(&mut self) -> Option<Vec<String>> {
        let value = self.managed_only("allowed_registries")?;
        let parsed = value.as_array().and_then(|items| {
            items
                .iter()
                .map(|item| item.as_str().filter(|s| registry_address(s)))
                .map(|s| s.map(str::to_ascii_lowercase))
                .collect::<Option<Vec<_>>>()
        });
        if parsed.is_none() {
            self.problem(
                "allowed_registries",
                "expected an array of registry addresses, each `host` or `host:port` (no \
                 scheme, no path)"
                    .into(),
            );
        }
        parsed
    }

    fn problem(&mut self, field: &str, message: String) {
        self.problems.push(top_problem(self.path, field, message));
    }

    /// `field`'s value when the operator's global config gives it; a
    /// problem saying `why_not` when a workspace (or code) does.
    fn operator_only(&mut self, field: &str, why_not: &str) -> Option<&'a Value> {
        let top: &'a Map<String, Value> = self.top;
        let value = top.get(field)?;
        match self.source {
            Source::Global | Source::Managed => Some(value),
            Source::Workspace | Source::Host => {
                self.problem(field, why_not.to_owned());
                None
            }
        }
    }

    fn chain_timeout_ms(&mut self) -> Option<u64> {
        let value = self.operator_only(
            "chain_timeout_ms",
            "only the operator's global config sets the chain's deadline; a workspace cannot \
             change it",
        )?;
        let mut ctx = HookCtx::new(self.path, 0);
        let parsed = ctx.bounded(
            Some(value),
            "chain_timeout_ms",
            MIN_TIMEOUT_MS,
            MAX_TIMEOUT_MS,
            0,
            " ms",
        );
        self.problems.extend(
            ctx.problems
                .into_iter()
                .map(|p| Problem { index: None, ..p }),
        );
        parsed
    }

    fn untrusted(&mut self) -> Option<crate::trust::UntrustedPolicy> {
        let value = self.operator_only(
            "untrusted_hooks",
            "only the operator's global config decides what happens to untrusted workspace \
             hooks; a workspace cannot",
        )?;
        let parsed = value.as_str().and_then(|s| s.parse().ok());
        if parsed.is_none() {
            let message = format!(
                "expected \"deny\" (the default) or \"skip\", got {}",
                refused_word(value)
            );
            self.problem("untrusted_hooks", message);
        }
        parsed
    }

    fn require_confinement(&mut self) -> Option<bool> {
        let value = self.operator_only("require_confinement", CONFINEMENT_IS_THE_OPERATORS)?;
        let parsed = value.as_bool();
        if parsed.is_none() {
            let message = format!("expected true or false, got {}", type_name(value));
            self.problem("require_confinement", message);
        }
        parsed
    }

    fn confined_reads(&mut self) -> Vec<std::path::PathBuf> {
        let Some(value) = self.operator_only("confined_reads", CONFINEMENT_IS_THE_OPERATORS) else {
            return Vec::new();
        };
        let paths = value.as_array().and_then(|items| {
            items
                .iter()
                .map(|item| {
                    let path = Path::new(item.as_str()?);
                    path.is_absolute().then(|| path.to_owned())
                })
                .collect::<Option<Vec<_>>>()
        });
        paths.unwrap_or_else(|| {
            self.problem(
                "confined_reads",
                "expected an array of absolute paths".into(),
            );
            Vec::new()
        })
    }

    fn confined_env(&mut self) -> Vec<(String, String)> {
        let Some(value) = self.operator_only("confined_env", CONFINEMENT_IS_THE_OPERATORS) else {
            return Vec::new();
        };
        let Some(pairs) = value.as_object() else {
            self.problem(
                "confined_env",
                "expected an object of variable names to string values".into(),
            );
            return Vec::new();
        };
        let mut env = Vec::new();
        for (name, value) in pairs {
            let plain = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            match value.as_str() {
                _ if !plain => self.problem(
                    "confined_env",
                    format!(
                        "{:?} is not a variable name (letters, digits and _)",
                        crate::text::excerpt(name, 64)
                    ),
                ),
                _ if super::RESERVED_ENV.contains(&name.as_str()) => self.problem(
                    "confined_env",
                    format!("{name} is toolgate's to set for a confined hook"),
                ),
                Some(value) => env.push((name.clone(), value.to_owned())),
                None => self.problem(
                    "confined_env",
                    format!("{name}: expected a string, got {}", type_name(value)),
                ),
            }
        }
        env
    }

    fn unconfined(&mut self) -> Vec<(std::path::PathBuf, String)> {
        let Some(value) =
            self.operator_only("unconfined_workspace_hooks", CONFINEMENT_IS_THE_OPERATORS)
        else {
            return Vec::new();
        };
        let items = value.as_array().and_then(|items| {
            items
                .iter()
                .map(|item| {
                    let ws = item.get("workspace").and_then(Value::as_str)?;
                    let hook = item.get("hook").and_then(Value::as_str)?;
                    (item.as_object()?.len() == 2 && Path::new(ws).is_absolute())
                        .then(|| (crate::trust::canonical_root(Path::new(ws)), hook.to_owned()))
                })
                .collect::<Option<Vec<_>>>()
        });
        items.unwrap_or_else(|| {
            self.problem(
                "unconfined_workspace_hooks",
                "expected an array of {\"workspace\": \"/absolute/root\", \"hook\": \"name\"}"
                    .into(),
            );
            Vec::new()
        })
    }
}

impl TopFields<'_> {
    fn signing(&mut self) -> Option<crate::signing::Signing> {
        let value = self.operator_only(
            "signing",
            "only the operator (the managed or global config) decides which keys sign components, \
             and whether they must; a workspace cannot",
        )?;
        match crate::signing::parse(value) {
            Ok(signing) => Some(signing),
            Err(problems) => {
                for (field, message) in problems {
                    self.problem(&field, message);
                }
                None
            }
        }
    }
}

/// `host` or `host:port`: letters, digits, dots and dashes, then a port of
/// at most 65535. What the schema's pattern says, with the port's bound.
fn registry_address(s: &str) -> bool {
    let (host, port) = match s.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (s, None),
    };
    let host_ok = !host.is_empty()
        && !host.starts_with(['-', '.'])
        && !host.ends_with(['-', '.'])
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-');
    let port_ok = port.is_none_or(|p| {
        !p.is_empty()
            && p.len() <= 5
            && p.chars().all(|c| c.is_ascii_digit())
            && p.parse::<u16>().is_ok()
    });
    host_ok && port_ok
}

const CONFINEMENT_IS_THE_OPERATORS: &str =
    "only the operator's global config decides how hooks are confined; a workspace cannot";

/// Each hook of a file, checked and (when it applies) loaded; names unique.
fn parse_hooks(
    hooks: Vec<Value>,
    source: Source,
    path: &Path,
    (root, options, only): (&Path, &BindingOptions, Only<'_>),
    problems: &mut Vec<Problem>,
) -> Vec<HookSpec> {
    let mut specs: Vec<HookSpec> = Vec::new();
    // Hooks left out because they do not apply to the one call: their names
    // still count for the duplicate check.
    let mut left_out: Vec<String> = Vec::new();
    let duplicate = |name: &str, specs: &[HookSpec], left_out: &[String]| {
        specs.iter().any(|s| s.name == name) || left_out.iter().any(|n| n == name)
    };
    const DUPLICATE: &str =
        "another hook in this file has the same name; names identify hooks in run records";
    for (index, hook) in hooks.into_iter().enumerate() {
        let mut ctx = HookCtx::new(path, index);
        let parsed = parse_hook(hook, source, (root, options, only), &mut ctx);
        if parsed.is_none()
            && ctx.problems.is_empty()
            && let Some(name) = ctx.name.clone()
        {
            if duplicate(&name, &specs, &left_out) {
                ctx.problem("name", DUPLICATE);
            }
            left_out.push(name);
        }
        if let Some(spec) = parsed {
            if duplicate(&spec.name, &specs, &left_out) {
                ctx.problem("name", DUPLICATE);
            } else if ctx.problems.is_empty() {
                specs.push(spec);
            }
        }
        problems.append(&mut ctx.problems);
    }
    specs
}

/// `name`: a non-empty string without control characters.
fn parse_name(value: Option<&Value>, ctx: &mut HookCtx<'_>) -> Option<String> {
    match value {
        Some(Value::String(n)) if !n.trim().is_empty() && !n.chars().any(char::is_control) => {
            ctx.name = Some(n.clone());
            Some(n.clone())
        }
        Some(Value::String(_)) => {
            ctx.problem(
                "name",
                "must be a non-empty name without control characters",
            );
            None
        }
        Some(other) => {
            ctx.problem(
                "name",
                format!("expected a string, got {}", type_name(other)),
            );
            None
        }
        None => {
            ctx.problem("name", "missing; every hook needs a name");
            None
        }
    }
}

/// Every field no part of the hook reads: the common ones and each
/// binding's own.
fn unknown_fields(obj: &Map<String, Value>, ctx: &mut HookCtx<'_>) {
    let known = names(hook_fields());
    for key in obj.keys() {
        if !known.contains(&key.as_str()) {
            ctx.problem(key, unknown_field(key, &known));
        }
    }
}

/// Every field a hook may have: the common ones, then each binding's key
/// and own fields, in registry order.
pub(crate) fn hook_fields() -> impl Iterator<Item = &'static Field> + Clone {
    COMMON_FIELDS.iter().chain(
        CONFIGURABLE
            .iter()
            .flat_map(|b| std::iter::once(&b.key).chain(b.fields)),
    )
}

fn names<'a>(fields: impl IntoIterator<Item = &'a Field>) -> Vec<&'static str> {
    fields.into_iter().map(|f| f.name).collect()
}

/// Whether a hook applies to the one call a process evaluates. A call
/// before the tool may be answered with `replace`, whose result then goes
/// through the post chain in the same process: a pre call needs the post
/// hooks for its tool too.
fn applies(
    (event, tool): (Event, &str),
    events: &[Event],
    tools: &Option<Option<Vec<String>>>,
    matcher: &Option<Option<Regex>>,
) -> bool {
    (events.contains(&event) || event == Event::PreToolUse)
        && crate::contract::ToolFilter {
            tools: tools.clone().flatten(),
            matcher: matcher.clone().flatten(),
        }
        .matches(tool)
}

fn parse_hook(
    value: Value,
    source: Source,
    (root, options, only): (&Path, &BindingOptions, Only<'_>),
    ctx: &mut HookCtx<'_>,
) -> Option<HookSpec> {
    let Value::Object(obj) = value else {
        ctx.problem(
            "",
            format!("expected a hook object, got {}", type_name(&value)),
        );
        return None;
    };
    // The name first, so every later problem can cite it.
    let name = parse_name(obj.get("name"), ctx);
    unknown_fields(&obj, ctx);
    let binding = select_binding(&obj, ctx)?;
    let events = parse_events(obj.get("event"), (binding.default_events)(&obj), ctx);
    let tools = parse_tools(obj.get("tools"), ctx);
    let (matcher, compiled_matcher) = parse_matcher(obj.get("matcher"), ctx);
    let timeout_ms = ctx.bounded(
        obj.get("timeout_ms"),
        "timeout_ms",
        MIN_TIMEOUT_MS,
        MAX_TIMEOUT_MS,
        binding.default_timeout_ms,
        " ms",
    );
    let on_failure = parse_on_failure(obj.get("on_failure"), ctx);
    let mode = match obj.get("mode") {
        None => Some(crate::failure::Mode::Enforce),
        Some(value) => {
            let mode = parse_mode(value);
            if mode.is_none() {
                ctx.problem("mode", mode_problem(value));
            }
            mode
        }
    };
    let config = obj.get("config").cloned();
    let load = match (only, &events) {
        (None, _) | (Some(_), None) => true,
        (Some(call), Some(events)) => applies(call, events, &tools, &compiled_matcher),
    };
    let common = Common {
        source,
        root,
        timeout_ms,
        config: config.as_ref(),
        options,
        load,
    };
    let spec = (binding.parse)(&obj, &common, ctx);
    if let Some(spec) = &spec {
        missing_script(spec, binding.key.name, root, ctx);
    }
    if !load {
        return None;
    }
    Some(HookSpec {
        name: name?,
        source,
        file: ctx.path.to_owned(),
        index: ctx.index,
        binding: spec?,
        events: events?,
        tools: tools?,
        matcher,
        timeout_ms: timeout_ms?,
        on_failure: on_failure?,
        mode: mode?,
        mode_by: None,
        config,
        trust: None,
        compiled_matcher: compiled_matcher?,
        gate: None,
        on_failure_forced: false,
    })
}

/// A script handed to an interpreter toolgate knows (`["python3",
/// "hooks/guard.py"]`) that is not there: a problem at load, as a missing
/// program is, rather than a failure at every call. Which word is the
/// script is trust's own reading (`trust::interpreter_script`), asked of
/// what the binding says it runs, so this names no binding and keeps no
/// second list of interpreters. Only "nothing there" is reported: a script
/// that exists but cannot be pinned (outside the workspace, say) is the
/// trust review's to refuse, with its reason.
///
/// The message names the element and the path looked for (resolved
/// against the root, one line, bounded): a typo (`gaurd.py`) is seen at a
/// glance, as a missing program's name is. It is the one value from the
/// file a problem quotes besides a program's (tests/all/props.rs allows
/// exactly these).
fn missing_script(spec: &BindingSpec, key: &str, root: &Path, ctx: &mut HookCtx<'_>) {
    let WorkspaceTrust::Program { argv, .. } = spec.as_binding().workspace_trust() else {
        return;
    };
    let Some(at) = crate::trust::interpreter_script(argv) else {
        return;
    };
    let looked_for = root.join(&argv[at]);
    let missing =
        std::fs::metadata(&looked_for).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound);
    if missing {
        ctx.problem(
            key,
            format!(
                "element {at}, the script the interpreter runs, does not exist: looked for {}",
                crate::text::excerpt(&looked_for.to_string_lossy(), 300)
            ),
        );
    }
}

/// The binding a hook selects by its key field (`command`, `wasm`); the
/// first binding when it names none (its parser reports what is missing).
/// A field of a binding the hook did not select is a problem.
fn select_binding(
    obj: &Map<String, Value>,
    ctx: &mut HookCtx<'_>,
) -> Option<&'static Configurable<BindingSpec>> {
    let chosen: Vec<&'static Configurable<BindingSpec>> = CONFIGURABLE
        .iter()
        .copied()
        .filter(|b| obj.contains_key(b.key.name))
        .collect();
    let binding = match chosen.as_slice() {
        [] => {
            // Every binding, from the registry: a new one is offered here
            // without anyone editing this text.
            let each: Vec<String> = CONFIGURABLE
                .iter()
                .map(|b| format!("`{}` ({})", b.key.name, b.example))
                .collect();
            ctx.problem(
                CONFIGURABLE[0].key.name,
                format!("missing; give {}", each.join(" or ")),
            );
            CONFIGURABLE[0]
        }
        [one] => one,
        [.., last] => {
            let keys: Vec<String> = chosen.iter().map(|b| format!("`{}`", b.key.name)).collect();
            ctx.problem(
                last.key.name,
                format!("a hook has either {}, not both", keys.join(" or ")),
            );
            return None;
        }
    };
    for other in CONFIGURABLE
        .iter()
        .filter(|b| b.key.name != binding.key.name)
    {
        for field in other.fields {
            if obj.contains_key(field.name) {
                ctx.problem(
                    field.name,
                    format!(
                        "only for `{}` hooks; this is a `{}` hook",
                        other.key.name, binding.key.name
                    ),
                );
            }
        }
    }
    Some(binding)
}

fn parse_events(
    value: Option<&Value>,
    default: &[&str],
    ctx: &mut HookCtx<'_>,
) -> Option<Vec<Event>> {
    let names: Vec<&Value> = match value {
        None => return Some(default.iter().filter_map(|e| Event::from_wire(e)).collect()),
        Some(Value::Array(items)) if items.is_empty() => {
            ctx.problem(
                "event",
                "an empty list would never run; omit `event` for pre_tool_use",
            );
            return None;
        }
        Some(Value::Array(items)) => items.iter().collect(),
        Some(v) => vec![v],
    };
    let mut events = Vec::new();
    for name in names {
        match name {
            Value::String(s) => match Event::from_wire(s) {
                Some(e) if !events.contains(&e) => events.push(e),
                Some(_) => {
                    ctx.problem("event", format!("{s:?} is listed twice"));
                    return None;
                }
                None => {
                    ctx.problem(
                        "event",
                        format!(
                            "unknown event {s:?}; expected \"pre_tool_use\", \"post_tool_use\" \
                             or \"list_tools\""
                        ),
                    );
                    return None;
                }
            },
            other => {
                ctx.problem(
                    "event",
                    format!("expected an event name, got {}", type_name(other)),
                );
                return None;
            }
        }
    }
    Some(events)
}

fn parse_tools(value: Option<&Value>, ctx: &mut HookCtx<'_>) -> Option<Option<Vec<String>>> {
    let items = match value {
        None => return Some(None),
        Some(Value::Array(items)) => items,
        Some(other) => {
            ctx.problem(
                "tools",
                format!("expected an array of tool names, got {}", type_name(other)),
            );
            return None;
        }
    };
    if items.is_empty() {
        ctx.problem(
            "tools",
            "an empty list would match no tool; omit `tools` to match every tool",
        );
        return None;
    }
    let mut tools = Vec::new();
    for item in items {
        match item {
            Value::String(s) if !s.is_empty() => tools.push(s.clone()),
            other => {
                ctx.problem(
                    "tools",
                    format!(
                        "expected non-empty tool names, got {}",
                        toolgate_seam::parse::got_instead_of_text(other, "an empty name")
                    ),
                );
                return None;
            }
        }
    }
    Some(Some(tools))
}

fn parse_matcher(
    value: Option<&Value>,
    ctx: &mut HookCtx<'_>,
) -> (Option<String>, Option<Option<Regex>>) {
    match value {
        None => (None, Some(None)),
        Some(Value::String(pattern)) => match whole_name_matcher(pattern) {
            Ok(re) => (Some(pattern.clone()), Some(Some(re))),
            Err(e) => {
                ctx.problem("matcher", format!("not a valid regex: {e}"));
                (None, None)
            }
        },
        Some(other) => {
            ctx.problem(
                "matcher",
                format!("expected a regex string, got {}", type_name(other)),
            );
            (None, None)
        }
    }
}

fn parse_mode(value: &Value) -> Option<crate::failure::Mode> {
    match value.as_str()? {
        "enforce" => Some(crate::failure::Mode::Enforce),
        "shadow" => Some(crate::failure::Mode::Shadow),
        _ => None,
    }
}

fn mode_problem(value: &Value) -> String {
    format!(
        "unknown mode {}; expected \"enforce\" (the default) or \"shadow\"",
        refused_word(value)
    )
}

/// A refused value of a field that takes one of a few words: the value
/// when it is a word (a string, so a typo is seen) or a number, `true`,
/// `false` or `null`; only its kind when it is an object or an array,
/// whose contents are the file's, not a word (found by
/// `props::hooks_json_errors_never_quote_the_file`: an `on_failure`
/// object was quoted whole).
fn refused_word(value: &Value) -> String {
    match value {
        Value::Object(_) => "(an object)".to_owned(),
        Value::Array(_) => "(an array)".to_owned(),
        word => word.to_string(),
    }
}

fn parse_on_failure(value: Option<&Value>, ctx: &mut HookCtx<'_>) -> Option<OnFailure> {
    match value {
        None => Some(OnFailure::Deny),
        Some(Value::String(s)) if s == "deny" => Some(OnFailure::Deny),
        Some(Value::String(s)) if s == "allow" => Some(OnFailure::Allow),
        Some(other) => {
            ctx.problem(
                "on_failure",
                format!(
                    "unknown policy {}; expected \"deny\" (the default) or \"allow\"",
                    refused_word(other)
                ),
            );
            None
        }
    }
}

fn unknown_field(key: &str, known: &[&str]) -> String {
    let closest = known
        .iter()
        .map(|k| (strsim::jaro_winkler(key, k), *k))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0));
    match closest {
        Some((_, k)) => format!("unknown field (did you mean `{k}`?)"),
        None => format!("unknown field; known fields: {}", known.join(", ")),
    }
}
