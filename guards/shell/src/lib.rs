//! `toolgate:shell`: the standard guard against destructive and dangerous
//! shell commands, as a WebAssembly component. The rules are
//! `toolgate-guards` (guards/lib); this file only maps a request onto them:
//! which tools are shells, where the command is, what the options say.

use toolgate_guards::{ShellOptions, check_shell};
use toolgate_hook::serde_json::{Map, Value};
use toolgate_hook::{Event, Hook, Request, Verdict};

struct Shell;

/// Every agent's name for its shell tool (and toolgate's own, `shell`).
const SHELL_TOOLS: &[&str] = &["shell", "Bash", "bash", "run_shell_command", "Shell", "local_shell", "exec_command", "execute_command", "run_command", "run_terminal_cmd"];


impl Hook for Shell {
    fn decide(request: Request) -> Result<Verdict, String> {
        let config: Map<String, Value> = request.config_json::<Map<String, Value>>()?.unwrap_or_default();
        let (options, tools) = options(&config)?;
        let is_shell = match &tools {
            Some(list) => list.iter().any(|t| *t == request.tool),
            None => SHELL_TOOLS.contains(&request.tool.as_str()),
        };
        if request.event != Event::PreToolUse || !is_shell {
            return Ok(Verdict::allow());
        }
        let input: Value = request.input_json()?;
        let Some(command) = command_line(&input) else {
            return Err(format!("the `{}` tool's input has no `command` this guard can read", request.tool));
        };
        Ok(match check_shell(&command, request.cwd.as_deref(), &options) {
            Some(finding) => Verdict::deny(format!(
                "toolgate:shell blocked this command [{}]: {}. If it is really needed, ask the user to run it themselves.",
                finding.class, finding.why
            )),
            None => Verdict::allow(),
        })
    }
}

/// The command line of a shell tool's input: a string, or an argv array
/// (quoted back into one line, so `["bash", "-lc", "rm -rf /"]` is read as
/// bash would run it).
fn command_line(input: &Value) -> Option<String> {
    match input.get("command").or_else(|| input.get("cmd"))? {
        Value::String(s) => Some(s.clone()),
        Value::Array(argv) => {
            let words: Option<Vec<String>> = argv.iter().map(|v| v.as_str().map(quote)).collect();
            Some(words?.join(" "))
        }
        _ => None,
    }
}

fn quote(word: &str) -> String {
    if !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c)) {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

fn strings(config: &Map<String, Value>, key: &str) -> Result<Option<Vec<String>>, String> {
    match config.get(key) {
        None => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().map(str::to_owned).ok_or_else(|| format!("config `{key}`: expected a list of strings")))
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(format!("config `{key}`: expected a list of strings")),
    }
}

fn options(config: &Map<String, Value>) -> Result<(ShellOptions, Option<Vec<String>>), String> {
    // Any other key is a mistake the operator should hear about: the guard
    // refuses to decide (toolgate asks it once at load, so it is a problem
    // of the file).
    let known = || toolgate_guards::SHELL_OPTIONS.iter().map(|(name, _)| *name);
    if let Some(unknown) = config.keys().find(|k| !known().any(|n| n == k.as_str())) {
        return Err(format!(
            "config `{unknown}`: not an option of toolgate:shell (it has {})",
            known().collect::<Vec<_>>().join(", ")
        ));
    }
    let mut options = ShellOptions::default();
    if let Some(v) = strings(config, "workspaces")? {
        options.workspaces = v;
    }
    if let Some(v) = strings(config, "protected_branches")? {
        options.protected_branches = v;
    }
    if let Some(v) = strings(config, "allow_classes")? {
        if let Some(bad) = v.iter().find(|c| !toolgate_guards::SHELL_CLASSES.contains(&c.as_str())) {
            return Err(format!("config `allow_classes`: `{bad}` is not a class (they are {})", toolgate_guards::SHELL_CLASSES.join(", ")));
        }
        options.allow_classes = v;
    }
    if let Some(v) = strings(config, "deletable")? {
        options.deletable.extend(v);
    }
    if let Some(v) = strings(config, "trusted_installers")? {
        options.trusted_installers = v;
    }
    Ok((options, strings(config, "tools")?))
}

toolgate_hook::export!(Shell);
