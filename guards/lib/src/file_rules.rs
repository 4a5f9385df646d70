//! `toolgate:paths`: reads and writes of secrets, writes to the agents'
//! and toolgate's own configuration, and writes outside the workspace, for
//! every tool that names a path: each agent's file tools, MCP filesystem
//! tools, and the redirections and file arguments of a shell command (read
//! by the shell guard's parser, so `cat x > ~/.bashrc` is a write of
//! `~/.bashrc` and `echo "> ~/.bashrc"` is not).
//!
//! # What a guard cannot see
//!
//! Paths are resolved lexically (`..` folded against the working folder),
//! never against the file system, which a component cannot open: a symlink
//! inside the workspace that points outside it, a hard link to a secret,
//! or a path built at run time (`$(cat name)`) are not seen. The book says
//! so; the sandbox of the agent itself is the layer that sees real files.

use crate::guard::{Answer, Call, Options};
use crate::paths::{TEMP_DIRS, beneath, guard_config, harmless_device, resolve, secret_kind};
use crate::shell::parse;
use crate::shell_rules::{changed_files, read_files};
use crate::tools::{Access, SHELL_TOOLS, command_line, file_paths};
use serde_json::{Map, Value};

/// One rule per class, in the order they are tried.
pub const CLASSES: &[&str] = &[
    "secret-read",
    "secret-write",
    "guard-config",
    "outside-write",
];

/// The guard's options (each a list of strings).
pub const OPTIONS: &[(&str, &str)] = &[
    (
        "workspaces",
        "More folders (absolute) that count as the workspace, besides the agent's working directory.",
    ),
    (
        "writable",
        "Folders (absolute or ~/…) outside the workspace that may be written, besides the temp folders.",
    ),
    (
        "allow",
        "Paths (absolute, ~/… or relative to the workspace; a trailing /* covers a folder) that may be read and written although they look like secrets.",
    ),
    ("allow_classes", "Classes this guard lets through."),
];

struct Rules {
    workspaces: Vec<String>,
    writable: Vec<String>,
    allow: Vec<String>,
    allow_classes: Vec<String>,
}

/// `toolgate:paths` on one call (before it runs; after it, nothing to say).
pub fn decide(call: &Call<'_>, config: &Map<String, Value>) -> Result<Answer, String> {
    let read = Options::read("paths", config, OPTIONS)?;
    let rules = Rules {
        workspaces: read.list("workspaces")?.unwrap_or_default(),
        writable: read
            .list("writable")?
            .unwrap_or_default()
            .into_iter()
            .chain(TEMP_DIRS.iter().map(|d| (*d).to_owned()))
            .collect(),
        allow: read.list("allow")?.unwrap_or_default(),
        allow_classes: read.classes("allow_classes", CLASSES)?,
    };
    if !call.pre {
        return Ok(Answer::Allow);
    }
    for (path, access, program) in touched(call)? {
        if let Some((class, why)) = judge(&rules, call.cwd, &path, access) {
            if rules.allow_classes.iter().any(|c| c == class) {
                continue;
            }
            let by = program.map_or_else(|| format!("`{}`", call.tool), |p| format!("`{p}`"));
            return Ok(Answer::Deny {
                class,
                why: format!("{by} {why}"),
            });
        }
    }
    Ok(Answer::Allow)
}

/// The paths a call reads and writes, with the program that does (for a
/// shell command).
fn touched(call: &Call<'_>) -> Result<Vec<(String, Access, Option<String>)>, String> {
    Ok(if SHELL_TOOLS.contains(&call.tool) {
        let Some(line) = command_line(call.input) else {
            return Err(format!(
                "the `{}` tool's input has no `command` this guard can read",
                call.tool
            ));
        };
        shell_paths(&line)
    } else {
        file_paths(call.tool, call.input)
            .into_iter()
            .map(|(p, a)| (p, a, None))
            .collect()
    })
}

