//! Claude Code's mods, as toolgate meets them: its own mod (written by
//! `toolgate install claude-code --mod`), and the rule that tells which
//! other mod can switch a settings hook off.
//!
//! # Why this is toolgate's business
//!
//! Since 2.1.287 Claude Code runs settings hooks — toolgate's classic
//! integration — inside an in-process chain of mods (plugins whose
//! `hooks/hooks.json` names a JS module under `modules`). A mod seated
//! outside the `classic.*` events decides whether they run at all: live on
//! 2.1.332, a mod in a user's skills folder, a marketplace install, a
//! `--plugin-dir` or a trusted repository's own `.claude/skills/` ran a
//! command toolgate denied by answering `classic.PreToolUse`, allowing at
//! `tool.check`, dropping `hooks` from `settings.read`, answering
//! `tool.call` and running the command through `$.process.run`, or
//! answering `classic.PostToolUse`. So toolgate ships a mod of its own,
//! seated outermost (`prependPlugins`), and doctor names every other mod
//! that hooks an event in [`BYPASS_EVENTS`] ahead of it.

/// The mod's folder name under Claude Code's skills folder, and its name.
pub const MOD_NAME: &str = "toolgate";

/// The id Claude Code gives a plugin auto-loaded from a skills folder
/// (`~/.claude/skills/<name>/`): what `prependPlugins` lists.
pub const MOD_ID: &str = "toolgate@skills-dir";

/// The mod's hooks module, as this repository has it
/// (`integrations/claude-code-mod/mod.js`).
pub const MOD_JS: &str = include_str!("../../../integrations/claude-code-mod/mod.js");

/// The events through which a mod seated ahead of a settings hook can run a
/// call the hook refused, skip the hook, or show an output it withheld
/// (each one shown live on 2.1.332; `tool.judge` only overrides auto
/// mode's classifier, after every hook, and is not among them).
pub const BYPASS_EVENTS: &[&str] = &[
    "tool.call",
    "tool.check",
    "tool.run",
    "settings.read",
    "classic.PreToolUse",
    "classic.PostToolUse",
    "classic.PostToolUseFailure",
    "classic.PermissionRequest",
];

/// The events in `hooked` (as `claude plugin validate` or a module's
/// source names them: a name, a glob such as `tool.*`, `classic.*` or `*`,
/// or a negation `!name`) through which a mod can switch a settings hook
/// off, each as it was named.
pub fn bypassing(hooked: &[String]) -> Vec<&str> {
    hooked
        .iter()
        .map(String::as_str)
        .filter(|pattern| BYPASS_EVENTS.iter().any(|event| selects(pattern, event)))
        .collect()
}

/// Whether the hook pattern `pattern` selects `event`: the event itself,
/// `*`, a glob ending in `.*` over its prefix, any other `classic.` name
/// for a `classic.` event (every classic event fires in the same chain
/// around the settings hooks), or a negation of another event.
pub fn selects(pattern: &str, event: &str) -> bool {
    if let Some(negated) = pattern.strip_prefix('!') {
        return negated != event;
    }
    if pattern == "*" || pattern == event {
        return true;
    }
    if let Some(prefix) = pattern.strip_suffix('*') {
        return event.starts_with(prefix);
    }
    false
}

/// The files of toolgate's mod, relative to its folder, for a server at
/// `server_url` whose secret is in `token_file` (read by the mod when
/// `TOOLGATE_HTTP_TOKEN` is not in Claude Code's environment).
pub fn mod_files(version: &str, server_url: &str, token_file: &str) -> Vec<(&'static str, String)> {
    let manifest = serde_json::json!({
        "name": MOD_NAME,
        "version": version,
        "description": "toolgate: every tool call, and every other mod's process and request, \
                        judged by toolgate's chain before it runs; every result before the model \
                        reads it",
        "license": "Apache-2.0",
        "author": {"name": "toolgate"},
    });
    let config = format!(
        "// Written by `toolgate install claude-code --mod`; run it again to change it.\n\
         export const SERVER_URL = {};\n\
         export const TOKEN_FILE = {};\n\
         export const SELF = {};\n",
        serde_json::Value::from(server_url),
        serde_json::Value::from(token_file),
        serde_json::Value::from(MOD_NAME),
    );
    vec![
        (".claude-plugin/plugin.json", format!("{manifest:#}\n")),
        (
            "hooks/hooks.json",
            "{\n  \"modules\": [\"./mod.js\"]\n}\n".to_owned(),
        ),
        ("hooks/mod.js", MOD_JS.to_owned()),
        ("hooks/config.js", config),
    ]
}

