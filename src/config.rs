//! hooks.json: parse, validate, discover, load.
//!
//! # Rejection is the deliverable
//!
//! A config that is silently half-applied is worse than none: the operator
//! believes a guard is in place. So every problem — an unknown field (a typo of
//! `on_failure` must not quietly mean "default"), an unknown event, a bad
//! regex, an out-of-range timeout, a missing program — is an error naming the
//! file, the hook's index and name, and the field. All problems in a file are
//! reported at once, so one run of `toolgate hooks --check` shows everything to
//! fix. No value is ever coerced toward the permissive branch.
//!
//! The file is parsed as JSON first and each hook validated field by field,
//! rather than with `#[serde(deny_unknown_fields)]`, because serde's errors
//! name neither the hook nor (for type errors) the field.
//!
//! # Where configs live
//!
//! - global (the operator's): `$TOOLGATE_CONFIG_DIR/hooks.json`, else
//!   `$XDG_CONFIG_HOME/toolgate/hooks.json`, else
//!   `$HOME/.config/toolgate/hooks.json`;
//! - workspace (the repository's): `<workspace>/.toolgate/hooks.json`. A
//!   harness that knows its workspace gives it (`--workspace`,
//!   `$CLAUDE_PROJECT_DIR`); otherwise [`find_workspace`] walks up from the
//!   working directory to the nearest ancestor with a `.toolgate/`, the way
//!   git finds `.git` — an agent started in `src/` must not silently skip the
//!   repository's hooks. `toolgate hooks` says which workspace it used.
//!
//! A missing file means "no hooks there". Global hooks run before workspace
//! hooks; see the runner's `# Order`.
//!
//! # Files a config names, and what only the operator may set
//!
//! Every file is read through `safe_fs`: regular files only, bounded, and for
//! a workspace config (hooks.json itself, `wasm` paths, relative program
//! paths) resolved beneath the workspace root after symlinks. The text is
//! parsed by `strict_json`: a repeated key is an error (`"hooks"` twice
//! would otherwise drop the guards silently), and no error quotes the file.
//! `chain_timeout_ms` is read from the global config only; a workspace that
//! sets it is refused, so a repository cannot stretch the chain's deadline
//! past the agent's own hook timeout.
//!
//! # Workspace commands and trust
//!
//! A workspace's hooks are workspace data: cloning a repository should not run
//! its commands without the operator's say. That gate (trust pinned to content
//! hashes, like a lockfile) is its own later piece of work; until then
//! workspace commands run as configured, and [`admit_workspace_hooks`] is the
//! seam where the gate goes.

use crate::claude::Protocol;
use crate::contract::Event;
use crate::failure::OnFailure;
use crate::process::{self, CommandHook};
use crate::runner::{BindingKind, Participant, Source, ToolFilter};
use crate::wasm::{self, ComponentInfo, WasmHook};
use regex_automata::meta::Regex;
use serde::Serialize;
use serde_json::{Map, Value};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The hooks.json schema this build reads.
pub const CONFIG_SCHEMA: u64 = 1;
/// Default `timeout_ms` for command hooks.
pub const DEFAULT_TIMEOUT_MS: u64 = 10_000;
/// Smallest accepted `timeout_ms`.
pub const MIN_TIMEOUT_MS: u64 = 1;
/// Largest accepted `timeout_ms` (10 minutes): a guard on a single tool call
/// that needs longer is a bug, not a policy.
pub const MAX_TIMEOUT_MS: u64 = 600_000;

/// The workspace config's path relative to the workspace.
pub const WORKSPACE_FILE: &str = ".toolgate/hooks.json";

const HOOK_FIELDS: &[&str] = &[
    "name",
    "command",
    "wasm",
    "fuel",
    "memory_mb",
    "protocol",
    "event",
    "tools",
    "matcher",
    "timeout_ms",
    "on_failure",
    "config",
];
const TOP_FIELDS: &[&str] = &["schema", "hooks", "chain_timeout_ms"];

