//! Shared helpers: temporary workspaces with real hook scripts, and
//! interceptors that record what they saw.

use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tempfile::TempDir;
use toolgate::{
    BoxError, Config, HookRequest, HookRunner, Interceptor, Outcome, RunRecord, Verdict,
};

/// A temporary directory holding a workspace (`ws/`) and a global config
/// directory (`global/`), each with hook scripts and a hooks.json.
pub(crate) struct Fixture {
    pub(crate) dir: TempDir,
}

impl Fixture {
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("ws/.toolgate")).unwrap();
        std::fs::create_dir_all(dir.path().join("global")).unwrap();
        Fixture { dir }
    }

    pub(crate) fn workspace(&self) -> PathBuf {
        self.dir.path().join("ws")
    }

    pub(crate) fn global(&self) -> PathBuf {
        self.dir.path().join("global")
    }

    /// The fixture's record of what toolgate answered before each call
    /// ran (`TOOLGATE_CALLS_DIR`), private as toolgate wants it: every
    /// process of one test that sets it reads one record.
    pub(crate) fn calls_dir(&self) -> PathBuf {
        use std::os::unix::fs::DirBuilderExt;
        let dir = self.dir.path().join("calls-record");
        let _ = std::fs::DirBuilder::new().mode(0o700).create(&dir);
        dir
    }

    /// A path inside the fixture for a hook to leave evidence in.
    pub(crate) fn marker(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Writes an executable script in the workspace's `hooks/` folder (a
    /// hook's code has a folder of its own: trust pins and copies that
    /// folder) and returns its workspace-relative path (`./hooks/name`).
    pub(crate) fn script(&self, name: &str, body: &str) -> String {
        let path = self.workspace().join("hooks").join(name);
        std::fs::create_dir_all(path.parent().expect("a parent")).unwrap();
        write_executable(&path, body);
        format!("./hooks/{name}")
    }

    /// Writes an executable script under the global config directory.
    pub(crate) fn global_script(&self, name: &str, body: &str) -> String {
        write_executable(&self.global().join(name), body);
        format!("./{name}")
    }

    /// Writes the workspace hooks.json with these hooks.
    ///
    /// A workspace may only name files in its own tree, so a `wasm` path
    /// outside it (the shared test guests, the built guest examples) is
    /// linked into `<ws>/.toolgate/guests/` and the hook points there: the
    /// layout a real repository has. Tests of the containment rule itself
    /// write hooks.json with `workspace_raw`.
    pub(crate) fn workspace_hooks(&self, mut hooks: Value) -> &Self {
        let ws = self.workspace();
        for hook in hooks.as_array_mut().into_iter().flatten() {
            let Some(path) = hook.get("wasm").and_then(Value::as_str).map(PathBuf::from) else {
                continue;
            };
            if !path.is_absolute() || path.starts_with(&ws) {
                continue;
            }
            let guests = ws.join(".toolgate/guests");
            std::fs::create_dir_all(&guests).unwrap();
            let name = path.file_name().expect("a wasm path names a file");
            let inside = guests.join(name);
            if !inside.exists() && std::fs::hard_link(&path, &inside).is_err() {
                std::fs::copy(&path, &inside).unwrap();
            }
            hook["wasm"] = json!(inside);
        }
        let text = json!({"schema": 1, "hooks": hooks}).to_string();
        std::fs::write(ws.join(".toolgate/hooks.json"), text).unwrap();
        self
    }

    /// Writes the global hooks.json with these hooks (keeping what
    /// [`Fixture::unconfine`] wrote).
    pub(crate) fn global_hooks(&self, hooks: Value) -> &Self {
        let mut global = self.global_config();
        global["hooks"] = hooks;
        std::fs::write(self.global().join("hooks.json"), global.to_string()).unwrap();
        self
    }

    /// The operator lets workspace hook `hook` run unconfined (its global
    /// config lists it in `unconfined_workspace_hooks`): for tests whose
    /// evidence is a file the hook writes outside its scratch folder.
    pub(crate) fn unconfine(&self, hook: &str) -> &Self {
        let mut global = self.global_config();
        let root = self.workspace().canonicalize().unwrap();
        let list = global
            .as_object_mut()
            .unwrap()
            .entry("unconfined_workspace_hooks")
            .or_insert_with(|| json!([]));
        list.as_array_mut()
            .unwrap()
            .push(json!({"workspace": root, "hook": hook}));
        std::fs::write(self.global().join("hooks.json"), global.to_string()).unwrap();
        self
    }

    fn global_config(&self) -> Value {
        std::fs::read(self.global().join("hooks.json"))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_else(|| json!({"schema": 1, "hooks": []}))
    }

    /// Writes raw text as the workspace hooks.json.
    pub(crate) fn workspace_raw(&self, text: &str) -> PathBuf {
        let path = self.workspace().join(".toolgate/hooks.json");
        std::fs::write(&path, text).unwrap();
        path
    }

    /// Loads both configs, as a user who reviewed and trusted the
    /// workspace as it is now (tests of the gate itself use `toolgate
    /// trust` and [`trust_store`]).
    pub(crate) fn config(&self) -> Config {
        self.trust();
        loader(&self.workspace())
            .global_dir(self.global())
            .load()
            .expect("config loads")
    }

    /// Records the workspace as it is now as trusted, in the store every
    /// test's `toolgate` uses.
    pub(crate) fn trust(&self) -> &Self {
        trust(&self.workspace());
        self
    }

    /// A runner over both configs and no interceptors.
    pub(crate) fn runner(&self) -> HookRunner {
        HookRunner::builder().config(self.config()).build()
    }
}

