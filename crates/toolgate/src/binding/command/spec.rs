//! The subprocess binding's part of hooks.json: `command` (an argv),
//! `protocol` (`toolgate`, the default, or `claude-code`) and `trust_files`
//! (files a workspace hook reads or loads that trust must pin too, beyond
//! its program and script; see `trust`).

use super::{CommandHook, limits};
use crate::binding::parse::{Common, Field, HookCtx, one_of_names, type_name};
use crate::binding::{Binding, BindingKind, BindingSpec, Configurable, Decider, WorkspaceTrust};
use crate::contract::Source;
use crate::protocol::Inward;
use crate::safe_fs::FileIdentity;
use serde::Serialize;
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Default `timeout_ms` for command hooks.
pub const DEFAULT_TIMEOUT_MS: u64 = 10_000;

pub(crate) const CONFIG: Configurable<BindingSpec> = Configurable {
    key: Field {
        name: "command",
        about: "The program to run and its arguments, as an argv array (never a shell \
                string). A relative program path resolves against the folder holding \
                .toolgate/ (a workspace) or hooks.json (the global config); a bare name is \
                looked up on PATH.",
        schema: || {
            json!({
                "type": "array",
                "minItems": 1,
                "prefixItems": [{"type": "string", "minLength": 1}],
                "items": {"type": "string"},
            })
        },
    },
    fields: &[
        Field {
            name: "protocol",
            about: "How the command is spoken to: \"toolgate\" (wire v1, the default), or an \
                    agent's hook protocol, to run a hook written for that agent unchanged.",
            schema: || one_of_names(Inward::VARIANTS),
        },
        Field {
            name: "trust_files",
            about: "Files or folders a workspace hook reads or loads as code, beyond its \
                    program and script: trusting the workspace pins them too.",
            schema: || json!({"type": "array", "items": {"type": "string"}}),
        },
        Field {
            name: "confine",
            about: "Global config only: run this hook confined like a workspace hook (no \
                    network, writes only to a scratch folder).",
            schema: || json!({"type": "boolean"}),
        },
    ],
    example: "an argv such as [\"./hooks/guard.py\"]",
    default_timeout_ms: DEFAULT_TIMEOUT_MS,
    entry_schema: || serde_json::json!({}),
    default_events: |_| &["pre_tool_use"],
    parse,
};

/// A configured argv hook.
#[derive(Clone, Debug, Serialize)]
#[non_exhaustive]
pub struct CommandSpec {
    /// The argv as written.
    pub command: Vec<String>,
    /// The program as it will be exec'd: resolved against the config's
    /// root if it is a path, as written (looked up on `PATH`) if a bare
    /// name.
    pub program: PathBuf,
    /// The working directory it runs in (the config's root).
    pub cwd: PathBuf,
    /// How it is spoken to.
    pub protocol: Inward,
    /// `trust_files`: as written, and resolved.
    #[serde(skip)]
    pub(crate) trust_files: Vec<(String, PathBuf)>,
    /// `confine` (global hooks only): run confined like a workspace hook.
    #[serde(skip)]
    pub(crate) confine: bool,
    /// The program and arguments it is run with, when not `program` and
    /// `command[1..]`: a trusted workspace hook runs its interpreter (as
    /// pinned) on its snapshot (see `trust`). `program` and `command` stay
    /// as the config says, so the pin is always computed from them.
    #[serde(skip)]
    pub(crate) run: Option<(PathBuf, Vec<String>)>,
    /// How it is confined, when it is.
    #[serde(skip)]
    pub(crate) sandbox: Option<super::confine::Sandbox>,
}

impl Binding for CommandSpec {
    fn kind(&self) -> BindingKind {
        BindingKind::Subprocess
    }

    fn runs(&self) -> String {
        match self.protocol.label() {
            None => self.command.join(" "),
            Some(label) => format!("{} ({label})", self.command.join(" ")),
        }
    }

    fn decider(&self, timeout_ms: u64) -> Arc<dyn Decider> {
        let (program, args) = self.run.clone().unwrap_or_else(|| {
            (
                self.program.clone(),
                self.command.iter().skip(1).cloned().collect(),
            )
        });
        Arc::new(CommandHook {
            program,
            args,
            cwd: self.cwd.clone(),
            limits: limits(Duration::from_millis(timeout_ms)),
            protocol: self.protocol,
            sandbox: self.sandbox.clone(),
        })
    }

    fn limits(&self) -> Option<String> {
        None
    }

    fn warning(&self) -> Option<&str> {
        None
    }

    /// A command runs whatever the repository put in its argv: it needs
    /// trust.
    fn workspace_trust(&self) -> WorkspaceTrust<'_> {
        WorkspaceTrust::Program {
            argv: &self.command,
            program: &self.program,
            trust_files: &self.trust_files,
        }
    }

    /// Nothing: what a trusted command runs is checked against its pin
    /// before every call, and runs from a snapshot.
    fn watched(&self) -> Vec<(PathBuf, Option<FileIdentity>)> {
        Vec::new()
    }
}