/// One configured hook, validated.
#[derive(Clone, Debug, Serialize)]
#[non_exhaustive]
pub struct HookSpec {
    /// Its name (unique within its file).
    pub name: String,
    /// Global or workspace.
    pub source: Source,
    /// The file that declared it.
    pub file: PathBuf,
    /// Its index in that file's `hooks` array.
    pub index: usize,
    /// How it runs.
    #[serde(flatten)]
    pub binding: BindingSpec,
    /// The events it is consulted for.
    pub events: Vec<Event>,
    /// Exact tool names it applies to, if restricted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Whole-name regex of tools it applies to, if restricted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matcher: Option<String>,
    /// Its deadline.
    pub timeout_ms: u64,
    /// What a failure becomes.
    pub on_failure: OnFailure,
    /// Its `config`, handed to it in every request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config: Option<Value>,
    #[serde(skip)]
    compiled_matcher: Option<Regex>,
}

/// How a configured hook runs.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "binding", rename_all = "snake_case")]
#[non_exhaustive]
pub enum BindingSpec {
    /// An argv command.
    Subprocess {
        /// The argv as written.
        command: Vec<String>,
        /// The program as it will be exec'd: resolved against the config's
        /// root if it is a path, as written (looked up on `PATH`) if a bare
        /// name.
        program: PathBuf,
        /// The working directory it runs in (the config's root).
        cwd: PathBuf,
        /// How it is spoken to.
        protocol: Protocol,
    },
    /// A WebAssembly component.
    Wasm {
        /// The component file, resolved against the config's root.
        wasm: PathBuf,
        /// Fuel per call.
        fuel: u64,
        /// Linear-memory limit per call, in MiB.
        memory_mb: u64,
        /// What loading it found (size, cache, imports).
        component: ComponentInfo,
        /// The compiled, pre-instantiated component.
        #[serde(skip)]
        loaded: Arc<WasmHook>,
    },
}

impl HookSpec {
    /// The binding's kind.
    pub fn binding_kind(&self) -> BindingKind {
        match self.binding {
            BindingSpec::Subprocess { .. } => BindingKind::Subprocess,
            BindingSpec::Wasm { .. } => BindingKind::Wasm,
        }
    }

    fn into_participant(self) -> Participant {
        let binding = self.binding_kind();
        let decider: Arc<dyn crate::runner::Decider> = match self.binding {
            BindingSpec::Subprocess {
                command,
                program,
                cwd,
                protocol,
            } => Arc::new(CommandHook {
                program,
                args: command.into_iter().skip(1).collect(),
                cwd,
                limits: process::limits(Duration::from_millis(self.timeout_ms)),
                protocol,
            }),
            BindingSpec::Wasm { loaded, .. } => loaded,
        };
        Participant {
            name: self.name,
            binding,
            source: self.source,
            events: self.events,
            filter: ToolFilter {
                tools: self.tools,
                matcher: self.compiled_matcher,
            },
            on_failure: self.on_failure,
            config: self.config,
            decider,
        }
    }
}

/// The hooks loaded from the global and workspace configs, global first.
#[derive(Clone, Debug, Default)]
pub struct Config {
    hooks: Vec<HookSpec>,
    files: Vec<LoadedFile>,
    chain_timeout_ms: Option<u64>,
}

/// A config file that was looked for.
#[derive(Clone, Debug, Serialize)]
pub struct LoadedFile {
    /// Global or workspace.
    pub source: Source,
    /// Where it was looked for.
    pub path: PathBuf,
    /// Whether it existed.
    pub found: bool,
}

impl Config {
    /// An empty configuration.
    pub fn empty() -> Self {
        Config::default()
    }

