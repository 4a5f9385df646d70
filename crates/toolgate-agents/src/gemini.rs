//! Gemini CLI's hook protocol (`BeforeTool` / `AfterTool` in
//! `settings.json`), as Gemini CLI 0.61.0 was seen to honour it live
//! (tests/all/live/gemini.rs).
//!
//! # Why it is its own dialect
//!
//! Gemini CLI took Claude Code's envelope (`tool_name`, `tool_input`,
//! `hookSpecificOutput`) but not its answers: it ignores
//! `permissionDecision` (a Claude Code deny lets the call run), reads a
//! top-level `decision: "deny"` with `reason`, rewrites with
//! `hookSpecificOutput.tool_input` (the *whole* input: a partial one fails
//! its validation), and has no output replacement. So every answer is
//! chosen here:
//!
//! - **deny** (before): `decision: deny`; the model reads
//!   `Tool execution blocked: <reason>` and the tool does not run.
//! - **modify**: `tool_input` with the complete input. Gemini CLI checks its
//!   own policy *after* the hook, on the rewritten input, so the rewrite
//!   gains no permission it would not have had.
//! - **replace** (before): cannot be expressed (Gemini CLI has no answer
//!   that stands in for a tool); a denial whose reason carries the
//!   replacement.
//! - **deny** / **replace** (after): `decision: deny`, which Gemini CLI
//!   shows the model *instead of* the output, as the call's error.
//! - **context**: after the call `additionalContext`, appended to the
//!   output. Before the call Gemini CLI 0.61.0 ignores it (seen live); it is
//!   still sent, so a release that honours it shows it.
//! - never `ask`: headless Gemini CLI waits for a confirmation nobody can
//!   give (seen live: it hung until killed).
//!
//! # Failing closed where Gemini CLI lets it
//!
//! Gemini CLI has no fail-closed switch. It parses a hook's stdout (or, if
//! that is empty, its stderr) as JSON whatever the exit code; text that is
//! not JSON allows the call on exit 0 and 1 and denies it on any other code;
//! a hook that prints nothing, is killed by a signal or outlives its
//! `timeout` (60 000 ms by default) lets the call through. So toolgate's own
//! failure is a JSON denial on stdout *and* the reason on stderr with exit
//! 2 ([`Gemini::blocked`]): it blocks whichever Gemini CLI reads. A missing
//! toolgate blocks too (bash's "No such file or directory" on stderr, exit
//! 127); a toolgate killed by a signal or hung past the timeout cannot, which
//! is why the deadline answers well inside Gemini CLI's timeout.

use super::{
    AgentCall, AgentEvent, Blocked, Call, Dialect, Help, HookSwitch, Import, Install, Layout,
    McpConfig, McpShape, ReadAgentInputError, Role, Setting, Source, TrustCheck, TrustStep,
    Unjudged, UserDir, answered_for_the_tool, classify, needs_a_person, output_text, string_field,
    withheld,
};
use crate::contract::{Decision, Event, Request, ToolResult};
use crate::outcome::Outcome;
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Gemini CLI.
pub(super) struct Gemini;

impl Dialect for Gemini {
    fn read(&self, input: &Map<String, Value>) -> Result<AgentCall, ReadAgentInputError> {
        read(input)
    }

    fn render(&self, outcome: &Outcome, _hook_event_name: &str) -> Option<Value> {
        render(outcome)
    }

    fn blocked(&self, reason: &str) -> Blocked {
        // Gemini CLI reads stdout's JSON first; exit 2 with the reason on
        // stderr blocks as well if stdout does not reach it intact.
        Blocked {
            stdout: Some(json!({"decision": "deny", "reason": reason})),
            stderr: reason.to_owned(),
            exit: 2,
        }
    }

    fn help(&self) -> Help {
        Help {
            about: "Be a Gemini CLI hook: read its stdin, run the chain, answer in its format",
            after_help: HELP.to_owned(),
        }
    }

