//! One hooks.json file, parsed: the top-level fields, then each hook's
//! common fields here, then its binding's own fields by the binding (see
//! `binding::CONFIGURABLE`). Nothing here knows a binding by name.

use super::{HookSpec, MAX_TIMEOUT_MS, MIN_TIMEOUT_MS, Problem};
use crate::binding::wasm::WasmOptions;
use crate::binding::{CONFIGURABLE, Configurable};
use crate::contract::Event;
use crate::failure::OnFailure;
use crate::runner::Source;
use regex_automata::meta::Regex;
use serde_json::{Map, Value};
use std::path::Path;

/// The hooks.json schema this build reads.
pub const CONFIG_SCHEMA: u64 = 1;

/// Fields every hook may have, whatever its binding.
const COMMON_FIELDS: &[&str] = &[
    "name",
    "event",
    "tools",
    "matcher",
    "timeout_ms",
    "on_failure",
    "config",
];
const TOP_FIELDS: &[&str] = &[
    "schema",
    "hooks",
    "chain_timeout_ms",
    "untrusted_hooks",
    "require_confinement",
    "unconfined_workspace_hooks",
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
}

/// What a binding's parser gets besides its own fields: where the hook came
/// from and the common fields it may need.
pub(crate) struct Common<'a> {
    pub(crate) source: Source,
    /// The config's root: relative paths resolve against it.
    pub(crate) root: &'a Path,
    /// `timeout_ms`, when valid.
    pub(crate) timeout_ms: Option<u64>,
    /// The hook's `config`.
    pub(crate) config: Option<&'a Value>,
    /// How components are loaded.
    pub(crate) wasm: &'a WasmOptions,
    /// Whether to load what the hook runs: false when the process evaluates
    /// one call the hook does not apply to (its fields are still checked).
    pub(crate) load: bool,
}

/// One call a one-shot process evaluates: only hooks that apply to it are
/// loaded.
pub(crate) type Only<'a> = Option<(Event, &'a str)>;