pub(crate) fn write_executable(path: &Path, body: &str) {
    std::fs::write(path, body).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The README and every page of the book (docs/, recursively), as
/// `(path from the repository root, text)`, sorted by path.
pub(crate) fn documentation() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages = vec!["README.md".to_owned()];
    let mut dirs = vec![root.join("docs")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("docs/ is readable") {
            let path = entry.expect("a docs/ entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                let rel = path.strip_prefix(root).expect("under the root");
                pages.push(rel.to_string_lossy().into_owned());
            }
        }
    }
    pages.sort();
    pages
        .into_iter()
        .map(|page| {
            let text = std::fs::read_to_string(root.join(&page)).expect("a page is readable");
            (page, text)
        })
        .collect()
}

/// The sources of the library an embedder builds (`toolgate` and the crates
/// below it), relative to the repository root.
pub(crate) const LIBRARY_SOURCES: &[&str] = &[
    "crates/toolgate-contract/src",
    "crates/toolgate-fs/src",
    "crates/toolgate-agents/src",
    "crates/toolgate-seam/src",
    "crates/toolgate-wasm/src",
    "crates/toolgate/src",
];

/// The sources the `toolgate` and `toolgate-hook` binaries are built from:
/// the library's ([`LIBRARY_SOURCES`]) and the crates only the binaries
/// build.
pub(crate) fn binary_sources() -> Vec<&'static str> {
    let mut dirs = vec![
        "src",
        "crates/toolgate-hook/src",
        "crates/toolgate-server/src",
        "crates/toolgate-log/src",
        "crates/toolgate-loopback/src",
        "crates/toolgate-mcp/src",
        "crates/toolgate-bench/src",
    ];
    dirs.extend_from_slice(LIBRARY_SOURCES);
    dirs
}

/// A python3 hook that appends its own name to `input.trace` (once) and
/// answers `modify`: proves order and threading at once. Idempotent, so it
/// agrees with its own earlier rewrite when re-judging a later one.
pub(crate) const TRACE_HOOK: &str = r#"#!/usr/bin/env python3
import json, sys
req = json.load(sys.stdin)
inp = req["input"]
trace = inp.setdefault("trace", [])
if req["hook"] not in trace:
    trace.append(req["hook"])
print(json.dumps({"decision": "modify", "input": inp}))
"#;

/// A shell hook that prints a fixed answer.
pub(crate) fn answer_script(answer: &Value) -> String {
    format!(
        "#!/bin/sh\ncat > /dev/null\nprintf '%s\\n' '{}'\n",
        answer.to_string().replace('\'', r"'\''")
    )
}

/// A shell hook that leaves a marker file, then allows.
pub(crate) fn marker_script(marker: &Path) -> String {
    format!(
        "#!/bin/sh\ncat > /dev/null\ntouch '{}'\necho '{{\"decision\":\"allow\"}}'\n",
        marker.display()
    )
}

/// An interceptor that answers from a closure and logs every request.
pub(crate) struct Scripted<F> {
    pub(crate) seen: Arc<Mutex<Vec<Value>>>,
    pub(crate) answer: F,
}