fn parse(
    obj: &Map<String, Value>,
    common: &Common<'_>,
    ctx: &mut HookCtx<'_>,
) -> Option<BindingSpec> {
    // A hook that names no binding: the loader said so, naming them all.
    let argv = parse_argv(obj.get("command")?, ctx)?;
    let program = parse_program(&argv, common, ctx)?;
    let protocol = parse_protocol(obj.get("protocol"), ctx)?;
    let trust_files = parse_trust_files(obj.get("trust_files"), common, ctx)?;
    let confine = parse_confine(obj.get("confine"), common.source, ctx)?;
    Some(BindingSpec::Subprocess(CommandSpec {
        command: argv,
        program,
        cwd: common.root.to_owned(),
        protocol,
        trust_files,
        confine,
        run: None,
        sandbox: None,
    }))
}

/// `command`: an argv array of strings, never a shell string.
fn parse_argv(value: &Value, ctx: &mut HookCtx<'_>) -> Option<Vec<String>> {
    let argv: Vec<String> = match value {
        Value::String(_) => {
            // The string is not repeated: an error never quotes the file
            // (a command line may carry a secret).
            ctx.problem(
                "command",
                "must be an argv array, not a shell string; write [\"sh\", \"-c\", \"<the \
                 command>\"] if a shell is really meant"
                    .to_owned(),
            );
            return None;
        }
        Value::Array(items) => {
            let mut argv = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                match item {
                    Value::String(s) => argv.push(s.clone()),
                    other => {
                        ctx.problem(
                            "command",
                            format!("element {i} must be a string, got {}", type_name(other)),
                        );
                        return None;
                    }
                }
            }
            argv
        }
        other => {
            ctx.problem(
                "command",
                format!("expected an argv array, got {}", type_name(other)),
            );
            return None;
        }
    };
    match argv.first().map(String::as_str) {
        None => ctx.problem(
            "command",
            "empty argv; the first element is the program to run",
        ),
        Some("") => ctx.problem("command", "the program (element 0) is an empty string"),
        Some(_) => return Some(argv),
    }
    None
}

/// `argv[0]` resolved: a path (relative ones against the config's root,
/// staying in a workspace), or a name looked up on `PATH` when it runs.
fn parse_program(argv: &[String], common: &Common<'_>, ctx: &mut HookCtx<'_>) -> Option<PathBuf> {
    let first = argv.first()?;
    let written = Path::new(first);
    if !first.contains('/') {
        return Some(written.to_owned());
    }
    // A relative program from a workspace config must stay in the workspace
    // after symlinks; an absolute one names a program on this machine (which
    // the trust gate pins). Either must be a regular file.
    let what = ("command", "program");
    let program = ctx.resolve(what, first, common, !written.is_absolute())?;
    if let Err(e) = crate::safe_fs::regular_file(&program) {
        ctx.refused_path(what.0, what.1, first, &program, common.root, e);
        return None;
    }
    Some(program)
}

/// `protocol`: how the command is spoken to (wire v1 by default).
fn parse_protocol(value: Option<&Value>, ctx: &mut HookCtx<'_>) -> Option<Inward> {
    match value {
        None => Some(Inward::default()),
        Some(Value::String(p)) if p.parse::<Inward>().is_ok() => p.parse().ok(),
        Some(other) => {
            let known: Vec<String> = Inward::VARIANTS.iter().map(|p| format!("{p:?}")).collect();
            ctx.problem(
                "protocol",
                format!(
                    "unknown protocol {other}; expected {} (\"toolgate\", wire v1, is the default)",
                    known.join(" or ")
                ),
            );
            None
        }
    }
}

/// `confine`: the operator's own hooks may ask to be confined; a
/// workspace's always are (unless the operator relaxes one).
fn parse_confine(value: Option<&Value>, source: Source, ctx: &mut HookCtx<'_>) -> Option<bool> {
    match (value, source) {
        (None, _) => Some(false),
        (Some(_), Source::Workspace) => {
            ctx.problem(
                "confine",
                "only the operator's global config sets `confine`; a workspace hook always runs \
                 confined unless the global config lists it in `unconfined_workspace_hooks`",
            );
            None
        }
        (Some(Value::Bool(b)), _) => Some(*b),
        (Some(other), _) => {
            ctx.problem(
                "confine",
                format!("expected true or false, got {}", type_name(other)),
            );
            None
        }
    }
}

/// `trust_files`: regular files or folders, inside the workspace for a
/// workspace hook (a folder is pinned and copied whole, like the folder of
/// the hook's own code).
fn parse_trust_files(
    value: Option<&Value>,
    common: &Common<'_>,
    ctx: &mut HookCtx<'_>,
) -> Option<Vec<(String, PathBuf)>> {
    let items = match value {
        None => return Some(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(other) => {
            ctx.problem(
                "trust_files",
                format!(
                    "expected an array of paths (such as [\"hooks/lib.py\"]), got {}",
                    type_name(other)
                ),
            );
            return None;
        }
    };
    let mut files = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let Value::String(written) = item else {
            ctx.problem(
                "trust_files",
                format!("element {i} must be a path string, got {}", type_name(item)),
            );
            return None;
        };
        let what = ("trust_files", "file");
        let path = ctx.resolve(what, written, common, true)?;
        if !path.is_dir()
            && let Err(e) = crate::safe_fs::regular_file(&path)
        {
            ctx.refused_path(what.0, what.1, written, &path, common.root, e);
            return None;
        }
        files.push((written.clone(), path));
    }
    Some(files)
}
