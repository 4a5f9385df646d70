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
//! name neither the hook nor (for type errors) the field. The fields it
//! knows are tables (name, meaning, schema of the value), from which the
//! JSON Schema editors use is built ([`json_schema`]; see `schema` for why
//! not schemars). `"$schema"` (that schema's URL or path, for an editor) is
//! accepted at the top and ignored.
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
//! - managed (the machine's, root's): `<managed dir>/hooks.json`
//!   ([`Loader::managed_dir`]; the binary's is `/etc/toolgate`, see the
//!   README's "Managed policy layer").
//!
//! A missing file means "no hooks there". Managed hooks run before global
//! hooks, global before workspace; see the runner's `# Order`.
//!
//! # The managed layer binds what is below it
//!
//! Its file is read first and only if root alone could have written it (it,
//! its folder and every folder above: `safe_fs::read_root_owned`); else the
//! whole load fails, since a policy another user could edit is none. Its
//! hooks need no trust. Its operator settings bind the global config, which
//! may only tighten them (`Config::settle`): the lower chain deadline wins,
//! a managed `untrusted_hooks: "deny"` and `require_confinement: true`
//! stand, and while the managed layer requires confinement only its own
//! `unconfined_workspace_hooks` exempt a hook (the user's would undo it).
//! Its own settings are refused in any other file: `managed_hooks_only`
//! (the global and workspace configs are not read at all, so nothing in
//! them, a broken file included, changes what runs), `allowed_registries`
//! (kept for the OCI loader), and `forbid_on_failure_allow`, which makes a
//! global or workspace hook's `on_failure: "allow"` run as `"deny"` rather
//! than refusing the file: refusing would block every call of a user with
//! one lenient hook, where running it strictly keeps every guard working
//! (`toolgate hooks` marks each such hook). A hook below may share a
//! managed hook's name: every record and listing carries the source, and
//! refusing it would let a managed rollout break every workspace that
//! happened to use the name.
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
//! A workspace's hooks are workspace data: cloning a repository must not run
//! its commands without the user's say. After a workspace config is parsed,
//! `crate::trust::Admission` judges each hook by what its binding says it
//! needs (a command needs trust, a component does not) against what the
//! user recorded ([`Loader::trust`]), and wraps the decider of each hook that
//! needs trust in its gate; one that does not match never runs (see
//! `trust`). `untrusted_hooks` (what such a hook's calls get) is read from
//! the global or managed config only, like `chain_timeout_ms`.

mod def;
pub(crate) mod hook;
mod schema;

pub use crate::safe_fs::FileIdentity;
pub use def::HookDef;
pub use hook::CONFIG_SCHEMA;
pub use schema::json_schema;
pub use toolgate_fs::workspace::{FoundWorkspace, find_workspace};

pub use crate::binding::parse::BindingOptions;
pub use crate::binding::parse::Problem;
#[cfg(feature = "wasm")]
use crate::binding::wasm::WasmOptions;
use crate::binding::{BindingKind, BindingSpec, Participant};
use crate::contract::{Event, Source, ToolFilter};
use crate::failure::OnFailure;
use crate::trust::{TrustCtx, TrustState, TrustStore, UntrustedPolicy};
use regex_automata::meta::Regex;
use serde::Serialize;
use serde_json::{Value, json};
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;
use toolgate_fs::workspace::absolute;

pub use toolgate_contract::contract::{MAX_TIMEOUT_MS, MIN_TIMEOUT_MS};

/// The workspace config's path relative to the workspace.
pub const WORKSPACE_FILE: &str = ".toolgate/hooks.json";

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
    /// `enforce`, or `shadow`: run and recorded, never applied.
    pub mode: crate::failure::Mode,
    /// Who put it in shadow when its own `mode` did not: its file's `mode`,
    /// or the managed layer's `shadow_hooks`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode_by: Option<&'static str>,
    /// Its `on_failure: "allow"` runs as `"deny"`: the managed layer sets
    /// `forbid_on_failure_allow`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub on_failure_forced: bool,
    /// For a workspace hook: whether it may run (see `trust`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trust: Option<TrustState>,
    #[serde(skip)]
    compiled_matcher: Option<Regex>,
    #[serde(skip)]
    pub(crate) gate: Option<std::sync::Arc<crate::trust::Gate>>,
}

impl HookSpec {
    /// The binding's kind.
    pub fn binding_kind(&self) -> BindingKind {
        self.binding.kind()
    }