    fn project_var(&self) -> Option<&'static str> {
        // Gemini CLI sets GEMINI_PROJECT_DIR (and CLAUDE_PROJECT_DIR) to the
        // directory it was started in, not to a project root: started in a
        // subdirectory, it names the subdirectory. The nearest `.toolgate/`
        // above the call's cwd is the better answer.
        None
    }

    fn default_hook_timeout(&self) -> Duration {
        Duration::from_secs(60)
    }

    fn install(&self) -> Install {
        Install {
            switches: &[
                HookSwitch {
                    setting: Setting::Flag {
                        pointer: "/hooksConfig/enabled",
                        off_when: false,
                    },
                    read_from: SETTINGS_ORDER,
                    effect: "Gemini CLI runs no hook at all, toolgate's included: every call goes \
                             through unguarded",
                    shown_live_by: Some(
                        "live_gemini_settings_that_turn_hooks_off_skip_toolgate_and_doctor_says_so",
                    ),
                },
                HookSwitch {
                    setting: Setting::Names {
                        pointer: "/hooksConfig/disabled",
                        name: "toolgate",
                    },
                    read_from: SETTINGS_ORDER,
                    effect: "Gemini CLI skips the hook named `toolgate`: every call goes through \
                             unguarded by it",
                    shown_live_by: Some(
                        "live_gemini_settings_that_turn_hooks_off_skip_toolgate_and_doctor_says_so",
                    ),
                },
            ],
            user_file: ".gemini/settings.json",
            user_dir: UserDir::Var {
                var: "GEMINI_CLI_HOME",
                dir: "",
            },
            project_file: ".gemini/settings.json",
            events: &["BeforeTool", "AfterTool"],
            layout: Layout::Grouped { handler },
            timeout: None,
            agent_cli: "gemini",
            tested_versions: &["0.61.0"],
            http: None,
            mcp: McpConfig::Servers {
                user_file: ".gemini/settings.json",
                user_dir: UserDir::Var {
                    var: "GEMINI_CLI_HOME",
                    dir: "",
                },
                shadowed_by: &[],
                project_file: Some(".gemini/settings.json"),
                shape: McpShape::McpServers,
                per_project: false,
            },
            trust: Some(TrustStep {
                fix: "trust the project folder in Gemini CLI (answer its trust prompt, or \
                      `/permissions`, which writes ~/.gemini/trustedFolders.json): in a folder \
                      it does not trust, Gemini CLI runs no hooks at all — neither the \
                      project's nor the user's — and headless runs refuse to start",
                check: Some(TrustCheck {
                    file: ".gemini/trustedFolders.json",
                    done: folder_trusted,
                }),
                project_only: false,
            }),
        }
    }

    fn import(&self) -> Import {
        Import::Settings(import_settings)
    }
}

/// The files Gemini CLI 0.61.0 merges its settings from, lowest first
/// (`mergeSettings`: its system defaults, the user's, the project's when
/// the folder is trusted, then the system's, which wins). Without its
/// variable, the defaults file sits beside the system file.
const SETTINGS_ORDER: &[Source] = &[
    Source::System {
        path: "/etc/gemini-cli/system-defaults.json",
        var: Some("GEMINI_CLI_SYSTEM_DEFAULTS_PATH"),
        root_owned: true,
    },
    Source::User,
    Source::Project,
    Source::System {
        path: "/etc/gemini-cli/settings.json",
        var: Some("GEMINI_CLI_SYSTEM_SETTINGS_PATH"),
        root_owned: true,
    },
];

/// The handler toolgate writes into Gemini CLI's settings for `argv`: a
/// shell string (Gemini CLI runs it with `bash -c`), named so that
/// `hooksConfig.disabled` and its hook listings can name it.
fn handler(argv: &[String]) -> Value {
    json!({"type": "command", "name": "toolgate", "command": super::shell_words(argv)})
}

/// Gemini CLI's hook events (0.61.0, read from its settings schema), and
/// what each is to toolgate. A name outside this set is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, strum::EnumString)]
enum GeminiEvent {
    BeforeTool,
    AfterTool,
    BeforeAgent,
    AfterAgent,
    BeforeModel,
    AfterModel,
    BeforeToolSelection,
    Notification,
    PreCompress,
    SessionStart,
    SessionEnd,
}

impl AgentEvent for GeminiEvent {
    fn role(self) -> Role {
        use GeminiEvent as E;
        match self {
            E::BeforeTool => Role::Judged(Call::Before),
            E::AfterTool => Role::Judged(Call::After),
            // The model's request and answer may name tools (a call it
            // wants, the tools it may pick from), but no call runs there:
            // each call it makes reaches `BeforeTool`, where it is judged.
            E::BeforeModel | E::AfterModel | E::BeforeToolSelection => Role::NoToolCall,
            E::BeforeAgent
            | E::AfterAgent
            | E::Notification
            | E::PreCompress
            | E::SessionStart
            | E::SessionEnd => Role::NoToolCall,
        }
    }
}