/// The secrets a call reads, as this guard's `secret-read` would name
/// them (`` `~/.aws/credentials`, cloud credentials``): shared with the
/// taint guard, which remembers such a read for the rest of the session.
pub fn secrets_read(call: &Call<'_>) -> Result<Vec<String>, String> {
    Ok(touched(call)?
        .into_iter()
        .filter(|(_, access, _)| *access == Access::Read)
        .filter_map(|(path, _, _)| {
            let resolved = resolve(&path, call.cwd);
            secret_kind(&resolved).map(|kind| format!("`{path}`, {kind}"))
        })
        .collect())
}

/// The paths a shell line reads and writes, with the program that does.
fn shell_paths(line: &str) -> Vec<(String, Access, Option<String>)> {
    let script = parse(line);
    let mut out = Vec::new();
    for cmd in &script.commands {
        let program = crate::shell_rules::program(cmd);
        let name = if program.is_empty() {
            "a redirection".to_owned()
        } else {
            program.to_owned()
        };
        for f in read_files(cmd) {
            if !f.starts_with('$') && !f.contains("://") && crate::paths::may_be_secret(&f) {
                out.push((f, Access::Read, Some(name.clone())));
            }
        }
        // Permissions are not contents: `chmod 600 ~/.ssh/id_ed25519` is
        // routine care of a key (and system-wide chmod is the shell guard's).
        let changes = if matches!(program, "chmod" | "chown" | "chgrp") {
            Vec::new()
        } else {
            changed_files(cmd)
        };
        for f in changes {
            if !f.starts_with('$') && !f.is_empty() {
                out.push((f, Access::Write, Some(name.clone())));
            }
        }
    }
    out
}

/// What is wrong with touching `path` this way, if anything.
fn judge(
    rules: &Rules,
    cwd: Option<&str>,
    path: &str,
    access: Access,
) -> Option<(&'static str, String)> {
    let resolved = resolve(path, cwd);
    let allowed = rules.allow.iter().any(|a| {
        let a = resolve(a, cwd);
        match a.strip_suffix("/*") {
            Some(dir) => beneath(&resolved, dir),
            None => resolved == a,
        }
    });
    let shown = if resolved == path {
        format!("`{path}`")
    } else {
        format!("`{path}` ({resolved})")
    };
    if !allowed && let Some(kind) = secret_kind(&resolved) {
        return Some(match access {
            Access::Read => ("secret-read", format!("reads {shown}, {kind}")),
            Access::Write => ("secret-write", format!("writes {shown}, {kind}")),
        });
    }
    if access == Access::Read {
        return None;
    }
    if let Some(what) = guard_config(&resolved) {
        return Some(("guard-config", format!("changes {shown}, {what}")));
    }
    let inside = cwd.is_some_and(|c| beneath(&resolved, c))
        || rules.workspaces.iter().any(|w| beneath(&resolved, w))
        || rules
            .writable
            .iter()
            .any(|w| beneath(&resolved, &resolve(w, cwd)))
        || (cwd.is_none() && !resolved.starts_with(['/', '~']) && !resolved.starts_with(".."))
        || (resolved.starts_with("/dev/") && harmless_device(&resolved));
    (!inside).then(|| {
        (
            "outside-write",
            format!("writes {shown}, outside the workspace"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guard::Call;

    fn judge(line: &str) -> Answer {
        let input = serde_json::json!({"command": line});
        let call = Call {
            pre: true,
            tool: "Bash",
            input: &input,
            output: None,
            cwd: Some("/home/dev/project"),
        };
        decide(&call, &Map::new()).unwrap()
    }

    /// Changing a key's permissions is looking after it, not writing it;
    /// replacing or deleting it is.
    #[test]
    fn a_permission_change_is_not_a_write() {
        assert_eq!(judge("chmod 600 ~/.ssh/id_ed25519"), Answer::Allow);
        assert_eq!(judge("chown dev ~/.aws/credentials"), Answer::Allow);
        assert!(matches!(
            judge("rm ~/.ssh/id_ed25519"),
            Answer::Deny {
                class: "secret-write",
                ..
            }
        ));
        assert!(matches!(
            judge("cp k ~/.ssh/id_ed25519"),
            Answer::Deny {
                class: "secret-write",
                ..
            }
        ));
    }
}