pub(crate) fn parse_file(
    value: Value,
    source: Source,
    path: &Path,
    (root, wasm, only): (&Path, &WasmOptions, Only<'_>),
    problems: &mut Vec<Problem>,
) -> (Vec<HookSpec>, Top) {
    let top_problem = |field: &str, message: String| Problem {
        field: Some(field.to_owned()),
        ..Problem::file(path, message)
    };
    let Value::Object(mut top) = value else {
        problems.push(Problem::file(
            path,
            "expected an object like {\"schema\": 1, \"hooks\": [...]}".into(),
        ));
        return (Vec::new(), Top::default());
    };
    for key in top.keys() {
        if !TOP_FIELDS.contains(&key.as_str()) {
            problems.push(top_problem(key, unknown_field(key, TOP_FIELDS)));
        }
    }
    match top.get("schema") {
        Some(Value::Number(n)) if n.as_u64() == Some(CONFIG_SCHEMA) => {}
        Some(other) => problems.push(top_problem(
            "schema",
            format!("unsupported schema {other}; this toolgate reads schema {CONFIG_SCHEMA}"),
        )),
        None => problems.push(top_problem(
            "schema",
            format!("missing; write \"schema\": {CONFIG_SCHEMA}"),
        )),
    }
    let chain_timeout_ms = match (top.get("chain_timeout_ms"), source) {
        (None, _) => None,
        (Some(_), Source::Workspace | Source::Host) => {
            problems.push(top_problem(
                "chain_timeout_ms",
                "only the operator's global config sets the chain's deadline; a workspace \
                 cannot change it"
                    .into(),
            ));
            None
        }
        (Some(value), Source::Global) => {
            let mut ctx = HookCtx {
                path,
                index: 0,
                name: None,
                problems: Vec::new(),
            };
            let parsed = ctx.bounded(
                Some(value),
                "chain_timeout_ms",
                MIN_TIMEOUT_MS,
                MAX_TIMEOUT_MS,
                0,
                " ms",
            );
            problems.extend(
                ctx.problems
                    .into_iter()
                    .map(|p| Problem { index: None, ..p }),
            );
            parsed
        }
    };
    let untrusted = match (top.get("untrusted_hooks"), source) {
        (None, _) => None,
        (Some(_), Source::Workspace | Source::Host) => {
            problems.push(top_problem(
                "untrusted_hooks",
                "only the operator's global config decides what happens to untrusted \
                 workspace hooks; a workspace cannot"
                    .into(),
            ));
            None
        }
        (Some(Value::String(s)), Source::Global)
            if s.parse::<crate::trust::UntrustedPolicy>().is_ok() =>
        {
            s.parse().ok()
        }
        (Some(other), Source::Global) => {
            problems.push(top_problem(
                "untrusted_hooks",
                format!("expected \"deny\" (the default) or \"skip\", got {other}"),
            ));
            None
        }
    };
    let operator_only = |field: &str, problems: &mut Vec<Problem>| {
        problems.push(top_problem(
            field,
            "only the operator's global config decides how hooks are confined; a workspace \
             cannot"
                .into(),
        ));
    };
    let require_confinement = match (top.get("require_confinement"), source) {
        (None, _) => None,
        (Some(_), Source::Workspace | Source::Host) => {
            operator_only("require_confinement", problems);
            None
        }
        (Some(Value::Bool(b)), Source::Global) => Some(*b),
        (Some(other), Source::Global) => {
            problems.push(top_problem(
                "require_confinement",
                format!("expected true or false, got {other}"),
            ));
            None
        }
    };
    let unconfined = match (top.get("unconfined_workspace_hooks"), source) {
        (None, _) => Vec::new(),
        (Some(_), Source::Workspace | Source::Host) => {
            operator_only("unconfined_workspace_hooks", problems);
            Vec::new()
        }
        (Some(value), Source::Global) => {
            let items = value.as_array().map(|items| {
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
            match items.flatten() {
                Some(items) => items,
                None => {
                    problems.push(top_problem(
                        "unconfined_workspace_hooks",
                        "expected an array of {\"workspace\": \"/absolute/root\", \"hook\": \"name\"}"
                            .into(),
                    ));
                    Vec::new()
                }
            }
        }
    };
    let settings = Top {
        chain_timeout_ms,
        untrusted,
        require_confinement,
        unconfined,
    };
    let hooks = match top.remove("hooks") {
        None => return (Vec::new(), settings),
        Some(Value::Array(hooks)) => hooks,
        Some(other) => {
            problems.push(top_problem(
                "hooks",
                format!("expected an array of hooks, got {}", type_name(&other)),
            ));
            return (Vec::new(), settings);
        }
    };
    let mut specs: Vec<HookSpec> = Vec::new();
    // Hooks left out because they do not apply to the one call: their names
    // still count for the duplicate check.
    let mut left_out: Vec<String> = Vec::new();
    for (index, hook) in hooks.into_iter().enumerate() {
        let mut ctx = HookCtx {
            path,
            index,
            name: None,
            problems: Vec::new(),
        };
        let parsed = parse_hook(hook, source, (root, wasm, only), &mut ctx);
        let duplicate = |name: &str, specs: &[HookSpec], left_out: &[String]| {
            specs.iter().any(|s| s.name == name) || left_out.iter().any(|n| n == name)
        };
        if parsed.is_none()
            && ctx.problems.is_empty()
            && let Some(name) = ctx.name.clone()
        {
            if duplicate(&name, &specs, &left_out) {
                ctx.problem(
                    "name",
                    "another hook in this file has the same name; names identify hooks in run records",
                );
            }
            left_out.push(name);
        }
        if let Some(spec) = parsed {
            if duplicate(&spec.name, &specs, &left_out) {
                ctx.problem(
                    "name",
                    "another hook in this file has the same name; names identify hooks in run records",
                );
            } else if ctx.problems.is_empty() {
                specs.push(spec);
            }
        }
        problems.append(&mut ctx.problems);
    }
    (specs, settings)
}

/// Where problems in one hook are collected, each naming the file, the
/// hook's index and name, and the field.
pub(crate) struct HookCtx<'a> {
    path: &'a Path,
    index: usize,
    name: Option<String>,
    problems: Vec<Problem>,
}

impl HookCtx<'_> {
    /// Records a problem in `field` (`""` for the hook as a whole).
    pub(crate) fn problem(&mut self, field: &str, message: impl Into<String>) {
        self.problems.push(Problem {
            file: self.path.to_owned(),
            index: Some(self.index),
            name: self.name.clone(),
            field: (!field.is_empty()).then(|| field.to_owned()),
            message: message.into(),
        });
    }

    /// Whether no problem was found in this hook so far.
    pub(crate) fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }

    /// A path a hook names, resolved against the config's root. When
    /// `confined` and the config is a workspace's, it must stay beneath the
    /// workspace root after symlinks, whatever it looks like (absolute, `..`,
    /// a symlink out). A refusal is reported on `field`.
    pub(crate) fn resolve(
        &mut self,
        (field, what): (&str, &str),
        written: &str,
        common: &Common<'_>,
        confined: bool,
    ) -> Option<std::path::PathBuf> {
        let joined = common.root.join(written);
        let checked = match common.source {
            Source::Workspace if confined => crate::safe_fs::beneath(&joined, common.root),
            _ => Ok(joined.clone()),
        };
        match checked {
            Ok(path) => Some(path),
            Err(e) => {
                self.refused_path(field, what, written, &joined, common.root, e);
                None
            }
        }
    }

    /// Reports why a path a hook names was refused.
    pub(crate) fn refused_path(
        &mut self,
        field: &str,
        what: &str,
        written: &str,
        resolved: &Path,
        root: &Path,
        error: crate::safe_fs::ReadFileError,
    ) {
        let message = match error {
            crate::safe_fs::ReadFileError::NotFound => format!(
                "{what} {written:?} not found (resolved to {}; relative paths resolve against {})",
                resolved.display(),
                root.display()
            ),
            e => format!("{what} {written:?} {}", crate::text::error_chain(&e)),
        };
        self.problem(field, message);
    }

    /// A whole number in `min..=max` (or `default` when absent).
    pub(crate) fn bounded(
        &mut self,
        value: Option<&Value>,
        field: &str,
        min: u64,
        max: u64,
        default: u64,
        unit: &str,
    ) -> Option<u64> {
        match value {
            None => Some(default),
            Some(Value::Number(n)) => match n.as_u64() {
                Some(v) if (min..=max).contains(&v) => Some(v),
                _ => {
                    self.problem(
                        field,
                        format!(
                            "{n} is out of range; expected a whole number in {min}..={max}{unit}"
                        ),
                    );
                    None
                }
            },
            Some(other) => {
                self.problem(
                    field,
                    format!(
                        "expected a whole number in {min}..={max}{unit}, got {}",
                        type_name(other)
                    ),
                );
                None
            }
        }
    }
}