    /// Loads the global config (see [`global_dir`]) and the workspace's
    /// `.toolgate/hooks.json`. Missing files mean no hooks; anything wrong in
    /// a file that exists is an error.
    pub fn discover(workspace: &Path) -> Result<Config, ConfigError> {
        Config::load(global_dir().as_deref(), Some(workspace))
    }

    /// Loads `global_dir/hooks.json` and `workspace/.toolgate/hooks.json`,
    /// either of which may be skipped. Problems in both are reported together.
    pub fn load(
        global_dir: Option<&Path>,
        workspace: Option<&Path>,
    ) -> Result<Config, ConfigError> {
        let mut config = Config::default();
        let mut problems = Vec::new();
        if let Some(dir) = global_dir {
            config.read(Source::Global, &dir.join("hooks.json"), dir, &mut problems);
        }
        if let Some(ws) = workspace {
            let ws = absolute(ws);
            config.read(
                Source::Workspace,
                &ws.join(WORKSPACE_FILE),
                &ws,
                &mut problems,
            );
        }
        if problems.is_empty() {
            Ok(config)
        } else {
            Err(ConfigError { problems })
        }
    }

    /// Loads one file as the given source, resolving relative programs
    /// against `root`. A missing file is an error here.
    pub fn from_file(source: Source, path: &Path, root: &Path) -> Result<Config, ConfigError> {
        let mut config = Config::default();
        let mut problems = Vec::new();
        if !path.exists() && !path.is_symlink() {
            problems.push(Problem::file(path, "not read: no such file".into()));
        } else {
            config.read(source, path, &absolute(root), &mut problems);
        }
        if problems.is_empty() {
            Ok(config)
        } else {
            Err(ConfigError { problems })
        }
    }

    /// The hooks, in consultation order (global, then workspace).
    pub fn hooks(&self) -> &[HookSpec] {
        &self.hooks
    }

    /// The files that were looked for, and whether each existed.
    pub fn files(&self) -> &[LoadedFile] {
        &self.files
    }

    /// The whole chain's deadline, when the global config sets
    /// `chain_timeout_ms` (only the operator's config may).
    pub fn chain_timeout(&self) -> Option<Duration> {
        self.chain_timeout_ms.map(Duration::from_millis)
    }

    pub(crate) fn into_participants(self) -> impl Iterator<Item = Participant> {
        self.hooks.into_iter().map(HookSpec::into_participant)
    }

    fn read(&mut self, source: Source, path: &Path, root: &Path, problems: &mut Vec<Problem>) {
        // A workspace's own config must stay inside the workspace, like every
        // file it names: a symlinked hooks.json is refused, not followed out.
        let resolved = match source {
            Source::Workspace => crate::safe_fs::beneath(path, root),
            _ => Ok(path.to_owned()),
        };
        let text = match resolved
            .and_then(|p| crate::safe_fs::read(&p, crate::safe_fs::MAX_CONFIG_BYTES))
        {
            Ok(text) => text,
            Err(crate::safe_fs::ReadFileError::NotFound) if !path.is_symlink() => {
                self.files.push(LoadedFile {
                    source,
                    path: path.to_owned(),
                    found: false,
                });
                return;
            }
            Err(e) => {
                self.files.push(LoadedFile {
                    source,
                    path: path.to_owned(),
                    found: true,
                });
                problems.push(Problem::file(path, format!("not read: {e}")));
                return;
            }
        };
        self.files.push(LoadedFile {
            source,
            path: path.to_owned(),
            found: true,
        });
        // Errors give the line and column only: never the file's content.
        let value = match crate::strict_json::parse(&text) {
            Ok(v) => v,
            Err(e) => {
                problems.push(Problem::file(path, e.to_string()));
                return;
            }
        };
        let (mut hooks, chain_timeout_ms) = parse_file(value, source, path, root, problems);
        if chain_timeout_ms.is_some() {
            self.chain_timeout_ms = chain_timeout_ms;
        }
        if source == Source::Workspace {
            admit_workspace_hooks(&mut hooks);
        }
        self.hooks.extend(hooks);
    }
}