/// Reads Gemini CLI's hook stdin.
///
/// `BeforeTool` and `AfterTool` are tool calls; any other event is one
/// toolgate has no part in. After the call, what the model will be shown is
/// the result: the error's message when the tool failed (Gemini CLI shows
/// the model `{"error": message}`), else `llmContent` (text, or the text of
/// its parts for an MCP tool). A shell command that exits non-zero is not a
/// failure to Gemini CLI (the exit code is in the text), and reaches the
/// post chain like any other.
fn read(obj: &Map<String, Value>) -> Result<AgentCall, ReadAgentInputError> {
    let s = |k: &str| string_field(obj, k);
    let name = s("hook_event_name").ok_or(ReadAgentInputError::Missing("hook_event_name"))?;
    let cwd = s("cwd");
    let event = match classify::<GeminiEvent>(&name) {
        Ok(call) => call.event(),
        Err(Unjudged::NothingToSay) => {
            return Ok(AgentCall {
                hook_event_name: name,
                request: None,
                cwd,
                timeout: None,
            });
        }
        Err(Unjudged::Refused(refused)) => return Err(refused),
    };
    let tool = s("tool_name").ok_or(ReadAgentInputError::Missing("tool_name"))?;
    let input = match obj.get("tool_input") {
        Some(input @ Value::Object(_)) => input.clone(),
        Some(_) => {
            return Err(ReadAgentInputError::Invalid {
                field: "tool_input",
                expected: "an object",
            });
        }
        None => return Err(ReadAgentInputError::Missing("tool_input")),
    };
    let result = match event {
        Event::PreToolUse | Event::ListTools => None,
        Event::PostToolUse => Some(tool_result(obj.get("tool_response"))?),
    };
    Ok(AgentCall {
        hook_event_name: name,
        request: Some(Request {
            event,
            tool,
            input,
            result,
            session_id: s("session_id"),
            turn_id: None,
            tool_call_id: None,
            cwd: cwd.clone(),
        }),
        cwd,
        timeout: None,
    })
}

/// The result a `tool_response` (`{llmContent, returnDisplay, error?}`)
/// shows the model.
fn tool_result(response: Option<&Value>) -> Result<ToolResult, ReadAgentInputError> {
    let invalid = ReadAgentInputError::Invalid {
        field: "tool_response",
        expected: "an object with `llmContent`",
    };
    let Some(Value::Object(response)) = response else {
        return Err(match response {
            None => ReadAgentInputError::Missing("tool_response"),
            Some(_) => invalid,
        });
    };
    match response.get("error") {
        None | Some(Value::Null) => {}
        Some(error) => {
            let message = error
                .get("message")
                .cloned()
                .unwrap_or_else(|| error.clone());
            return Ok(ToolResult::error(message));
        }
    }
    let content = response.get("llmContent").ok_or(invalid)?;
    Ok(ToolResult::ok(content_text(content)))
}

/// `llmContent` as the text the model reads: a string as it is; parts
/// (`[{"text": …}]`, as MCP tools answer) as their texts joined, when every
/// part is text; anything else as it is.
fn content_text(content: &Value) -> Value {
    let part_text = |part: &Value| part.get("text").and_then(Value::as_str).map(str::to_owned);
    match content {
        Value::Array(parts) => parts
            .iter()
            .map(part_text)
            .collect::<Option<Vec<_>>>()
            .map_or_else(|| content.clone(), |texts| json!(texts.concat())),
        Value::Object(_) => part_text(content).map_or_else(|| content.clone(), |t| json!(t)),
        _ => content.clone(),
    }
}