    fn into_participant(self) -> Participant {
        let decider = self.binding.decider(self.timeout_ms);
        let scope = format!("{}:{}:{}", self.source, self.name, self.binding.runs());
        Participant {
            scope,
            decider: match self.gate {
                Some(gate) => crate::trust::guard(gate, decider),
                None => decider,
            },
            binding: self.binding.kind(),
            name: self.name,
            source: self.source,
            events: self.events,
            filter: ToolFilter {
                tools: self.tools,
                matcher: self.compiled_matcher,
            },
            on_failure: self.on_failure,
            shadow: self.mode == crate::failure::Mode::Shadow,
            config: self.config,
        }
    }
}

/// What toolgate sets in a confined hook's environment itself
/// (`binding::command::confine::environment`): `confined_env` cannot name
/// them.
pub(crate) const RESERVED_ENV: &[&str] =
    &["PATH", "HOME", "TMPDIR", "PYTHONDONTWRITEBYTECODE", "LANG"];

/// The hooks loaded from the global and workspace configs, global first.
#[derive(Clone, Debug, Default)]
pub struct Config {
    hooks: Vec<HookSpec>,
    files: Vec<LoadedFile>,
    chain_timeout_ms: Option<u64>,
    untrusted: UntrustedPolicy,
    /// `require_confinement` from the global config.
    require_confinement: bool,
    /// `unconfined_workspace_hooks` from the global config.
    unconfined: Vec<(PathBuf, String)>,
    /// `confined_reads` from the managed and global configs.
    confined_reads: Vec<PathBuf>,
    /// `confined_env` from the managed and global configs.
    confined_env: Vec<(String, String)>,
    /// The workspace's canonical root and its hooks.json digest (absent
    /// when there is no file).
    workspace: Option<(PathBuf, Option<String>)>,
    /// The trust record consulted, and the identity of what was read there.
    trust_record: Option<(PathBuf, Option<FileIdentity>)>,
    /// Each layer's `signing`, as read so far.
    signing: crate::signing::Layers,
    /// A workspace hook was refused for the state of the machine, which
    /// [`Config::sources`] does not record (see [`Config::settled`]).
    unsettled: bool,
    /// The managed layer's settings, when its file was read.
    managed: Option<ManagedSettings>,
    /// Configs not read because the managed layer says `managed_hooks_only`.
    ignored: Vec<LoadedFile>,
}

/// What the managed layer (`<managed dir>/hooks.json`, owned by root)
/// enforces: its own settings, and the operator settings it gave, which
/// bind the global config (see [`Config`]'s combine rules in `parse_text`).
#[derive(Clone, Debug, Default, Serialize)]
#[non_exhaustive]
pub struct ManagedSettings {
    /// `managed_hooks_only`: the global and workspace configs are not read.
    pub hooks_only: bool,
    /// `forbid_on_failure_allow`: a global or workspace hook's `on_failure:
    /// "allow"` runs as `"deny"`.
    pub forbid_on_failure_allow: bool,
    /// `shadow_hooks`: global or workspace hooks, by name, that run in shadow.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub shadow_hooks: Vec<String>,
    /// `allowed_registries`: the registries (`host[:port]`, lowercased) an
    /// `oci://` component may come from; `None`: any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed_registries: Option<Vec<String>>,
    /// `chain_timeout_ms` as the managed file gives it: the global config
    /// may only lower it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chain_timeout_ms: Option<u64>,
    /// `untrusted_hooks` as the managed file gives it: `deny` binds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub untrusted_hooks: Option<UntrustedPolicy>,
    /// `require_confinement` as the managed file gives it: `true` binds,
    /// and then only the managed `unconfined_workspace_hooks` exempt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub require_confinement: Option<bool>,
    /// `unconfined_workspace_hooks` as the managed file gives them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unconfined_workspace_hooks: Vec<UnconfinedHook>,
}

/// One `unconfined_workspace_hooks` entry.
#[derive(Clone, Debug, Serialize)]
pub struct UnconfinedHook {
    /// The workspace's canonical root.
    pub workspace: PathBuf,
    /// The hook's name there.
    pub hook: String,
}