pub(crate) fn scripted<F>(answer: F) -> (Scripted<F>, Arc<Mutex<Vec<Value>>>)
where
    F: Fn(&HookRequest<'_>) -> Result<Verdict, BoxError> + Send + Sync + 'static,
{
    let seen = Arc::new(Mutex::new(Vec::new()));
    (
        Scripted {
            seen: seen.clone(),
            answer,
        },
        seen,
    )
}

#[async_trait::async_trait]
impl<F> Interceptor for Scripted<F>
where
    F: Fn(&HookRequest<'_>) -> Result<Verdict, BoxError> + Send + Sync + 'static,
{
    async fn pre_tool_use(&self, request: &HookRequest<'_>) -> Result<Verdict, BoxError> {
        self.seen
            .lock()
            .unwrap()
            .push(toolgate::wire::request_json(request));
        (self.answer)(request)
    }

    async fn post_tool_use(&self, request: &HookRequest<'_>) -> Result<Verdict, BoxError> {
        self.seen
            .lock()
            .unwrap()
            .push(toolgate::wire::request_json(request));
        (self.answer)(request)
    }
}

/// The record for the hook with this name.
pub(crate) fn record<'a>(outcome: &'a Outcome, name: &str) -> &'a RunRecord {
    outcome
        .runs
        .iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("no run record for {name}: {:#?}", outcome.runs))
}

/// Names of the participants that ran, in order.
pub(crate) fn ran(outcome: &Outcome) -> Vec<&str> {
    outcome.runs.iter().map(|r| r.name.as_str()).collect()
}

/// The failure message recorded for the hook with this name.
pub(crate) fn failure_message<'a>(outcome: &'a Outcome, name: &str) -> &'a str {
    let rec = record(outcome, name);
    match &rec.failure {
        Some(f) => &f.message,
        None => panic!("{name} did not fail: {rec:#?}"),
    }
}

/// The failure kind recorded for the hook with this name.
pub(crate) fn failure_kind(outcome: &Outcome, name: &str) -> toolgate::FailureKind {
    let rec = record(outcome, name);
    match &rec.failure {
        Some(f) => f.kind,
        None => panic!("{name} did not fail: {rec:#?}"),
    }
}