fn parse_hook(
    value: Value,
    source: Source,
    (root, wasm, only): (&Path, &WasmOptions, Only<'_>),
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
    let name = match obj.get("name") {
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
    };
    let known: Vec<&str> = COMMON_FIELDS
        .iter()
        .copied()
        .chain(
            CONFIGURABLE
                .iter()
                .flat_map(|b| std::iter::once(b.key).chain(b.fields.iter().copied())),
        )
        .collect();
    for key in obj.keys() {
        if !known.contains(&key.as_str()) {
            ctx.problem(key, unknown_field(key, &known));
        }
    }
    let binding = select_binding(&obj, ctx)?;
    let events = parse_events(obj.get("event"), ctx);
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
    let config = obj.get("config").cloned();
    let load = match (only, &events) {
        (None, _) => true,
        // A call before the tool may be answered with `replace`, whose
        // result then goes through the post chain in the same process: a
        // pre call needs the post hooks for its tool too.
        (Some((event, tool)), Some(events)) => {
            (events.contains(&event) || event == Event::PreToolUse)
                && crate::binding::ToolFilter {
                    tools: tools.clone().flatten(),
                    matcher: compiled_matcher.clone().flatten(),
                }
                .matches(tool)
        }
        (Some(_), None) => true,
    };
    let common = Common {
        source,
        root,
        timeout_ms,
        config: config.as_ref(),
        wasm,
        load,
    };
    let spec = (binding.parse)(&obj, &common, ctx);
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
        config,
        trust: None,
        compiled_matcher: compiled_matcher?,
        gate: None,
    })
}