impl ManagedSettings {
    /// Each setting in force, as `key = value` words, for `toolgate hooks`.
    pub fn in_force(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if self.hooks_only {
            lines.push("managed_hooks_only: the global and workspace configs are not read".into());
        }
        if self.forbid_on_failure_allow {
            lines.push(
                "forbid_on_failure_allow: a global or workspace hook's on_failure \"allow\" runs as \"deny\""
                    .into(),
            );
        }
        if !self.shadow_hooks.is_empty() {
            lines.push(format!(
                "shadow_hooks: {} run in shadow (recorded, never applied)",
                self.shadow_hooks.join(", ")
            ));
        }
        if let Some(registries) = &self.allowed_registries {
            lines.push(format!(
                "allowed_registries: oci:// components only from {}",
                if registries.is_empty() {
                    "no registry".to_owned()
                } else {
                    registries.join(", ")
                }
            ));
        }
        if let Some(ms) = self.chain_timeout_ms {
            lines.push(format!(
                "chain_timeout_ms: {ms} (the global config may only lower it)"
            ));
        }
        match self.untrusted_hooks {
            Some(UntrustedPolicy::Deny) => {
                lines.push("untrusted_hooks: deny (the global config cannot make it skip)".into())
            }
            Some(UntrustedPolicy::Skip) => {
                lines.push("untrusted_hooks: skip (the global config may make it deny)".into())
            }
            None => {}
        }
        match self.require_confinement {
            Some(true) => lines.push(
                "require_confinement: true (the global config cannot turn it off, nor exempt hooks)"
                    .into(),
            ),
            Some(false) => lines.push(
                "require_confinement: false (the global config may turn it on)".into(),
            ),
            None => {}
        }
        for entry in &self.unconfined_workspace_hooks {
            lines.push(format!(
                "unconfined_workspace_hooks: {} in {}",
                entry.hook,
                entry.workspace.display()
            ));
        }
        lines
    }

    /// The registries an `oci://` component may come from (`None`: any);
    /// for the OCI loader to refuse the others at load.
    #[cfg(feature = "wasm")]
    pub(crate) fn allowed_registries(&self) -> Option<&[String]> {
        self.allowed_registries.as_deref()
    }
}

/// A file a loaded config was read from, as it was read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceFile {
    /// Where it was looked for.
    pub path: PathBuf,
    /// The identity of the bytes read (taken before they were read and
    /// checked after); `None` when nothing was there.
    pub identity: Option<FileIdentity>,
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
    /// The identity of the bytes read, when it was read.
    #[serde(skip)]
    pub identity: Option<FileIdentity>,
}

/// Which configs to load, and how to load components: what the embedding
/// program decides (the `toolgate` binary fills it from its flags and the
/// environment; the library reads no environment).
#[derive(Clone, Debug, Default)]
#[must_use]
pub struct Loader {
    managed_dir: Option<PathBuf>,
    global_dir: Option<PathBuf>,
    workspace: Option<PathBuf>,
    options: BindingOptions,
    trust: TrustCtx,
    only: Option<(Event, String)>,
    file: Option<PathBuf>,
}