/// What the `toolgate` binary reads from its environment, and what each
/// test's `toolgate` gets for it (see [`hermetic`]). The README's table of
/// environment variables lists the same names, and so does the code:
/// `env_table.rs` fails when the three disagree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Given {
    /// An empty directory of this command's own (created for it).
    Fresh(&'static str),
    /// A directory that does not exist, the same for every command of the
    /// run: a server and its callers are then started with the same
    /// configuration, as `toolgate serve` requires (it refuses a caller
    /// whose global config differs from its own).
    Absent(&'static str),
    /// The run's trust state ([`state_home`]): `toolgate trust` in one
    /// process, `toolgate check` in the next, and the tests' own
    /// [`trust`] all share it. Records are per workspace, and every test has
    /// a temporary workspace of its own.
    RunState,
    /// The suite's compile cache ([`compile_cache`]): content-addressed,
    /// never the user's, kept between runs (a cold compile of the guest
    /// examples takes minutes).
    SuiteCache,
    /// This value.
    Fixed(&'static str),
    /// Unset: a test that wants it sets it.
    Removed,
    /// The test process's own: `PATH` (hooks run `python3` and `sh`), and
    /// `TMPDIR` (where the tests' own temporary directories are).
    Inherited,
}

/// Every environment variable the binary reads (docs/environment.md), and
/// what a test's `toolgate` gets for it.
pub(crate) const BINARY_ENV: &[(&str, Given)] = &[
    ("HOME", Given::Fresh("home")),
    ("XDG_CONFIG_HOME", Given::Fresh("config")),
    ("TOOLGATE_CONFIG_DIR", Given::Absent("config/toolgate")),
    ("TOOLGATE_MANAGED_DIR", Given::Removed),
    ("XDG_CACHE_HOME", Given::Fresh("cache")),
    ("TOOLGATE_CACHE_DIR", Given::SuiteCache),
    ("XDG_STATE_HOME", Given::RunState),
    ("XDG_RUNTIME_DIR", Given::Fresh("runtime")),
    ("TOOLGATE_SERVER", Given::Fixed("off")),
    ("TOOLGATE_SOCKET", Given::Removed),
    ("TOOLGATE_LOG", Given::Removed),
    ("TOOLGATE_DECISION_LOG", Given::Removed),
    // Each command's own: one test's calls never read as another's (the
    // tests that follow one call from its pre to its post set one folder).
    ("TOOLGATE_CALLS_DIR", Given::Fresh("calls-record")),
    ("TOOLGATE_DEBUG_DECISION_LOG_MAX_BYTES", Given::Removed),
    ("TOOLGATE_WASM_ALLOCATOR", Given::Removed),
    ("TOOLGATE_DEBUG_FAULT", Given::Removed),
    ("TOOLGATE_DEBUG_PAUSE_AFTER_READ", Given::Removed),
    ("TOOLGATE_DEBUG_HTTP_HEADER_TIMEOUT_MS", Given::Removed),
    ("TOOLGATE_REGISTRY_USER", Given::Removed),
    ("TOOLGATE_REGISTRY_PASSWORD", Given::Removed),
    ("CLAUDE_PROJECT_DIR", Given::Removed),
    ("COPILOT_PROJECT_DIR", Given::Removed),
    ("CURSOR_PROJECT_DIR", Given::Removed),
    ("CLAUDE_CONFIG_DIR", Given::Removed),
    ("CODEX_HOME", Given::Removed),
    ("GEMINI_CLI_HOME", Given::Removed),
    ("QWEN_HOME", Given::Removed),
    ("COPILOT_HOME", Given::Removed),
    ("GEMINI_CLI_SYSTEM_SETTINGS_PATH", Given::Removed),
    ("GEMINI_CLI_SYSTEM_DEFAULTS_PATH", Given::Removed),
    ("QWEN_CODE_SYSTEM_SETTINGS_PATH", Given::Removed),
    ("QWEN_CODE_SYSTEM_DEFAULTS_PATH", Given::Removed),
    ("NO_COLOR", Given::Removed),
    ("CLICOLOR_FORCE", Given::Removed),
    ("COLUMNS", Given::Removed),
    ("PATH", Given::Inherited),
    ("TMPDIR", Given::Inherited),
];

/// Set too, though the binary does not read them: what the hooks and tools
/// it runs may read.
const ALSO_FRESH: &[(&str, &str)] = &[("XDG_DATA_HOME", "data")];

/// The `toolgate` binary's canonical path: what `toolgate install` and the
/// agents' help entries name.
pub(crate) fn toolgate_path() -> String {
    Path::new(env!("CARGO_BIN_EXE_toolgate"))
        .canonicalize()
        .expect("the binary's path")
        .to_str()
        .expect("a UTF-8 path")
        .to_owned()
}

/// The real `toolgate` binary, run [`hermetic`]ally.
pub(crate) fn toolgate() -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_toolgate"));
    hermetic(&mut cmd);
    cmd
}

/// The lean client the suite runs: the root's `toolgate-hook` (beside
/// `toolgate`), or `$TOOLGATE_TEST_LEAN_CLIENT`, another build of it (CI
/// runs the lean client's tests again against the static build that
/// docs/server.md describes; it must sit beside a `toolgate`, which it
/// falls back to).
pub(crate) fn lean_client_exe() -> PathBuf {
    std::env::var_os("TOOLGATE_TEST_LEAN_CLIENT")
        .filter(|v| !v.is_empty())
        .map_or_else(
            || PathBuf::from(env!("CARGO_BIN_EXE_toolgate-hook")),
            PathBuf::from,
        )
}

/// The lean client ([`lean_client_exe`]), run [`hermetic`]ally.
pub(crate) fn toolgate_hook() -> std::process::Command {
    let mut cmd = std::process::Command::new(lean_client_exe());
    hermetic(&mut cmd);
    cmd
}

/// Gives `cmd` (the binary, or a program that runs it: `script`, a shell,
/// an agent's CLI) an environment of its own, so nothing of the user's
/// reaches the `toolgate` it runs: its own empty `HOME` and XDG directories,
/// no global config, the suite's compile cache and the run's trust store,
/// no server, and none of the switches in [`BINARY_ENV`]. A test that wants
/// one (the fixture's global config, a server, a fault) sets it afterwards.
/// The PreToolUse Claude Code sends before the `PostToolUse` hook input
/// `post` (the same session, call and input); `None` for any other input.
pub(crate) fn pre_of(post: &serde_json::Value) -> Option<serde_json::Value> {
    if post["hook_event_name"] != "PostToolUse" {
        return None;
    }
    let mut pre = post.clone();
    let fields = pre.as_object_mut()?;
    fields.remove("tool_response");
    fields.insert("hook_event_name".into(), "PreToolUse".into());
    Some(pre)
}

pub(crate) fn hermetic(cmd: &mut std::process::Command) -> &mut std::process::Command {
    use std::os::unix::fs::DirBuilderExt;
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let own = run_root().join("calls").join(
        CALLS
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            .to_string(),
    );
    let fresh = |name: &str| {
        let dir = own.join(name);
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .expect("a directory of the command's own");
        dir
    };
    for (key, given) in BINARY_ENV {
        match given {
            Given::Fresh(name) => cmd.env(key, fresh(name)),
            Given::Absent(name) => cmd.env(key, run_root().join("absent").join(name)),
            Given::RunState => cmd.env(key, state_home()),
            Given::SuiteCache => cmd.env(key, compile_cache()),
            Given::Fixed(value) => cmd.env(key, value),
            Given::Removed => cmd.env_remove(key),
            Given::Inherited => cmd,
        };
    }
    for (key, name) in ALSO_FRESH {
        cmd.env(key, fresh(name));
    }
    cmd
}

/// [`hermetic`], for a project's own build script that runs `toolgate`
/// (a scaffold's test.sh): it keeps the user's `HOME` and XDG directories,
/// where its toolchains and their caches live (rustup, cargo, pip, npm).
/// The `toolgate` it runs still reads nothing of the user's: the config dir,
/// compile cache, trust store and server it is given win over anything under
/// `HOME`, and it is run with `--workspace`.
pub(crate) fn hermetic_keeping_toolchains(
    cmd: &mut std::process::Command,
) -> &mut std::process::Command {
    hermetic(cmd);
    for key in ["HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME"] {
        match std::env::var_os(key) {
            Some(value) => cmd.env(key, value),
            None => cmd.env_remove(key),
        };
    }
    cmd
}

/// [`toolgate`] run by `sh -c script` as `"$0"` (its arguments `"$@"`), with
/// the same environment: for what a shell sets up first (closed streams,
/// ignored signals, resource limits).
pub(crate) fn toolgate_via_shell(script: &str) -> std::process::Command {
    let direct = toolgate();
    let mut cmd = std::process::Command::new("sh");
    cmd.args(["-c", script]).arg(direct.get_program());
    for (key, value) in direct.get_envs() {
        match value {
            Some(value) => cmd.env(key, value),
            None => cmd.env_remove(key),
        };
    }
    cmd
}

/// This test process's directory for what its commands keep: one per
/// process (a run of the suite, or the run a test starts of it), so two runs
/// at once do not share or delete each other's. Those of processes that have
/// ended are removed when the next run starts.
fn run_root() -> &'static Path {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        use std::os::unix::fs::DirBuilderExt;
        let runs = Path::new(env!("CARGO_TARGET_TMPDIR")).join("runs");
        for entry in std::fs::read_dir(&runs).into_iter().flatten().flatten() {
            let ended = entry
                .file_name()
                .to_str()
                .and_then(|pid| pid.parse::<i32>().ok())
                .is_none_or(|pid| {
                    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None)
                        == Err(nix::errno::Errno::ESRCH)
                });
            if ended {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
        let dir = runs.join(std::process::id().to_string());
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .expect("the run's directory");
        dir
    })
}

