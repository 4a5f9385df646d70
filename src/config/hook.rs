//! One hooks.json file, parsed: the top-level fields, then each hook's
//! common fields here, then its binding's own fields by the binding (see
//! `binding::CONFIGURABLE`). Nothing here knows a binding by name.

use super::{HookSpec, MAX_TIMEOUT_MS, MIN_TIMEOUT_MS};
use crate::binding::parse::{BindingOptions, Common, HookCtx, Problem, type_name};
use crate::binding::{CONFIGURABLE, Configurable};
use crate::contract::{Event, Source, whole_name_matcher};
use crate::failure::OnFailure;
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

/// One call a one-shot process evaluates: only hooks that apply to it are
/// loaded.
pub(crate) type Only<'a> = Option<(Event, &'a str)>;

pub(crate) fn parse_file(
    value: Value,
    source: Source,
    path: &Path,
    (root, options, only): (&Path, &BindingOptions, Only<'_>),
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
            let mut ctx = HookCtx::new(path, 0);
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
        let mut ctx = HookCtx::new(path, index);
        let parsed = parse_hook(hook, source, (root, options, only), &mut ctx);
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
                && crate::contract::ToolFilter {
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
        options,
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