impl Loader {
    /// Reads one hooks.json file instead of the global config: its hooks
    /// are the operator's own (no trust needed), as when they name it
    /// (`toolgate test --hooks`). Paths in it resolve as they would where it
    /// lives: a workspace's `.toolgate/hooks.json` against the workspace,
    /// any other file against its own folder. A missing file means no hooks.
    pub fn hooks_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.file = Some(path.into());
        self
    }

    /// Reads `dir/hooks.json` as the machine's managed policy layer: its
    /// hooks run first and need no trust, and its settings bind the
    /// configs below (see the module docs). `dir`, each folder above it
    /// and the file must be owned by root and writable by nobody else, and
    /// the file must not be a symlink; otherwise the whole load fails,
    /// naming the path and what is wrong. A missing `dir` or file means no
    /// managed layer.
    pub fn managed_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.managed_dir = Some(dir.into());
        self
    }

    /// Reads `dir/hooks.json` as the operator's global config.
    pub fn global_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.global_dir = Some(dir.into());
        self
    }

    /// Reads `workspace/.toolgate/hooks.json` as the workspace's config.
    pub fn workspace(mut self, workspace: impl Into<PathBuf>) -> Self {
        self.workspace = Some(workspace.into());
        self
    }

    /// How components are cached and run.
    #[cfg(feature = "wasm")]
    pub fn wasm(self, options: WasmOptions) -> Self {
        self.binding_options(options)
    }

    /// A binding's own load options, by type ([`WasmOptions`] is one): the
    /// loader carries them to the binding's parser without knowing them, so
    /// a new binding's options need no method here.
    pub fn binding_options<T: std::any::Any + Send + Sync>(mut self, options: T) -> Self {
        self.options.set(options);
        self
    }

    /// Where the user's trust in workspaces is recorded. Without a store,
    /// no workspace command hook is trusted (each is denied or skipped, as
    /// the global config's `untrusted_hooks` says).
    pub fn trust(mut self, store: TrustStore) -> Self {
        self.trust.store = Some(store);
        self
    }

    /// The search path (`PATH`'s value) a bare program name in a workspace
    /// command hook is looked up on, for pinning. The hook is then spawned
    /// from the path pinned. Without it, bare names cannot be pinned and
    /// such hooks are untrusted.
    pub fn search_path(mut self, path: impl Into<std::ffi::OsString>) -> Self {
        self.trust.search_path = Some(path.into());
        self
    }

    /// Treats this kernel as having no Landlock (for `why`): confined hooks
    /// run unconfined with a warning in each run record, or are refused
    /// when the global config sets `require_confinement`. For a host that
    /// knows better than the kernel probe, and for tests of that path.
    #[doc(hidden)]
    pub fn without_landlock(mut self, why: impl Into<String>) -> Self {
        self.trust.no_landlock = Some(why.into());
        self
    }

    /// Loads only the hooks that apply to one call (this event, this tool;
    /// for a call before the tool, the post hooks for the tool too, since a
    /// `replace` runs the post chain), for a process that evaluates that
    /// call and exits: the others' fields are still checked, but their
    /// components are not compiled or mapped. A config loaded this way is for
    /// that call only.
    pub fn only_for(mut self, event: Event, tool: impl Into<String>) -> Self {
        self.only = Some((event, tool.into()));
        self
    }

    fn only(&self) -> hook::Only<'_> {
        self.only.as_ref().map(|(e, t)| (*e, t.as_str()))
    }

    /// Loads the configs. Missing files mean no hooks; anything wrong in a
    /// file that exists is an error. Problems in both are reported together.
    pub fn load(&self) -> Result<Config, ConfigError> {
        let mut config = Config::default();
        let mut problems = Vec::new();
        if let Some(dir) = &self.managed_dir {
            config.read(
                Source::Managed,
                &dir.join("hooks.json"),
                (dir, &self.options, self.only()),
                &mut problems,
            );
            let confinement = config.confinement();
            for hook in &mut config.hooks {
                crate::trust::confine_global(&mut hook.binding, &self.trust, &confinement);
            }
        }
        if config.managed.as_ref().is_some_and(|m| m.hooks_only) {
            // Not read at all: nothing in them runs, and nothing in them
            // (a broken file included) changes what the managed layer says.
            let ignored = self
                .file
                .iter()
                .cloned()
                .chain(self.global_dir.iter().map(|d| d.join("hooks.json")))
                .map(|path| (Source::Global, path))
                .chain(
                    self.workspace
                        .iter()
                        .map(|ws| (Source::Workspace, absolute(ws).join(WORKSPACE_FILE))),
                );
            config.ignored = ignored
                .map(|(source, path)| LoadedFile {
                    found: path.exists(),
                    source,
                    path,
                    identity: None,
                })
                .collect();
            return ConfigError::or(config, problems);
        }
        // What the managed layer says binds how the files below load: the
        // registries their `oci://` components may come from.
        let options = config.options_below(&self.options);
        let first = config.hooks.len();
        if let Some(file) = &self.file {
            let dir = absolute(file.parent().unwrap_or(Path::new(".")));
            let root = match dir.file_name() {
                Some(name) if name == ".toolgate" => {
                    dir.parent().map_or(dir.clone(), Path::to_owned)
                }
                _ => dir,
            };
            config.read(
                Source::Global,
                file,
                (&root, &options, self.only()),
                &mut problems,
            );
            let confinement = config.confinement();
            for hook in &mut config.hooks[first..] {
                crate::trust::confine_global(&mut hook.binding, &self.trust, &confinement);
            }
        }
        let first = config.hooks.len();
        if let Some(dir) = &self.global_dir {
            config.read(
                Source::Global,
                &dir.join("hooks.json"),
                (dir, &options, self.only()),
                &mut problems,
            );
            let confinement = config.confinement();
            for hook in &mut config.hooks[first..] {
                crate::trust::confine_global(&mut hook.binding, &self.trust, &confinement);
            }
        }
        if let Some(ws) = &self.workspace {
            let ws = absolute(ws);
            let root = crate::trust::canonical_root(&ws);
            let first = config.hooks.len();
            let digest = config.read(
                Source::Workspace,
                &ws.join(WORKSPACE_FILE),
                (&ws, &options, self.only()),
                &mut problems,
            );
            if let Some(digest) = &digest {
                let admission = crate::trust::Admission::new(
                    digest,
                    &root,
                    &self.trust,
                    config.untrusted,
                    config.confinement(),
                );
                for hook in &mut config.hooks[first..] {
                    let judged = admission.judge(&hook.name, hook.binding.as_binding());
                    hook.trust = Some(judged.state);
                    hook.gate = judged.gate;
                    crate::trust::run_from_snapshot(&mut hook.binding, judged.run);
                }
                config.unsettled = !admission.settled();
                config.trust_record = admission.consulted();
            }
            config.workspace = Some((root, digest));
        }
        ConfigError::or(config, problems)
    }
}