/// The trust gate for workspace hooks goes here. Today every workspace hook is
/// admitted as configured; see the module docs.
fn admit_workspace_hooks(_hooks: &mut Vec<HookSpec>) {}

/// How the workspace was found, for `toolgate hooks` and the agent commands.
#[derive(Clone, Debug, Serialize)]
pub struct FoundWorkspace {
    /// The workspace root: where `.toolgate/` was found, or the start
    /// directory when none was.
    pub root: PathBuf,
    /// Whether a `.toolgate/` was found.
    pub found: bool,
    /// Why the walk ended, in words.
    pub how: String,
}

/// The nearest directory at or above `start` that has a `.toolgate/`.
///
/// The walk stops (without a workspace) at the first of:
/// - a repository root (a directory with `.git`): hooks for a repository
///   come from the repository, not from whatever folder holds it;
/// - the user's home directory (`$HOME`, checked itself): nothing above it is
///   the user's project;
/// - a directory owned by someone other than the current user or root: a
///   `.toolgate/` planted in a shared folder (`/tmp`) by another user must
///   not configure this user's agent;
/// - the filesystem root.
///
/// When nothing is found the start directory is the workspace (with no
/// workspace hooks), and `how` says where the walk stopped.
pub fn find_workspace(start: &Path) -> FoundWorkspace {
    use std::os::unix::fs::MetadataExt;
    let start = absolute(start);
    let home = env_dir("HOME").map(|h| absolute(&h));
    let me = nix::unistd::geteuid().as_raw();
    let mut dir = start.as_path();
    loop {
        if dir.join(".toolgate").is_dir() {
            return FoundWorkspace {
                root: dir.to_owned(),
                found: true,
                how: if dir == start {
                    "the working directory has .toolgate/".into()
                } else {
                    format!("nearest ancestor of {} with .toolgate/", start.display())
                },
            };
        }
        let stop = if dir.join(".git").exists() {
            Some(format!("stopped at the repository root {}", dir.display()))
        } else if home.as_deref() == Some(dir) {
            Some(format!("stopped at the home directory {}", dir.display()))
        } else {
            None
        };
        let parent = dir.parent();
        let foreign = parent.and_then(|p| {
            let uid = std::fs::metadata(p).ok()?.uid();
            (uid != me && uid != 0).then(|| {
                format!(
                    "stopped below {}, which belongs to another user (uid {uid})",
                    p.display()
                )
            })
        });
        match (stop.or(foreign), parent) {
            (Some(how), _) => return not_found(start, how),
            (None, None) => return not_found(start, "stopped at the filesystem root".into()),
            (None, Some(parent)) => dir = parent,
        }
    }
}

fn not_found(start: PathBuf, how: String) -> FoundWorkspace {
    FoundWorkspace {
        how: format!("no .toolgate/ found ({how})"),
        root: start,
        found: false,
    }
}

/// The global config directory: `$TOOLGATE_CONFIG_DIR`, else
/// `$XDG_CONFIG_HOME/toolgate`, else `$HOME/.config/toolgate`.
pub fn global_dir() -> Option<PathBuf> {
    env_dir("TOOLGATE_CONFIG_DIR")
        .or_else(|| env_dir("XDG_CONFIG_HOME").map(|d| d.join("toolgate")))
        .or_else(|| env_dir("HOME").map(|h| h.join(".config").join("toolgate")))
}

/// A directory named by an environment variable; unset and empty are both
/// "not given", as XDG specifies.
pub(crate) fn env_dir(key: &str) -> Option<PathBuf> {
    std::env::var_os(key)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_owned())
}

/// Everything wrong with the configuration, one [`Problem`] per line.
#[derive(Debug, thiserror::Error)]
pub struct ConfigError {
    /// Each problem found.
    pub problems: Vec<Problem>,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.problems.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{p}")?;
        }
        Ok(())
    }
}