/// The binding a hook selects by its key field (`command`, `wasm`); the
/// first binding when it names none (its parser reports what is missing).
/// A field of a binding the hook did not select is a problem.
fn select_binding(
    obj: &Map<String, Value>,
    ctx: &mut HookCtx<'_>,
) -> Option<&'static Configurable> {
    let chosen: Vec<&'static Configurable> = CONFIGURABLE
        .iter()
        .copied()
        .filter(|b| obj.contains_key(b.key))
        .collect();
    let binding = match chosen.as_slice() {
        [] => CONFIGURABLE[0],
        [one] => one,
        [.., last] => {
            let keys: Vec<String> = chosen.iter().map(|b| format!("`{}`", b.key)).collect();
            ctx.problem(
                last.key,
                format!("a hook has either {}, not both", keys.join(" or ")),
            );
            return None;
        }
    };
    for other in CONFIGURABLE.iter().filter(|b| b.key != binding.key) {
        for field in other.fields {
            if obj.contains_key(*field) {
                ctx.problem(
                    field,
                    format!(
                        "only for `{}` hooks; this is a `{}` hook",
                        other.key, binding.key
                    ),
                );
            }
        }
    }
    Some(binding)
}

fn parse_events(value: Option<&Value>, ctx: &mut HookCtx<'_>) -> Option<Vec<Event>> {
    let names: Vec<&Value> = match value {
        None => return Some(vec![Event::PreToolUse]),
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
            Value::String(s) => {
                match Event::from_wire(s) {
                    Some(e) if !events.contains(&e) => events.push(e),
                    Some(_) => {
                        ctx.problem("event", format!("{s:?} is listed twice"));
                        return None;
                    }
                    None => {
                        ctx.problem(
                        "event",
                        format!("unknown event {s:?}; expected \"pre_tool_use\" or \"post_tool_use\""),
                    );
                        return None;
                    }
                }
            }
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
                    format!("expected non-empty tool names, got {other}"),
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

/// Compiles `pattern` to match whole tool names only. The anchors are added
/// to the parsed syntax tree, not to the pattern's text, so nothing in the
/// pattern (an unbalanced `)|(`, a flag, a comment in `(?x)` mode) can move
/// them: the pattern is one node between a start and an end assertion.
pub(crate) fn whole_name_matcher(pattern: &str) -> Result<Regex, String> {
    use regex_syntax::hir::{Hir, Look};
    let hir = regex_syntax::Parser::new()
        .parse(pattern)
        .map_err(|e| e.to_string())?;
    let anchored = Hir::concat(vec![Hir::look(Look::Start), hir, Hir::look(Look::End)]);
    Regex::builder()
        .build_from_hir(&anchored)
        .map_err(|e| e.to_string())
}

fn parse_on_failure(value: Option<&Value>, ctx: &mut HookCtx<'_>) -> Option<OnFailure> {
    match value {
        None => Some(OnFailure::Deny),
        Some(Value::String(s)) if s == "deny" => Some(OnFailure::Deny),
        Some(Value::String(s)) if s == "allow" => Some(OnFailure::Allow),
        Some(other) => {
            ctx.problem(
                "on_failure",
                format!("unknown policy {other}; expected \"deny\" (the default) or \"allow\""),
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

pub(crate) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