/// The suite's compile cache: never the user's, kept between runs.
pub(crate) fn compile_cache() -> &'static Path {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        use std::os::unix::fs::DirBuilderExt;
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("wasm-cache");
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .expect("the suite's compile cache");
        dir
    })
}

/// The state directory every test's `toolgate` keeps trust in: one per test
/// run (see [`run_root`]). Records are per workspace, and every test has its
/// own temporary workspace.
pub(crate) fn state_home() -> &'static Path {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        use std::os::unix::fs::DirBuilderExt;
        let dir = run_root().join("state");
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir.join("toolgate/trust"))
            .expect("the test state directory");
        dir
    })
}

/// The trust store in [`state_home`].
pub(crate) fn trust_store() -> toolgate::trust::TrustStore {
    toolgate::trust::TrustStore::new(state_home().join("toolgate/trust"))
}

/// A loader for `workspace` with the tests' trust store and `PATH`.
pub(crate) fn loader(workspace: &Path) -> toolgate::config::Loader {
    let mut loader = Config::loader().workspace(workspace).trust(trust_store());
    if let Some(path) = std::env::var_os("PATH") {
        loader = loader.search_path(path);
    }
    loader
}

/// Trusts `workspace` as it is now (what `toolgate trust` records after
/// the user says yes), in the tests' store. A workspace without a
/// hooks.json is left alone.
pub(crate) fn trust(workspace: &Path) {
    if !workspace.join(".toolgate/hooks.json").exists() {
        return;
    }
    let Ok(config) = loader(workspace).load() else {
        return; // a broken config: the test is about its error
    };
    let path = std::env::var_os("PATH");
    let review = toolgate::trust::Review::of(&config, &trust_store(), path.as_deref())
        .expect("the workspace can be reviewed");
    review
        .record(&trust_store(), &review.digest)
        .expect("trust is recorded");
}