/// One thing wrong with a config file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// The file.
    pub file: PathBuf,
    /// The hook's index in `hooks`, when the problem is in a hook.
    pub index: Option<usize>,
    /// The hook's name, when it has a usable one.
    pub name: Option<String>,
    /// The field, when the problem is in one.
    pub field: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl Problem {
    fn file(path: &Path, message: String) -> Self {
        Problem {
            file: path.to_owned(),
            index: None,
            name: None,
            field: None,
            message,
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(i) = self.index {
            write!(f, ": hooks[{i}]")?;
            if let Some(name) = &self.name {
                write!(f, " ({name:?})")?;
            }
        }
        if let Some(field) = &self.field {
            write!(f, ": field `{field}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

fn parse_file(
    value: Value,
    source: Source,
    path: &Path,
    root: &Path,
    problems: &mut Vec<Problem>,
) -> (Vec<HookSpec>, Option<u64>) {
    let top_problem = |field: &str, message: String| Problem {
        field: Some(field.to_owned()),
        ..Problem::file(path, message)
    };
    let Value::Object(mut top) = value else {
        problems.push(Problem::file(
            path,
            "expected an object like {\"schema\": 1, \"hooks\": [...]}".into(),
        ));
        return (Vec::new(), None);
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
            let parsed = parse_bounded(
                Some(value),
                "chain_timeout_ms",
                MIN_TIMEOUT_MS,
                MAX_TIMEOUT_MS,
                0,
                " ms",
                &mut ctx,
            );
            problems.extend(
                ctx.problems
                    .into_iter()
                    .map(|p| Problem { index: None, ..p }),
            );
            parsed
        }
    };
    let hooks = match top.remove("hooks") {
        None => return (Vec::new(), chain_timeout_ms),
        Some(Value::Array(hooks)) => hooks,
        Some(other) => {
            problems.push(top_problem(
                "hooks",
                format!("expected an array of hooks, got {}", type_name(&other)),
            ));
            return (Vec::new(), chain_timeout_ms);
        }
    };
    let mut specs: Vec<HookSpec> = Vec::new();
    for (index, hook) in hooks.into_iter().enumerate() {
        let mut ctx = HookCtx {
            path,
            index,
            name: None,
            problems: Vec::new(),
        };
        if let Some(spec) = parse_hook(hook, source, root, &mut ctx) {
            if specs.iter().any(|s| s.name == spec.name) {
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
    (specs, chain_timeout_ms)
}

struct HookCtx<'a> {
    path: &'a Path,
    index: usize,
    name: Option<String>,
    problems: Vec<Problem>,
}

impl HookCtx<'_> {
    fn problem(&mut self, field: &str, message: impl Into<String>) {
        self.problems.push(Problem {
            file: self.path.to_owned(),
            index: Some(self.index),
            name: self.name.clone(),
            field: (!field.is_empty()).then(|| field.to_owned()),
            message: message.into(),
        });
    }
}

fn parse_hook(
    value: Value,
    source: Source,
    root: &Path,
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
    for key in obj.keys() {
        if !HOOK_FIELDS.contains(&key.as_str()) {
            ctx.problem(key, unknown_field(key, HOOK_FIELDS));
        }
    }
    let is_wasm = match (obj.contains_key("command"), obj.contains_key("wasm")) {
        (true, true) => {
            ctx.problem(
                "wasm",
                "a hook has either `command` (argv) or `wasm` (a component), not both",
            );
            return None;
        }
        (false, true) => true,
        (_, false) => false,
    };
    let default_timeout = if is_wasm {
        wasm::DEFAULT_TIMEOUT_MS
    } else {
        DEFAULT_TIMEOUT_MS
    };
    let events = parse_events(obj.get("event"), ctx);
    let tools = parse_tools(obj.get("tools"), ctx);
    let (matcher, compiled_matcher) = parse_matcher(obj.get("matcher"), ctx);
    let timeout_ms = parse_timeout(obj.get("timeout_ms"), default_timeout, ctx);
    let on_failure = parse_on_failure(obj.get("on_failure"), ctx);
    let config = obj.get("config").cloned();
    if is_wasm && obj.contains_key("protocol") {
        ctx.problem("protocol", "only for `command` hooks");
    }
    let binding = if is_wasm {
        let fuel = parse_bounded(
            obj.get("fuel"),
            "fuel",
            1,
            wasm::MAX_FUEL,
            wasm::DEFAULT_FUEL,
            "",
            ctx,
        );
        let memory_mb = parse_bounded(
            obj.get("memory_mb"),
            "memory_mb",
            1,
            wasm::MAX_MEMORY_MB,
            wasm::DEFAULT_MEMORY_MB,
            " MiB",
            ctx,
        );
        // Compile only a hook whose every other field is valid.
        match (fuel, memory_mb, timeout_ms, ctx.problems.is_empty()) {
            (Some(fuel), Some(memory_mb), Some(timeout_ms), true) => parse_wasm(
                &obj,
                (source, root),
                WasmLimits {
                    fuel,
                    memory_mb,
                    timeout_ms,
                },
                config.as_ref(),
                ctx,
            ),
            _ => None,
        }
    } else {
        for field in ["fuel", "memory_mb"] {
            if obj.contains_key(field) {
                ctx.problem(
                    field,
                    "only for `wasm` hooks; a command hook is bounded by `timeout_ms`",
                );
            }
        }
        parse_command(&obj, source, root, ctx)
    };
    Some(HookSpec {
        name: name?,
        source,
        file: ctx.path.to_owned(),
        index: ctx.index,
        binding: binding?,
        events: events?,
        tools: tools?,
        matcher,
        timeout_ms: timeout_ms?,
        on_failure: on_failure?,
        config,
        compiled_matcher: compiled_matcher?,
    })
}

fn parse_command(
    obj: &Map<String, Value>,
    source: Source,
    root: &Path,
    ctx: &mut HookCtx<'_>,
) -> Option<BindingSpec> {
    let argv: Vec<String> = match obj.get("command") {
        None => {
            ctx.problem(
                "command",
                "missing; give `command` (an argv such as [\"./hooks/guard.py\"]) \
                 or `wasm` (a component such as \"hooks/guard.wasm\")",
            );
            return None;
        }
        Some(Value::String(s)) => {
            ctx.problem(
                "command",
                format!(
                    "must be an argv array, not a shell string; write [\"sh\", \"-c\", {s:?}] \
                     if a shell is really meant"
                ),
            );
            return None;
        }
        Some(Value::Array(items)) => {
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
        Some(other) => {
            ctx.problem(
                "command",
                format!("expected an argv array, got {}", type_name(other)),
            );
            return None;
        }
    };
    let Some(first) = argv.first() else {
        ctx.problem(
            "command",
            "empty argv; the first element is the program to run",
        );
        return None;
    };
    if first.is_empty() {
        ctx.problem("command", "the program (element 0) is an empty string");
        return None;
    }
    let written = Path::new(first);
    let program = if first.contains('/') {
        let resolved = if written.is_absolute() {
            written.to_owned()
        } else {
            root.join(written)
        };
        // A relative program from a workspace config must stay in the
        // workspace after symlinks; an absolute one names a program on this
        // machine (which the trust gate pins). Either must be a regular file.
        let checked = match (source, written.is_absolute()) {
            (Source::Workspace, false) => crate::safe_fs::beneath(&resolved, root)
                .and_then(|p| crate::safe_fs::regular_file(&p).map(|()| p)),
            _ => crate::safe_fs::regular_file(&resolved).map(|()| resolved.clone()),
        };
        match checked {
            Ok(program) => program,
            Err(e) => return refused_path(ctx, "command", "program", first, &resolved, root, e),
        }
    } else {
        written.to_owned()
    };
    let protocol = match obj.get("protocol") {
        None => Protocol::Toolgate,
        Some(Value::String(p)) if p == "toolgate" => Protocol::Toolgate,
        Some(Value::String(p)) if p == "claude-code" => Protocol::ClaudeCode,
        Some(other) => {
            ctx.problem(
                "protocol",
                format!("unknown protocol {other}; expected \"toolgate\" (wire v1, the default) or \"claude-code\""),
            );
            return None;
        }
    };
    Some(BindingSpec::Subprocess {
        command: argv,
        program,
        cwd: root.to_owned(),
        protocol,
    })
}

/// A wasm hook's validated limits.
struct WasmLimits {
    fuel: u64,
    memory_mb: u64,
    timeout_ms: u64,
}

fn parse_wasm(
    obj: &Map<String, Value>,
    (source, root): (Source, &Path),
    limits: WasmLimits,
    config: Option<&Value>,
    ctx: &mut HookCtx<'_>,
) -> Option<BindingSpec> {
    let WasmLimits {
        fuel,
        memory_mb,
        timeout_ms,
    } = limits;
    let written = match obj.get("wasm") {
        Some(Value::String(s)) if !s.is_empty() => s,
        Some(other) => {
            ctx.problem(
                "wasm",
                format!("expected the path of a component, got {other}"),
            );
            return None;
        }
        None => return None,
    };
    let joined = root.join(written);
    let checked = match source {
        // A workspace names only files in its own tree, whatever the path
        // looks like (absolute, `..`, or a symlink out).
        Source::Workspace => crate::safe_fs::beneath(&joined, root),
        _ => Ok(joined.clone()),
    };
    let path = match checked {
        Ok(path) => path,
        Err(e) => return refused_path(ctx, "wasm", "component", written, &joined, root, e),
    };
    match wasm::load(
        &path,
        wasm::default_cache_dir().as_deref(),
        fuel,
        memory_mb,
        timeout_ms,
        config,
    ) {
        Ok((loaded, component)) => Some(BindingSpec::Wasm {
            wasm: path,
            fuel,
            memory_mb,
            component,
            loaded: Arc::new(loaded),
        }),
        Err(e) => {
            ctx.problem("wasm", format!("component {written:?}: {e}"));
            None
        }
    }
}

/// Reports why a path a hook names was refused; returns `None` for the
/// caller to pass on.
fn refused_path<T>(
    ctx: &mut HookCtx<'_>,
    field: &str,
    what: &str,
    written: &str,
    resolved: &Path,
    root: &Path,
    error: crate::safe_fs::ReadFileError,
) -> Option<T> {
    let message = match error {
        crate::safe_fs::ReadFileError::NotFound => format!(
            "{what} {written:?} not found (resolved to {}; relative paths resolve against {})",
            resolved.display(),
            root.display()
        ),
        e => format!("{what} {written:?} {e}"),
    };
    ctx.problem(field, message);
    None
}

fn parse_bounded(
    value: Option<&Value>,
    field: &str,
    min: u64,
    max: u64,
    default: u64,
    unit: &str,
    ctx: &mut HookCtx<'_>,
) -> Option<u64> {
    match value {
        None => Some(default),
        Some(Value::Number(n)) => match n.as_u64() {
            Some(v) if (min..=max).contains(&v) => Some(v),
            _ => {
                ctx.problem(
                    field,
                    format!("{n} is out of range; expected a whole number in {min}..={max}{unit}"),
                );
                None
            }
        },
        Some(other) => {
            ctx.problem(
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

fn parse_timeout(value: Option<&Value>, default: u64, ctx: &mut HookCtx<'_>) -> Option<u64> {
    parse_bounded(
        value,
        "timeout_ms",
        MIN_TIMEOUT_MS,
        MAX_TIMEOUT_MS,
        default,
        " ms",
        ctx,
    )
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

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