impl Config {
    /// An empty configuration.
    pub fn empty() -> Self {
        Config::default()
    }

    /// Starts choosing what to load.
    pub fn loader() -> Loader {
        Loader::default()
    }

    /// Loads `global_dir/hooks.json` and `workspace/.toolgate/hooks.json`,
    /// either of which may be skipped, compiling components in memory (no
    /// cache; see [`Loader::wasm`]).
    pub fn load(
        global_dir: Option<&Path>,
        workspace: Option<&Path>,
    ) -> Result<Config, ConfigError> {
        let mut loader = Config::loader();
        loader.global_dir = global_dir.map(Path::to_owned);
        loader.workspace = workspace.map(Path::to_owned);
        loader.load()
    }

    /// Loads one file as the given source, resolving relative programs
    /// against `root`. A missing file is an error here. As
    /// [`Source::Managed`], the caller vouches for the file and the
    /// components it names (the root-ownership checks are
    /// [`Loader::managed_dir`]'s): its fields are read as the managed
    /// layer's.
    pub fn from_file(source: Source, path: &Path, root: &Path) -> Result<Config, ConfigError> {
        let mut config = Config::default();
        let mut problems = Vec::new();
        if !path.exists() && !path.is_symlink() {
            problems.push(Problem::file(path, "not read: no such file".into()));
        } else if source == Source::Managed {
            let mut vouched = BindingOptions::default();
            vouched.set(crate::binding::parse::CallerVouches);
            match crate::safe_fs::read_identified(path, crate::safe_fs::MAX_CONFIG_BYTES) {
                Ok((text, _)) => config.parse_text(
                    &text,
                    source,
                    path,
                    (&absolute(root), &vouched, None),
                    &mut problems,
                ),
                Err(e) => problems.push(Problem::file(
                    path,
                    format!("not read: {}", crate::text::error_chain(&e)),
                )),
            }
        } else {
            config.read(
                source,
                path,
                (&absolute(root), &BindingOptions::default(), None),
                &mut problems,
            );
        }
        ConfigError::or(config, problems)
    }

    /// Hooks built in code, validated and loaded as a file's would be, as
    /// the host's own ([`Source::Host`]): relative paths resolve against
    /// `root`. Problems name the file as `(hooks built in code)`.
    /// `options` are the bindings' own: `&WasmOptions` for components, or
    /// `BindingOptions::new()` for each binding's defaults.
    pub fn from_hooks(
        hooks: impl IntoIterator<Item = HookDef>,
        root: &Path,
        options: impl Into<BindingOptions>,
    ) -> Result<Config, ConfigError> {
        let options = options.into();
        let value = json!({
            "schema": CONFIG_SCHEMA,
            "hooks": hooks.into_iter().map(|h| Value::Object(h.fields)).collect::<Vec<_>>(),
        });
        let mut problems = Vec::new();
        let (hooks, _) = hook::parse_file(
            value,
            Source::Host,
            Path::new("(hooks built in code)"),
            (&absolute(root), &options, None),
            &crate::signing::Layers::default(),
            &mut problems,
        );
        ConfigError::or(
            Config {
                hooks,
                ..Config::default()
            },
            problems,
        )
    }