/// Runs `cmd` to the end, failing the test with its output unless it succeeded.
pub(crate) fn succeeded(cmd: &mut std::process::Command) -> std::process::Output {
    let out = cmd.output().expect("the command runs");
    assert!(
        out.status.success(),
        "{:?} failed ({}):\n{}\n{}",
        cmd,
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `toolgate check` on one request, against `workspace`'s hooks with
/// `config_dir` as the global configuration, the workspace trusted as it is
/// now: its exit code and JSON answer.
pub(crate) fn check_in(workspace: &Path, config_dir: &Path, request: &str) -> (Option<i32>, Value) {
    trust(workspace);
    check_as_is(workspace, config_dir, request)
}

/// [`check_in`], with the workspace's trust as it is (its command hooks
/// untrusted unless a test trusted them).
pub(crate) fn check_as_is(
    workspace: &Path,
    config_dir: &Path,
    request: &str,
) -> (Option<i32>, Value) {
    let out = run_with_stdin(
        toolgate()
            .args(["check", "--workspace"])
            .arg(workspace)
            .env("TOOLGATE_CONFIG_DIR", config_dir),
        request,
    );
    (out.status.code(), stdout_json(&out))
}

/// Runs a command with `stdin` written to it and collects its output.
pub(crate) fn run_with_stdin(cmd: &mut std::process::Command, stdin: &str) -> std::process::Output {
    spawn_with_stdin(cmd, stdin)
        .wait_with_output()
        .expect("the command ends")
}

/// Spawns `cmd`, again while its program is "text file busy": a test that
/// has just written an executable can lose this race to another test's
/// fork, whose child holds the written file open until it execs (the
/// descriptor is close-on-exec, but the window between fork and exec is
/// the child's). Seen once in CI, on the lean client the test had copied.
pub(crate) fn spawn_retrying_busy(cmd: &mut std::process::Command) -> std::process::Child {
    let mut tries = 0;
    loop {
        match cmd.spawn() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 100 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            spawned => return spawned.expect("the command runs"),
        }
    }
}

/// Starts a command with `stdin` written to it (and closed), its output
/// piped.
pub(crate) fn spawn_with_stdin(
    cmd: &mut std::process::Command,
    stdin: &str,
) -> std::process::Child {
    use std::io::Write;
    use std::process::Stdio;
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = spawn_retrying_busy(cmd);
    let written = child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(stdin.as_bytes());
    // A command may end before it reads its stdin (a missing workspace is
    // an error before the request is read): its answer is still the test's.
    if let Err(e) = written {
        assert_eq!(
            e.kind(),
            std::io::ErrorKind::BrokenPipe,
            "stdin is written: {e}"
        );
    }
    child
}

/// A command's stdout as JSON, or a failure showing both streams.
pub(crate) fn stdout_json(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// A command's stderr as text.
pub(crate) fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Waits for `child` at most `limit`, killing it and failing the test past
/// it, so a hang fails the test instead of hanging the suite. Its output must
/// fit the pipe buffers (it is read once the child has exited).
pub(crate) fn finish_within(
    mut child: std::process::Child,
    limit: std::time::Duration,
    what: &str,
) -> std::process::Output {
    let started = std::time::Instant::now();
    while child
        .try_wait()
        .expect("the child can be waited for")
        .is_none()
    {
        if started.elapsed() > limit {
            let _ = child.kill();
            panic!("{what} still running after {limit:?}: it blocked");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().expect("the child's output")
}

/// chown as root, or through passwordless sudo (CI runs as root).
pub(crate) fn chown_to_nobody(path: &Path) {
    if nix::unistd::geteuid().is_root() {
        nix::unistd::chown(path, Some(nix::unistd::Uid::from_raw(65534)), None).unwrap();
    } else {
        let ok = std::process::Command::new("sudo")
            .args(["-n", "chown", "65534"])
            .arg(path)
            .status()
            .is_ok_and(|s| s.success());
        assert!(
            ok,
            "this test needs root or passwordless sudo to chown {}",
            path.display()
        );
    }
}

/// A debug build's pause between reading a component and recording its
/// identity (`TOOLGATE_DEBUG_PAUSE_AFTER_READ`): the window a compile
/// takes, held open so a test can swap the file inside it.
#[cfg(debug_assertions)]
pub(crate) struct LoadPause {
    dir: TempDir,
}

#[cfg(debug_assertions)]
impl LoadPause {
    pub(crate) fn new() -> Self {
        LoadPause {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    /// Makes `cmd` pause after reading each component, until released.
    pub(crate) fn arm<'a>(
        &self,
        cmd: &'a mut std::process::Command,
    ) -> &'a mut std::process::Command {
        cmd.env("TOOLGATE_DEBUG_PAUSE_AFTER_READ", self.dir.path())
    }

    /// Waits until toolgate has read a component and paused.
    pub(crate) fn reached(&self) {
        let started = std::time::Instant::now();
        while !self.dir.path().join("reached").exists() {
            assert!(
                started.elapsed() < std::time::Duration::from_secs(60),
                "toolgate never paused after reading the component"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    /// Lets it go on; later loads no longer pause.
    pub(crate) fn release(&self) {
        std::fs::write(self.dir.path().join("go"), b"").expect("the go file");
    }
}

/// Replaces the file at `path` with `bytes` as an editor or an attacker
/// would: written beside it, then renamed over it.
#[cfg(debug_assertions)]
pub(crate) fn replace_file(path: &Path, bytes: &[u8]) {
    let next = path.with_extension("next");
    std::fs::write(&next, bytes).expect("the replacement is written");
    std::fs::rename(&next, path).expect("the replacement is renamed into place");
}

/// A fresh folder (0755) whose every ancestor is root's and not writable by
/// group or others, sticky or not: what the managed layer demands of
/// `/etc/toolgate` and its parents. The build's scratch folder when it
/// qualifies, else `$HOME`, `/run` or `/var/lib` (a clone under `/tmp`, as
/// CI makes, does not: `/tmp` is 1777).
pub(crate) fn root_only_dir() -> tempfile::TempDir {
    use std::os::unix::fs::MetadataExt;
    let qualifies = |dir: &Path| {
        dir.ancestors()
            .all(|a| std::fs::metadata(a).is_ok_and(|m| m.uid() == 0 && m.mode() & 0o022 == 0))
    };
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let candidates = [
        Some(PathBuf::from(env!("CARGO_TARGET_TMPDIR"))),
        home,
        Some(PathBuf::from("/run")),
        Some(PathBuf::from("/var/lib")),
    ];
    let base = candidates
        .into_iter()
        .flatten()
        .find(|dir| qualifies(dir))
        .expect("a folder only root may write (these tests run as root)");
    let dir = tempfile::Builder::new()
        .prefix("toolgate-managed-test")
        .tempdir_in(base)
        .unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

/// A free loopback port (bound, read, released): for a server a test starts.
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a loopback port")
        .port()
}

/// A workspace chain whose first hook rewrites a shell call's command to
/// `echo rewritten` and whose second asks a person about it ("a person
/// decides this"): an `ask` that carries a rewrite.
pub(crate) fn rewrite_then_ask(fx: &Fixture) {
    let rewriter = fx.script(
        "rewrite.py",
        "#!/usr/bin/env python3\nimport json, sys\nreq = json.load(sys.stdin)\nprint(json.dumps({'decision': 'modify', 'input': dict(req['input'], command='echo rewritten')}))\n",
    );
    let asker = fx.script(
        "ask.py",
        "#!/usr/bin/env python3\nprint('{\"decision\": \"ask\", \"reason\": \"a person decides this\"}')\n",
    );
    fx.workspace_hooks(serde_json::json!([
        {"name": "rewriter", "command": [&rewriter]},
        {"name": "asker", "command": [&asker]},
    ]));
}