/// The answer for an outcome (see the module's list).
fn render(outcome: &Outcome) -> Option<Value> {
    let event = match outcome.event {
        Event::PreToolUse | Event::ListTools => "BeforeTool",
        Event::PostToolUse => "AfterTool",
    };
    let mut top = Map::new();
    let mut specific = Map::new();
    let context = outcome.context.as_deref();
    let deny = |top: &mut Map<String, Value>, reason: String| {
        top.insert("decision".into(), json!("deny"));
        top.insert("reason".into(), json!(reason));
    };
    match (&outcome.event, &outcome.decision) {
        // Neither rewrite nor ask comes after the call (the chain makes
        // them failures).
        (_, Decision::Allow)
        | (Event::PostToolUse, Decision::Modify { .. } | Decision::Ask { .. }) => {}
        (Event::PreToolUse | Event::ListTools, Decision::Deny { reason }) => {
            deny(&mut top, reason.clone())
        }
        (Event::PreToolUse | Event::ListTools, Decision::Modify { input }) => {
            specific.insert("tool_input".into(), input.clone());
        }
        (Event::PreToolUse | Event::ListTools, Decision::Replace { result }) => {
            deny(&mut top, answered_for_the_tool(&result.output));
        }
        // Never Gemini CLI's own `ask` (see the module's list).
        (Event::PreToolUse | Event::ListTools, Decision::Ask { reason, .. }) => {
            deny(&mut top, needs_a_person(reason))
        }
        // A denial after the call is all Gemini CLI shows the model: the
        // context would be dropped with the output, so it joins the reason.
        (Event::PostToolUse, Decision::Deny { reason }) => {
            deny(&mut top, with_context(withheld(reason), context));
        }
        (Event::PostToolUse, Decision::Replace { result }) => deny(
            &mut top,
            with_context(
                format!(
                    "toolgate replaced this tool's output: {}",
                    output_text(&result.output)
                ),
                context,
            ),
        ),
    }
    if let Some(context) = context
        && !top.contains_key("decision")
    {
        specific.insert("additionalContext".into(), json!(context));
    }
    if !specific.is_empty() {
        specific.insert("hookEventName".into(), json!(event));
        top.insert("hookSpecificOutput".into(), Value::Object(specific));
    }
    (!top.is_empty()).then_some(Value::Object(top))
}

fn with_context(reason: String, context: Option<&str>) -> String {
    match context {
        Some(context) => format!("{reason}\n\n{context}"),
        None => reason,
    }
}

/// Whether Gemini CLI's trustedFolders.json (`{"<path>": "TRUST_FOLDER" |
/// "TRUST_PARENT" | "DO_NOT_TRUST"}`) trusts `root`: as Gemini CLI decides
/// it, the longest rule whose folder contains `root` wins, and
/// `TRUST_PARENT` stands for the rule path's parent.
fn folder_trusted(file: &Value, root: &Path) -> bool {
    let Some(rules) = file.as_object() else {
        return false;
    };
    let real = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let root = real(root);
    let mut best: Option<(usize, &str)> = None;
    for (rule, level) in rules {
        let Some(level) = level.as_str() else {
            continue;
        };
        let rule_path = PathBuf::from(rule);
        let folder = match level {
            "TRUST_PARENT" => rule_path.parent().map(Path::to_path_buf),
            _ => Some(rule_path.clone()),
        };
        let Some(folder) = folder else {
            continue;
        };
        if root.starts_with(real(&folder)) && best.is_none_or(|(len, _)| rule.len() > len) {
            best = Some((rule.len(), level));
        }
    }
    matches!(best, Some((_, "TRUST_FOLDER" | "TRUST_PARENT")))
}

/// `toolgate gemini --help`: where Gemini CLI reads its hooks, and what it
/// needs before it runs them.
const HELP: &str = r#"Install it by absolute path in ~/.gemini/settings.json, or a project's
.gemini/settings.json, for BeforeTool and AfterTool:

{
  "hooks": {
    "BeforeTool": [
      {
        "matcher": "*",
        "hooks": [
          {
            "type": "command",
            "name": "toolgate",
            "command": "/usr/local/bin/toolgate gemini"
          }
        ]
      }
    ]
  }
}

and the same entry under "AfterTool". Gemini CLI runs hooks only in a
folder it trusts (~/.gemini/trustedFolders.json, or
GEMINI_CLI_TRUST_WORKSPACE=true for headless runs), the user's hooks
included. Its `timeout` is in milliseconds (default 60000); toolgate
answers within 50 s. The book's "Gemini CLI" section lists what each
answer becomes.

Example:
  toolgate gemini < examples/demo/gemini-pre-force-push.json"#;