    /// The hooks, in consultation order (global, then workspace).
    pub fn hooks(&self) -> &[HookSpec] {
        &self.hooks
    }

    /// The files that were looked for, and whether each existed.
    pub fn files(&self) -> &[LoadedFile] {
        &self.files
    }

    /// Every file this config was read from, each with the identity of the
    /// bytes read: both hooks.json files (read or looked for), the trust
    /// record consulted, each component loaded. A program that keeps the
    /// config loaded (`toolgate serve`) loads it again when one of these no
    /// longer has that identity ([`FileIdentity::of_path`]); the identities
    /// are those the bytes were read under, so a file replaced while it was
    /// being loaded is always seen as changed.
    pub fn sources(&self) -> Vec<SourceFile> {
        let configs = self.files.iter().map(|f| SourceFile {
            path: f.path.clone(),
            identity: f.identity,
        });
        let trust = self.trust_record.iter().map(|(path, identity)| SourceFile {
            path: path.clone(),
            identity: *identity,
        });
        // What each binding says must be watched (a command's files are
        // checked by the trust gate itself before every call).
        let bindings = self
            .hooks
            .iter()
            .flat_map(|h| h.binding.watched())
            .map(|(path, identity)| SourceFile { path, identity });
        configs.chain(trust).chain(bindings).collect()
    }

    /// Whether this config is a function of its [`Config::sources`]: `false`
    /// when a workspace hook was refused for something they do not record:
    /// its private copy could not be made in the trust store (a full disk, a
    /// read-only store), its files could not be read (no descriptors left),
    /// or its files (not hooks.json) differ from what was trusted. A program
    /// that keeps the config loaded loads it again at the next call rather
    /// than refusing a trusted hook after the disk is freed.
    pub fn settled(&self) -> bool {
        !self.unsettled
    }

    /// The whole chain's deadline, when the global config sets
    /// `chain_timeout_ms` (only the operator's config may).
    pub fn chain_timeout(&self) -> Option<Duration> {
        self.chain_timeout_ms.map(Duration::from_millis)
    }

    /// What an untrusted workspace command hook's calls get
    /// (`untrusted_hooks` in the global config; deny by default).
    pub fn untrusted_policy(&self) -> UntrustedPolicy {
        self.untrusted
    }

    /// Whether a hook that should be confined and cannot be fails closed
    /// (`require_confinement` in the global config).
    pub fn require_confinement(&self) -> bool {
        self.require_confinement
    }

    /// What components of each layer are held to: whether they must be
    /// signed, by whom, and which keys count (see [`crate::signing::combine`]).
    pub fn signing(&self) -> crate::signing::Rules {
        self.signing.rules()
    }

    /// What the managed layer enforces, when its file was read.
    pub fn managed(&self) -> Option<&ManagedSettings> {
        self.managed.as_ref()
    }

    /// The configs not read because the managed layer sets
    /// `managed_hooks_only`.
    pub fn ignored(&self) -> &[LoadedFile] {
        &self.ignored
    }

    /// The registries an `oci://` component may come from, as the managed
    /// layer says (`None`: it says nothing, any registry).
    #[cfg(feature = "wasm")]
    pub(crate) fn allowed_registries(&self) -> Option<&[String]> {
        self.managed.as_ref()?.allowed_registries()
    }