/// The events a hooks module's source hooks, read from its text where
/// Claude Code's own `claude plugin validate` cannot be asked: the first
/// argument of each call of `register`'s first parameter (`on` by
/// convention). `Err` names what cannot be read that way (an event that is
/// not a string literal, a `register` that names no parameter): a mod
/// toolgate cannot read is reported, never guessed harmless.
pub fn events_in_source(source: &str) -> Result<Vec<String>, String> {
    let param = register_param(source)
        .ok_or_else(|| "no `register(on, …)` whose first parameter could be read".to_owned())?;
    let call = regex::Regex::new(&format!(r"\b{}\s*\(", regex::escape(&param)))
        .map_err(|e| e.to_string())?;
    let literal = regex::Regex::new(r#"^\s*(?:"([^"\\]*)"|'([^'\\]*)'|`([^`\\$]*)`)"#)
        .map_err(|e| e.to_string())?;
    let mut events = Vec::new();
    for found in call.find_iter(source) {
        let rest = &source[found.end()..];
        // The parameter's own declaration (`register(on)`, `(on) =>`).
        if rest.trim_start().starts_with(')') {
            continue;
        }
        let Some(caps) = literal.captures(rest) else {
            let shown: String = rest.chars().take(40).collect();
            return Err(format!(
                "`{param}(` is called with an event that is not a string literal: `{param}({shown}…`"
            ));
        };
        let event = caps
            .iter()
            .skip(1)
            .flatten()
            .next()
            .map(|m| m.as_str().to_owned())
            .unwrap_or_default();
        if !events.contains(&event) {
            events.push(event);
        }
    }
    Ok(events)
}

/// The name of `register`'s first parameter in a module's source.
fn register_param(source: &str) -> Option<String> {
    let re = regex::Regex::new(
        r"(?:function\s+register\s*\(|register\s*=\s*(?:async\s*)?(?:function\s*)?\(|register\s*\()\s*([A-Za-z_$][A-Za-z0-9_$]*)",
    )
    .ok()?;
    re.captures(source).map(|c| c[1].to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn a_mod_that_can_answer_around_a_settings_hook_is_named_by_the_event() {
        let hooked = strings(&[
            "ui.render",
            "classic.PreToolUse",
            "tool.*",
            "!ui.render",
            "turn.complete",
        ]);
        assert_eq!(
            bypassing(&hooked),
            ["classic.PreToolUse", "tool.*", "!ui.render"]
        );
        assert!(bypassing(&strings(&["ui.render", "session.start", "tool.judge"])).is_empty());
        assert_eq!(bypassing(&strings(&["*"])), ["*"]);
        assert_eq!(bypassing(&strings(&["classic.*"])), ["classic.*"]);
    }

    #[test]
    fn events_are_read_from_a_modules_source_whatever_its_parameter_is_named() {
        let source = r#"
            export function register(hook, options) {
              hook("tool.call", async ($, e, next) => next(e)).catch(() => ({deny: "x"}));
              hook('classic.PreToolUse', ($, e) => ({ allow: true }));
              hook(`ui.render`, { component: "x" }, ($, e, next) => next(e));
            }"#;
        assert_eq!(
            events_in_source(source).unwrap(),
            ["tool.call", "classic.PreToolUse", "ui.render"]
        );
    }

    #[test]
    fn an_event_toolgate_cannot_read_is_reported_not_guessed() {
        let source =
            r#"export function register(on) { const ev = "tool" + ".call"; on(ev, () => ({})) }"#;
        let e = events_in_source(source).unwrap_err();
        assert!(e.contains("not a string literal"), "{e}");
        assert!(events_in_source("export const x = 1").is_err());
    }

    #[test]
    fn toolgates_own_mod_is_read_as_hooking_what_it_guards() {
        assert_eq!(
            events_in_source(MOD_JS).unwrap(),
            [
                "session.id",
                "session.cwd",
                "env.get",
                "fs.read",
                "tool.call",
                "tool.check",
                "tool.run",
                "process.run",
                "process.spawn",
                "fs.write",
                "http.fetch"
            ]
        );
    }
}