/// Translates the `hooks` of a Gemini CLI settings file into hooks.json.
///
/// - `BeforeTool` / `AfterTool` command handlers become subprocess hooks with
///   `"protocol": "gemini"`, so the scripts run unmodified (Gemini CLI's
///   stdin, environment and answers; `toolgate::protocol::gemini`, in the library);
/// - a matcher keeps the tools Gemini CLI gives it (seen live): none, `""`
///   or `*` is every tool; anything else is a JavaScript regex *searched
///   for* in the name (`run_shell` matches `run_shell_command`), so it
///   becomes `.*(?:regex).*` under toolgate's whole-name matching; one that
///   is not a regex at all (`*foo`) Gemini CLI compares as a plain name;
///   one Rust's engine cannot compile (lookarounds, backreferences) is left
///   out;
/// - a command that only runs a project script
///   (`$GEMINI_PROJECT_DIR/.gemini/hooks/x.sh`) becomes that script's argv;
///   any other runs as Gemini CLI runs it, `["bash", "-c", …]`;
/// - `timeout` is already in milliseconds (Gemini CLI's default 60000);
/// - hooks in `hooksConfig.disabled`, other events, other handler types and
///   a handler's `env` are listed in `not_carried`.
fn import_settings(settings: &Value) -> crate::import::Imported {
    use crate::import::Imported;
    let mut out = Imported {
        hooks_json: json!({"schema": 1, "hooks": []}),
        ..Imported::default()
    };
    let Some(events) = settings.get("hooks").and_then(Value::as_object) else {
        out.not_carried
            .push("the settings have no `hooks` object: nothing to import".into());
        return out;
    };
    if settings.pointer("/hooksConfig/enabled") == Some(&Value::Bool(false)) {
        out.not_carried.push(
            "hooksConfig.enabled is false: Gemini CLI runs none of these hooks, so none is \
             imported"
                .into(),
        );
        return out;
    }
    let disabled: Vec<&str> = settings
        .pointer("/hooksConfig/disabled")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let mut hooks = Vec::new();
    for (event_name, groups) in events {
        let event = match event_name.as_str() {
            "BeforeTool" => "pre_tool_use",
            "AfterTool" => "post_tool_use",
            other => {
                let n = groups.as_array().map_or(0, Vec::len);
                if n > 0 {
                    out.not_carried.push(format!(
                        "{other}: {n} hook definition(s) — toolgate has no {other} event"
                    ));
                }
                continue;
            }
        };
        let groups = groups.as_array().map(Vec::as_slice).unwrap_or_default();
        let handlers: usize = groups
            .iter()
            .filter_map(|g| g.get("hooks").and_then(Value::as_array))
            .map(Vec::len)
            .sum();
        if handlers > 1
            && !groups
                .iter()
                .any(|g| g.get("sequential") == Some(&Value::Bool(true)))
        {
            out.warnings.push(format!(
                "{event_name}: Gemini CLI runs these {handlers} hooks in parallel, each seeing \
                 the model's input; toolgate runs them in order, each seeing the previous \
                 one's rewrite, and the first denial ends the chain"
            ));
        }
        for (g, group) in groups.iter().enumerate() {
            let matcher = group.get("matcher").and_then(Value::as_str).unwrap_or("");
            let handlers = group.get("hooks").and_then(Value::as_array);
            for (h, handler) in handlers.into_iter().flatten().enumerate() {
                let at = format!("{event_name}[{g}].hooks[{h}]");
                let prefix = format!("{}-{g}-{h}", event.trim_end_matches("_tool_use"));
                if let Some(hook) =
                    import_handler(&at, &prefix, event, matcher, handler, &disabled, &mut out)
                {
                    hooks.push(hook);
                }
            }
        }
    }
    if !hooks.is_empty() {
        out.warnings.push(
            "a hook that exits 1, exits non-zero without a word, is killed or times out lets \
             the call through in Gemini CLI, but is a failure in toolgate, which blocks the \
             call (on_failure: deny); add \"on_failure\": \"allow\" to a hook that should \
             fail open"
                .into(),
        );
    }
    out.hooks_json = json!({"schema": 1, "hooks": hooks});
    out
}

