//! Importing Claude Code settings: its hooks become hooks.json entries that
//! run the same scripts through the Claude Code protocol.

use serde_json::{Value, json};

/// A Claude Code matcher, translated to toolgate's tool filter.
#[derive(Debug, PartialEq, Eq)]
pub enum Matcher {
    /// `""` or `"*"`: every tool.
    All,
    /// Letters, digits, `_` and `|` only: exact names (Claude Code 2.1.197
    /// matches `Foo|Bas` against `Bash` as a list of names, not a regex).
    Tools(Vec<String>),
    /// Anything else is a regex Claude Code *searches* for in the name
    /// (`^mcp__` covers every MCP tool; `a.h` matches `Bash`). toolgate's
    /// matcher is anchored to the whole name, so the pattern is wrapped in
    /// `.*(?:…).*`: the same set of tools.
    Regex(String),
    /// A regex toolgate's engine cannot compile (JavaScript's lookarounds,
    /// backreferences), with why.
    Unsupported(String),
}

/// Translates a Claude Code matcher to the same set of tools in toolgate's
/// terms. Pinned by a table-driven test of matcher forms; the rules are what
/// the real Claude Code CLI was seen to do.
pub fn translate_matcher(matcher: &str) -> Matcher {
    match matcher {
        "" | "*" => Matcher::All,
        m if m
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '|') =>
        {
            Matcher::Tools(
                m.split('|')
                    .filter(|n| !n.is_empty())
                    .map(str::to_owned)
                    .collect(),
            )
        }
        m => {
            let pattern = format!(".*(?:{m}).*");
            // Compiled on its own first: a pattern that is not a regex by
            // itself must not be rescued by the wrapping.
            match crate::contract::whole_name_matcher(m)
                .and_then(|_| crate::contract::whole_name_matcher(&pattern))
            {
                Ok(_) => Matcher::Regex(pattern),
                Err(e) => Matcher::Unsupported(format!(
                    "not a regex toolgate can compile: {}",
                    crate::text::one_line(&e.to_string())
                )),
            }
        }
    }
}

/// What importing Claude Code settings produced.
#[derive(Debug, Default, serde::Serialize)]
pub struct Imported {
    /// The equivalent hooks.json (`{"schema": 1, "hooks": [...]}`).
    pub hooks_json: Value,
    /// Things carried over with a change the operator should know about.
    pub warnings: Vec<String>,
    /// Things that could not be carried over, each named: never a silent drop.
    pub not_carried: Vec<String>,
}

impl Imported {
    /// The hooks.json text, keys in the order a person reads them (`schema`
    /// first; in each hook `name`, then what runs, then when and how).
    pub fn to_pretty_json(&self) -> String {
        const ORDER: [&str; 10] = [
            "schema",
            "hooks",
            "name",
            "command",
            "protocol",
            "event",
            "tools",
            "matcher",
            "timeout_ms",
            "on_failure",
        ];
        struct Ordered<'a>(&'a Value);
        impl serde::Serialize for Ordered<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                use serde::ser::{SerializeMap, SerializeSeq};
                match self.0 {
                    Value::Object(map) => {
                        let rank =
                            |k: &str| ORDER.iter().position(|o| *o == k).unwrap_or(ORDER.len());
                        let mut keys: Vec<&String> = map.keys().collect();
                        keys.sort_by_key(|k| (rank(k), (*k).clone()));
                        let mut out = s.serialize_map(Some(keys.len()))?;
                        for k in keys {
                            out.serialize_entry(k, &Ordered(&map[k]))?;
                        }
                        out.end()
                    }
                    Value::Array(items) => {
                        let mut out = s.serialize_seq(Some(items.len()))?;
                        for item in items {
                            out.serialize_element(&Ordered(item))?;
                        }
                        out.end()
                    }
                    other => other.serialize(s),
                }
            }
        }
        serde_json::to_string_pretty(&Ordered(&self.hooks_json)).unwrap_or_default() + "\n"
    }
}