    /// The binding options the global and workspace files load with: the
    /// embedder's, with the managed layer's `allowed_registries` in the
    /// component options (the managed file's own hooks are its author's
    /// choice and load with the embedder's options).
    fn options_below(&self, options: &BindingOptions) -> BindingOptions {
        #[cfg_attr(
            not(feature = "wasm"),
            expect(unused_mut, reason = "only components come from registries")
        )]
        let mut options = options.clone();
        #[cfg(feature = "wasm")]
        if let Some(allowed) = self.allowed_registries() {
            let mut wasm = options.get::<WasmOptions>().cloned().unwrap_or_default();
            wasm.oci.allowed_registries = Some(allowed.to_vec());
            options.set(wasm);
        }
        options
    }

    /// The loaded workspace's canonical root, and the digest of its
    /// hooks.json when it has one.
    pub fn workspace_config(&self) -> Option<(&Path, Option<&str>)> {
        self.workspace
            .as_ref()
            .map(|(root, digest)| (root.as_path(), digest.as_deref()))
    }

    pub(crate) fn into_participants(self) -> impl Iterator<Item = Participant> {
        self.hooks.into_iter().map(HookSpec::into_participant)
    }

    /// How hooks are confined, as the operator's files read so far say.
    fn confinement(&self) -> crate::trust::Confinement {
        crate::trust::Confinement {
            required: self.require_confinement,
            unconfined: self.unconfined.clone(),
            reads: self.confined_reads.clone(),
            env: self.confined_env.clone(),
        }
    }

    /// Reads one file's hooks into the config. Returns the digest of the
    /// bytes it parsed, when it read the file.
    fn read(
        &mut self,
        source: Source,
        path: &Path,
        (root, options, only): (&Path, &BindingOptions, hook::Only<'_>),
        problems: &mut Vec<Problem>,
    ) -> Option<String> {
        // A workspace's own config must stay inside the workspace, like every
        // file it names: a symlinked hooks.json is refused, not followed out.
        // The managed layer binds every user: only root may have written
        // it, its folder or any folder above.
        let limit = crate::safe_fs::MAX_CONFIG_BYTES;
        let read = match source {
            Source::Workspace => crate::safe_fs::beneath(path, root)
                .and_then(|p| crate::safe_fs::read_identified(&p, limit)),
            Source::Managed => crate::safe_fs::read_root_owned(root, "hooks.json", limit),
            Source::Global | Source::Host => crate::safe_fs::read_identified(path, limit),
        };
        let (text, identity) = match read {
            Ok(read) => read,
            Err(crate::safe_fs::ReadFileError::NotFound) if !path.is_symlink() => {
                self.files.push(LoadedFile {
                    source,
                    path: path.to_owned(),
                    found: false,
                    identity: None,
                });
                return None;
            }
            Err(e) => {
                self.files.push(LoadedFile {
                    source,
                    path: path.to_owned(),
                    found: true,
                    identity: None,
                });
                problems.push(Problem::file(
                    path,
                    format!("not read: {}", crate::text::error_chain(&e)),
                ));
                return None;
            }
        };
        self.files.push(LoadedFile {
            source,
            path: path.to_owned(),
            found: true,
            identity: Some(identity),
        });
        let digest = format!("blake3:{}", blake3::hash(&text).to_hex());
        self.parse_text(&text, source, path, (root, options, only), problems);
        Some(digest)
    }

    /// Takes in one file's text, read from `path`: its hooks and settings.
    pub(crate) fn parse_text(
        &mut self,
        text: &[u8],
        source: Source,
        path: &Path,
        (root, options, only): (&Path, &BindingOptions, hook::Only<'_>),
        problems: &mut Vec<Problem>,
    ) {
        // Errors give the line and column only: never the file's content.
        let value = match crate::strict_json::parse(text) {
            Ok(v) => v,
            Err(e) => {
                problems.push(Problem::file(path, e.to_string()));
                return;
            }
        };
        let (mut hooks, mut top) = hook::parse_file(
            value,
            source,
            path,
            (root, options, only),
            &self.signing,
            problems,
        );
        // The managed file is read first, so its signing rule is in force
        // when the global and workspace components are loaded.
        match (source, top.signing.take()) {
            (Source::Managed, Some(signing)) => self.signing.managed = Some(signing),
            (Source::Global, Some(signing)) => self.signing.global = Some(signing),
            _ => {}
        }
        if let Some(mut managed) = top.managed.take() {
            // Read first, so every setting below is judged against it.
            managed.chain_timeout_ms = top.chain_timeout_ms;
            managed.untrusted_hooks = top.untrusted;
            managed.require_confinement = top.require_confinement;
            managed.unconfined_workspace_hooks = top
                .unconfined
                .iter()
                .map(|(workspace, hook)| UnconfinedHook {
                    workspace: workspace.clone(),
                    hook: hook.clone(),
                })
                .collect();
            self.managed = Some(managed);
        }
        let file_shadow = top.mode == Some(crate::failure::Mode::Shadow);
        self.settle(source, top);
        self.shadow(source, file_shadow, &mut hooks);
        let forbid = self
            .managed
            .as_ref()
            .is_some_and(|m| m.forbid_on_failure_allow);
        if forbid && source != Source::Managed {
            for hook in hooks
                .iter_mut()
                .filter(|h| h.on_failure == OnFailure::Allow)
            {
                hook.on_failure = OnFailure::Deny;
                hook.on_failure_forced = true;
            }
        }
        self.hooks.extend(hooks);
    }

    /// Puts `hooks` (one file's, from `source`) in shadow where their file's
    /// `mode` or the managed layer's `shadow_hooks` says: a file's mode
    /// reaches its own hooks, `shadow_hooks` every layer's but the managed
    /// one's, so no user's file shadows a managed hook.
    fn shadow(&self, source: Source, file_shadow: bool, hooks: &mut [HookSpec]) {
        let managed_shadow: &[String] = match (source, &self.managed) {
            (Source::Managed, _) | (_, None) => &[],
            (_, Some(m)) => &m.shadow_hooks,
        };
        for hook in hooks
            .iter_mut()
            .filter(|h| h.mode != crate::failure::Mode::Shadow)
        {
            if file_shadow {
                hook.mode = crate::failure::Mode::Shadow;
                hook.mode_by = Some("its file's mode");
            } else if managed_shadow.contains(&hook.name) {
                hook.mode = crate::failure::Mode::Shadow;
                hook.mode_by = Some("the managed layer's shadow_hooks");
            }
        }
    }

    /// Takes in one file's operator settings, read after the managed
    /// layer's (which this applies first): a managed value binds, so a later
    /// file may only tighten it. The chain's deadline only drops; a managed
    /// `untrusted_hooks: "deny"` stays deny; a managed `require_confinement:
    /// true` stays on, and then only the managed layer's own
    /// `unconfined_workspace_hooks` exempt a hook (its author is the one
    /// who required confinement; a user's exemption would undo it).
    fn settle(&mut self, source: Source, top: hook::Top) {
        let bound = match source {
            Source::Managed => ManagedSettings::default(),
            _ => self.managed.clone().unwrap_or_default(),
        };
        if let Some(ms) = top.chain_timeout_ms {
            self.chain_timeout_ms = Some(bound.chain_timeout_ms.map_or(ms, |b| b.min(ms)));
        }
        if let Some(policy) = top.untrusted
            && bound.untrusted_hooks != Some(UntrustedPolicy::Deny)
        {
            self.untrusted = policy;
        }
        if let Some(required) = top.require_confinement {
            self.require_confinement = required || bound.require_confinement == Some(true);
        }
        if bound.require_confinement != Some(true) {
            self.unconfined.extend(top.unconfined);
            self.confined_reads.extend(top.confined_reads);
            self.confined_env.extend(top.confined_env);
        }
    }
}

/// Everything wrong with the configuration, one [`Problem`] per line.
#[derive(Debug, thiserror::Error)]
pub struct ConfigError {
    /// Each problem found.
    pub problems: Vec<Problem>,
}

impl ConfigError {
    fn or(config: Config, problems: Vec<Problem>) -> Result<Config, ConfigError> {
        if problems.is_empty() {
            Ok(config)
        } else {
            Err(ConfigError { problems })
        }
    }
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

/// What an embedder who leaves out the wasm binding gets from a config that
/// names a component. These run only in that build (`cargo test -p toolgate
/// --lib`, which .ci/run runs); the workspace's own build has the binding.
#[cfg(all(test, not(feature = "wasm")))]
mod without_the_wasm_feature {
    use super::{BindingOptions, Config, HookDef};
    use std::path::Path;

    #[test]
    fn a_wasm_hook_is_refused_at_load_naming_the_hook_the_field_and_the_feature() {
        let err = Config::from_hooks(
            [
                HookDef::command("guard", ["true"]),
                HookDef::wasm("redact", "hooks/redact.wasm").fuel(1_000_000),
            ],
            Path::new("/"),
            BindingOptions::new(),
        )
        .expect_err("a component hook cannot load without the wasm binding");
        let [problem] = err.problems.as_slice() else {
            panic!("one problem, for the wasm hook: {err}");
        };
        assert_eq!(problem.index, Some(1), "{err}");
        assert_eq!(problem.name.as_deref(), Some("redact"), "{err}");
        assert_eq!(problem.field.as_deref(), Some("wasm"), "{err}");
        assert!(
            problem.message.contains("toolgate with its `wasm` feature"),
            "{err}"
        );
    }

    #[test]
    fn command_hooks_load_without_the_wasm_feature() {
        let config = Config::from_hooks(
            [HookDef::command("guard", ["true"])],
            Path::new("/"),
            BindingOptions::new(),
        )
        .expect("a command hook loads");
        assert_eq!(config.hooks().len(), 1);
    }
}