/// The hooks.json entry for one Gemini CLI handler, or `None` (and why, in
/// `out`).
fn import_handler(
    at: &str,
    prefix: &str,
    event: &str,
    matcher: &str,
    handler: &Value,
    disabled: &[&str],
    out: &mut crate::import::Imported,
) -> Option<Value> {
    let kind = handler.get("type").and_then(Value::as_str).unwrap_or("");
    if kind != "command" {
        out.not_carried.push(format!(
            "{at}: a `{kind}` handler — toolgate runs commands only"
        ));
        return None;
    }
    let Some(command) = handler.get("command").and_then(Value::as_str) else {
        out.not_carried.push(format!("{at}: no `command`"));
        return None;
    };
    let name = handler.get("name").and_then(Value::as_str);
    if disabled.iter().any(|d| Some(*d) == name || *d == command) {
        out.not_carried.push(format!(
            "{at}: disabled in hooksConfig.disabled, so left out"
        ));
        return None;
    }
    if handler.get("env").is_some() {
        out.not_carried.push(format!(
            "{at}: its `env` — toolgate's hooks get no extra variables; the hook runs without them"
        ));
    }
    let argv = project_script(command).unwrap_or_else(|| {
        out.warnings.push(format!(
            "{at}: the shell string {command:?} runs as [\"bash\", \"-c\", …] (as Gemini CLI \
             runs it), which toolgate's trust review refuses (it cannot see what inline shell \
             runs); put it in a script in the project and name the script"
        ));
        vec!["bash".into(), "-c".into(), command.to_owned()]
    });
    let base = name.map(str::to_owned).unwrap_or_else(|| {
        argv.iter()
            .rev()
            .find_map(|a| {
                let last = a.split_whitespace().last()?.rsplit('/').next()?;
                (!last.is_empty()).then(|| last.trim_matches(['"', '\'']).to_owned())
            })
            .unwrap_or_else(|| "hook".into())
    });
    let base: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    let timeout_ms = match handler.get("timeout").and_then(Value::as_f64) {
        None => 60_000,
        Some(ms) => {
            let clamped = ms.round().clamp(1.0, 600_000.0) as u64;
            if ms.round() as u64 != clamped {
                out.warnings
                    .push(format!("{at}: timeout {ms} ms clamped to {clamped} ms"));
            }
            clamped
        }
    };
    let mut hook = json!({
        "name": format!("{prefix}-{base}"),
        "command": argv,
        "protocol": "gemini",
        "event": event,
        "timeout_ms": timeout_ms,
    });
    match matcher.trim() {
        "" | "*" => {}
        m if is_js_only(m) => {
            out.not_carried.push(format!(
                "{at}: the matcher {m:?} uses lookaround or backreferences, which toolgate's \
                 regex engine cannot compile; the hook is left out"
            ));
            return None;
        }
        m => match crate::contract::whole_name_matcher(m) {
            Ok(_) => {
                let pattern = format!(".*(?:{m}).*");
                if crate::contract::whole_name_matcher(&pattern).is_err() {
                    out.not_carried.push(format!(
                        "{at}: the matcher {m:?} cannot be compiled; left out"
                    ));
                    return None;
                }
                out.warnings.push(format!(
                    "{at}: Gemini CLI looks for the matcher {m:?} anywhere in the tool name \
                     (a JavaScript regex, case-sensitive); toolgate matches whole names, so it \
                     became {pattern:?} (the same set of tools)"
                ));
                hook["matcher"] = json!(pattern);
            }
            // Not a regex: Gemini CLI then compares it as a plain name.
            Err(_) => {
                out.warnings.push(format!(
                    "{at}: the matcher {m:?} is not a regex, which Gemini CLI compares as a \
                     whole tool name; so does toolgate"
                ));
                hook["tools"] = json!([m]);
            }
        },
    }
    Some(hook)
}

/// Whether a matcher needs JavaScript's regex features Rust's lacks.
fn is_js_only(m: &str) -> bool {
    ["(?=", "(?!", "(?<=", "(?<!"].iter().any(|l| m.contains(l))
        || (1..=9).any(|n| m.contains(&format!("\\{n}")))
}

/// A command that only runs a project script with plain words
/// (`$GEMINI_PROJECT_DIR/.gemini/hooks/x.sh --strict`, or through
/// `$CLAUDE_PROJECT_DIR`, which Gemini CLI sets too) as the argv that does
/// the same. `None` for anything else.
fn project_script(command: &str) -> Option<Vec<String>> {
    crate::import::project_script(command, &["GEMINI_PROJECT_DIR", "CLAUDE_PROJECT_DIR"])
}