/// Translates the `hooks` of a Claude Code settings file into hooks.json.
///
/// - `PreToolUse` / `PostToolUse` command hooks become subprocess hooks with
///   `"protocol": "claude-code"`, so the scripts run unmodified;
/// - matchers are translated to the same set of tools ([`translate_matcher`]):
///   empty or `*` is every tool, a name or `|`-list of names is `tools`, a
///   regex (which Claude Code searches for anywhere in the name) becomes
///   `.*(?:regex).*` with a warning saying so;
/// - a shell-string `command` that only runs a project script
///   (`"$CLAUDE_PROJECT_DIR"/.claude/hooks/x.sh`) becomes that script's argv;
///   any other becomes `["sh", "-c", …]` (a warning says so, and that trust
///   refuses inline shell),
///   while the exec form (`command` + `args`) is kept as an argv;
/// - `timeout` (seconds) becomes `timeout_ms`, 60 s where it has none
///   (Claude Code's own default is 600 s, longer than toolgate's deadline);
/// - http / prompt / agent handlers, `if` rules, `async` hooks and events
///   toolgate does not have are listed in `not_carried`.
pub fn import_settings(settings: &Value) -> Imported {
    let mut out = Imported::default();
    let mut hooks = Vec::new();
    let Some(events) = settings.get("hooks").and_then(Value::as_object) else {
        out.not_carried
            .push("the settings have no `hooks` object: nothing to import".into());
        out.hooks_json = json!({"schema": 1, "hooks": []});
        return out;
    };
    for (event_name, groups) in events {
        let event = match event_name.as_str() {
            "PreToolUse" => "pre_tool_use",
            "PostToolUse" => "post_tool_use",
            other => {
                let n = groups.as_array().map_or(0, Vec::len);
                out.not_carried.push(format!(
                    "{other}: {n} matcher group(s) — toolgate has no {other} event"
                ));
                continue;
            }
        };
        for (g, group) in groups.as_array().into_iter().flatten().enumerate() {
            let matcher = group.get("matcher").and_then(Value::as_str).unwrap_or("");
            let handlers = group.get("hooks").and_then(Value::as_array);
            for (h, handler) in handlers.into_iter().flatten().enumerate() {
                let at = Handler {
                    at: format!("{event_name}[{g}].hooks[{h}]"),
                    name: format!("{}-{g}-{h}", event.trim_end_matches("_tool_use")),
                    event,
                    matcher,
                };
                hooks.extend(at.import(handler, &mut out));
            }
        }
    }
    if !hooks.is_empty() {
        out.warnings.push(
            "a hook that exits with a code other than 0 or 2 is a non-blocking error in \
             Claude Code but a failure in toolgate, which blocks the call (on_failure: deny); \
             add \"on_failure\": \"allow\" to a hook that should fail open"
                .into(),
        );
    }
    out.hooks_json = json!({"schema": 1, "hooks": hooks});
    out
}

/// Where one Claude Code handler sits, and what its hook will be called.
struct Handler<'a> {
    /// `PreToolUse[0].hooks[1]`, for messages.
    at: String,
    /// `pre-0-1`: the hook's name, before the script's.
    name: String,
    /// toolgate's event.
    event: &'static str,
    /// Its group's matcher.
    matcher: &'a str,
}

impl Handler<'_> {
    /// The hooks.json entry for `handler`, or `None` (and why, in `out`)
    /// when it cannot be carried over.
    fn import(&self, handler: &Value, out: &mut Imported) -> Option<Value> {
        let at = &self.at;
        if let Some(why) = left_out(handler) {
            out.not_carried.push(format!("{at}: {why}"));
            return None;
        }
        let Some(command) = handler.get("command").and_then(Value::as_str) else {
            out.not_carried.push(format!("{at}: no `command`"));
            return None;
        };
        let argv = self.argv(handler, command, out);
        let base = argv
            .iter()
            .rev()
            .find_map(|a| {
                let last = a.split_whitespace().last()?;
                let name = last.rsplit('/').next()?;
                (!name.is_empty()).then(|| name.trim_matches('"').to_owned())
            })
            .unwrap_or_else(|| "hook".into());
        let mut hook = json!({
            "name": format!("{}-{base}", self.name),
            "command": argv,
            "protocol": "claude-code",
            "event": self.event,
            "timeout_ms": self.timeout_ms(handler, out),
        });
        // A script the shell string runs from the project is what trust
        // must pin, not just the string that names it.
        let payload = project_files(&argv);
        if !payload.is_empty() {
            out.warnings.push(format!(
                "{at}: {} listed in `trust_files`, so trusting the workspace pins \
                 its content too",
                payload.join(", ")
            ));
            hook["trust_files"] = json!(payload);
        }
        let matcher = self.matcher;
        match translate_matcher(matcher) {
            Matcher::All => {}
            Matcher::Tools(names) => hook["tools"] = json!(names),
            Matcher::Regex(pattern) => {
                out.warnings.push(format!(
                    "{at}: the matcher {matcher:?} is a regex, which Claude Code looks \
                     for anywhere in the tool name; toolgate matches whole names, so it \
                     became {pattern:?} (the same set of tools)"
                ));
                hook["matcher"] = json!(pattern);
            }
            Matcher::Unsupported(why) => {
                out.not_carried.push(format!(
                    "{at}: the matcher {matcher:?} — {why}; the hook is left out"
                ));
                return None;
            }
        }
        Some(hook)
    }

    /// What the handler runs: the exec form (`command` + `args`) as it is,
    /// a project script as its argv, any other shell string through `sh -c`.
    fn argv(&self, handler: &Value, command: &str, out: &mut Imported) -> Vec<String> {
        if let Some(args) = handler.get("args").and_then(Value::as_array) {
            return std::iter::once(command.to_owned())
                .chain(args.iter().map(|a| match a {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                }))
                .collect();
        }
        project_script(command, &["CLAUDE_PROJECT_DIR"]).unwrap_or_else(|| {
            out.warnings.push(format!(
                "{}: the shell string {command:?} now runs as [\"sh\", \"-c\", …], \
                 which toolgate's trust review refuses (it cannot see what inline \
                 shell runs); put it in a script in the project and name the script",
                self.at
            ));
            vec!["sh".into(), "-c".into(), command.to_owned()]
        })
    }

    /// `timeout` (seconds) in milliseconds, clamped to what toolgate allows
    /// (and said so); 60 s where it has none (Claude Code's own default,
    /// 600 s, is longer than toolgate's deadline).
    fn timeout_ms(&self, handler: &Value, out: &mut Imported) -> u64 {
        let Some(secs) = handler.get("timeout").and_then(Value::as_f64) else {
            return 60_000;
        };
        let ms = (secs * 1000.0).round().clamp(1.0, 600_000.0) as u64;
        if (secs * 1000.0).round() as u64 != ms {
            out.warnings
                .push(format!("{}: timeout {secs} s clamped to {ms} ms", self.at));
        }
        ms
    }
}

/// Why a handler is left out, when it is: one toolgate cannot run, or one
/// whose meaning would change.
fn left_out(handler: &Value) -> Option<String> {
    let kind = handler
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("command");
    if kind != "command" {
        return Some(format!("a `{kind}` handler — toolgate runs commands only"));
    }
    if let Some(rule) = handler.get("if") {
        return Some(format!(
            "an `if` rule ({rule}) — not imported, the hook is left out"
        ));
    }
    if handler.get("async") == Some(&Value::Bool(true)) {
        return Some("an `async` hook — it cannot decide anything, so it is left out".into());
    }
    None
}

/// A shell string that only runs a project script with plain words
/// (`"$CLAUDE_PROJECT_DIR"/.claude/hooks/x.sh --strict`) as the argv that
/// does the same (`[".claude/hooks/x.sh", "--strict"]`): no shell, and the
/// script is what trust pins and runs from its snapshot. `None` for anything
/// else (any other shell syntax).
///
/// `vars` are the agent's project variables the path may start with
/// (`CLAUDE_PROJECT_DIR`; Gemini CLI also sets `GEMINI_PROJECT_DIR`).
pub(crate) fn project_script(command: &str, vars: &[&str]) -> Option<Vec<String>> {
    let re = regex::Regex::new(&format!(
        r#"^\s*"?\$\{{?(?:{})\}}?"?/([A-Za-z0-9._+/-]+)((?:\s+[A-Za-z0-9._+/:=,-]+)*)\s*$"#,
        vars.join("|")
    ))
    .ok()?;
    let caps = re.captures(command)?;
    let path = caps.get(1)?.as_str();
    if path.split('/').any(|part| part == ".." || part.is_empty()) {
        return None;
    }
    let words = caps.get(2).map_or("", |m| m.as_str()).split_whitespace();
    Some(
        std::iter::once(path.to_owned())
            .chain(words.map(str::to_owned))
            .collect(),
    )
}

/// The project files a command names through `$CLAUDE_PROJECT_DIR`
/// (`"$CLAUDE_PROJECT_DIR"/.claude/hooks/x.sh` → `.claude/hooks/x.sh`).
fn project_files(argv: &[String]) -> Vec<String> {
    let re = regex::Regex::new(r#"\$\{?CLAUDE_PROJECT_DIR\}?"?/([^\s"';|&<>()$`]+)"#);
    let Ok(re) = re else {
        return Vec::new();
    };
    let mut files: Vec<String> = argv
        .iter()
        .flat_map(|a| {
            re.captures_iter(a)
                .map(|c| c[1].to_owned())
                .collect::<Vec<_>>()
        })
        .filter(|f| !f.split('/').any(|part| part == ".."))
        .collect();
    files.dedup();
    files
}
