//! The managed policy layer (`/etc/toolgate`), as the users it binds meet
//! it: each rule is tried by a user who is not root, through everything such
//! a user controls (their global config, a workspace, the environment).
//!
//! How: the real compiled-in path is tested, not a test-only override. Each
//! run is `unshare -m` (a private mount namespace, so nothing is mounted on
//! the machine itself) binding a root-owned temporary directory over
//! `/etc/toolgate`, then `setpriv` down to uid/gid 65534 (nobody) to run
//! the real `toolgate` with a home of nobody's own. The empty mountpoint
//! `/etc/toolgate` is created (root's, 0755, empty: no managed layer) only
//! when the machine has none. CI runs as root, which all of this needs.

use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const NOBODY: u32 = 65534;
const MANAGED: &str = "/etc/toolgate";
const REQUEST: &str = r#"{"event":"pre_tool_use","tool":"Bash","input":{"command":"ls"}}"#;

/// The mountpoint, made once when missing.
fn mountpoint() {
    static MADE: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    MADE.get_or_init(|| {
        if !Path::new(MANAGED).exists() {
            std::fs::create_dir(MANAGED).expect("root creates the mountpoint");
            chmod(Path::new(MANAGED), 0o755);
        }
    });
}

/// The `toolgate` binary as nobody can run it: the build's own when every
/// folder on its way lets others through, else a copy in a 0755 folder.
fn binary() -> &'static Path {
    static BINARY: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BINARY.get_or_init(|| {
        let built = Path::new(env!("CARGO_BIN_EXE_toolgate"));
        let reachable = built.ancestors().skip(1).all(|dir| mode(dir) & 0o001 != 0)
            && mode(built) & 0o005 == 0o005;
        if reachable {
            return built.to_owned();
        }
        let dir = tempfile::tempdir().unwrap().keep();
        chmod(&dir, 0o755);
        let copy = dir.join("toolgate");
        std::fs::copy(built, &copy).unwrap();
        chmod(&copy, 0o755);
        copy
    })
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).map_or(0, |m| m.permissions().mode())
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn chown_nobody(path: &Path) {
    std::os::unix::fs::lchown(path, Some(NOBODY), Some(NOBODY)).unwrap();
}

/// A shell hook (inline code is fine in the managed and global configs)
/// that answers `answer`, after appending its name to `trace`.
fn hook(name: &str, trace: &Path, answer: &Value) -> Value {
    let script = format!(
        "cat > /dev/null; echo {name} >> '{}'; printf '%s\\n' '{answer}'",
        trace.display()
    );
    json!({"name": name, "command": ["/bin/sh", "-c", script]})
}

/// One machine: the managed directory (root's) and a home, a global config
/// and a workspace of nobody's.
struct Machine {
    base: tempfile::TempDir,
}

impl Machine {
    fn new() -> Machine {
        mountpoint();
        let base = tempfile::tempdir().unwrap();
        chmod(base.path(), 0o755);
        let m = Machine { base };
        std::fs::create_dir(m.managed_dir()).unwrap();
        chmod(&m.managed_dir(), 0o755);
        for dir in [
            "home",
            "home/.config/toolgate",
            "home/ws/.toolgate",
            "home/run",
        ] {
            std::fs::create_dir_all(m.base.path().join(dir)).unwrap();
        }
        chmod(&m.home(), 0o700);
        chmod(&m.home().join("run"), 0o700);
        m.chown_home();
        // The trace file every hook appends to, nobody's.
        std::fs::write(m.trace(), "").unwrap();
        chown_nobody(&m.trace());
        m
    }

    fn managed_dir(&self) -> PathBuf {
        self.base.path().join("managed")
    }

    fn home(&self) -> PathBuf {
        self.base.path().join("home")
    }

    fn workspace(&self) -> PathBuf {
        self.home().join("ws")
    }

    fn trace(&self) -> PathBuf {
        self.home().join("trace")
    }

    /// The hooks that ran, in order (read and emptied).
    fn ran(&self) -> Vec<String> {
        let text = std::fs::read_to_string(self.trace()).unwrap();
        std::fs::write(self.trace(), "").unwrap();
        text.lines().map(str::to_owned).collect()
    }

    fn chown_home(&self) {
        let mut dirs = vec![self.home()];
        while let Some(dir) = dirs.pop() {
            chown_nobody(&dir);
            for entry in std::fs::read_dir(&dir).unwrap().map(Result::unwrap) {
                if entry.file_type().unwrap().is_dir() {
                    dirs.push(entry.path());
                } else {
                    chown_nobody(&entry.path());
                }
            }
        }
    }

    /// Writes the managed hooks.json, root's, 0644.
    fn managed(&self, config: Value) -> &Self {
        let path = self.managed_dir().join("hooks.json");
        std::fs::write(&path, with_schema(config)).unwrap();
        chmod(&path, 0o644);
        self
    }

    fn global(&self, config: Value) -> &Self {
        let path = self.home().join(".config/toolgate/hooks.json");
        std::fs::write(&path, with_schema(config)).unwrap();
        chown_nobody(&path);
        self
    }

    fn workspace_config(&self, config: Value) -> &Self {
        let path = self.workspace().join(".toolgate/hooks.json");
        std::fs::write(&path, with_schema(config)).unwrap();
        chown_nobody(&path);
        self
    }

    /// `toolgate args…` as nobody, the managed directory over
    /// `/etc/toolgate`, with `env` added.
    fn run_as_nobody(&self, args: &[&str], env: &[(&str, &Path)]) -> Output {
        let home = self.home();
        let mut cmd = Command::new("unshare");
        cmd.args(["-m", "--", "/bin/sh", "-c"])
            .arg(
                "mount --bind \"$1\" /etc/toolgate && shift && \
                 exec setpriv --reuid=65534 --regid=65534 --clear-groups \"$@\"",
            )
            .arg("sh")
            .arg(self.managed_dir())
            .arg(binary())
            .args(args);
        self.environment(&mut cmd, &home, env);
        run(cmd)
    }

    fn environment(&self, cmd: &mut Command, home: &Path, env: &[(&str, &Path)]) {
        cmd.env_clear()
            .env("HOME", home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_CACHE_HOME", home.join(".cache"))
            .env("XDG_STATE_HOME", home.join(".local/state"))
            .env("XDG_RUNTIME_DIR", home.join("run"))
            .env("TOOLGATE_SERVER", "off")
            .env("PATH", "/usr/bin:/bin")
            .current_dir(self.workspace());
        for (key, value) in env {
            cmd.env(key, value);
        }
    }

    /// `toolgate check` on [`REQUEST`] in the workspace, as nobody.
    fn check(&self, env: &[(&str, &Path)]) -> (Option<i32>, Value, String) {
        let ws = self.workspace();
        let out = self.run_as_nobody(&["check", "--workspace", ws.to_str().unwrap()], env);
        let answer = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        (
            out.status.code(),
            answer,
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

fn with_schema(mut config: Value) -> String {
    config["schema"] = json!(1);
    config.to_string()
}

/// Runs `cmd` with [`REQUEST`] on stdin.
fn run(mut cmd: Command) -> Output {
    crate::support::run_with_stdin(&mut cmd, REQUEST)
}

fn allow() -> Value {
    json!({"decision": "allow"})
}

fn deny() -> Value {
    json!({"decision": "deny", "reason": "the managed policy says no"})
}

#[test]
fn managed_hooks_run_first_and_a_managed_deny_stands_whatever_global_and_workspace_say() {
    let m = Machine::new();
    m.managed(json!({"hooks": [hook("corp", &m.trace(), &allow())]}))
        .global(json!({"hooks": [hook("mine", &m.trace(), &allow())]}));
    let (code, answer, stderr) = m.check(&[]);
    assert_eq!(code, Some(0), "{answer} {stderr}");
    assert_eq!(m.ran(), ["corp", "mine"], "managed first, then global");
    assert_eq!(answer["runs"][0]["source"], "managed", "{answer}");
    assert_eq!(answer["runs"][1]["source"], "global", "{answer}");

    // A managed deny: the user's own hooks never run, whatever they say,
    // and an untrusted workspace hook the user lets be skipped is moot.
    m.managed(json!({"hooks": [hook("corp", &m.trace(), &deny())]}))
        .global(json!({"untrusted_hooks": "skip",
                       "hooks": [hook("mine", &m.trace(), &allow())]}))
        .workspace_config(json!({"hooks": [{"name": "ws", "command": ["/bin/true"]}]}));
    let (code, answer, stderr) = m.check(&[]);
    assert_eq!(code, Some(2), "{answer} {stderr}");
    assert_eq!(answer["decided_by"], "corp", "{answer}");
    assert_eq!(m.ran(), ["corp"]);
}

#[test]
fn a_non_root_toolgate_managed_dir_is_ignored_and_cannot_remove_the_layer() {
    let m = Machine::new();
    m.managed(json!({"hooks": [hook("corp", &m.trace(), &deny())]}));
    // Nobody's own, empty "managed" directory: were it honoured, the layer
    // would be gone.
    let elsewhere = m.home().join("my-managed");
    std::fs::create_dir(&elsewhere).unwrap();
    chown_nobody(&elsewhere);
    let (code, answer, stderr) = m.check(&[("TOOLGATE_MANAGED_DIR", &elsewhere)]);
    assert_eq!(code, Some(2), "{answer} {stderr}");
    assert_eq!(answer["decided_by"], "corp");
    assert!(
        stderr.contains("TOOLGATE_MANAGED_DIR is ignored"),
        "the user is told: {stderr}"
    );
}

#[test]
fn a_global_untrusted_hooks_skip_does_not_loosen_a_managed_deny() {
    let m = Machine::new();
    m.global(json!({"untrusted_hooks": "skip"}))
        .workspace_config(json!({"hooks": [{"name": "ws", "command": ["/bin/true"]}]}));
    // Without a managed word, the user's skip stands: the call goes on.
    let (code, answer, stderr) = m.check(&[]);
    assert_eq!(code, Some(0), "{answer} {stderr}");
    m.managed(json!({"untrusted_hooks": "deny"}));
    let (code, answer, stderr) = m.check(&[]);
    assert_eq!(code, Some(3), "blocked: {answer} {stderr}");
    assert_eq!(answer["decided_by"], "ws", "{answer}");
}

#[test]
fn a_global_require_confinement_false_does_not_loosen_a_managed_true() {
    let m = Machine::new();
    // A global hook that asks to run confined, on a kernel that (as the
    // debug fault says) cannot confine it.
    let mut confined = hook("mine", &m.trace(), &allow());
    confined["confine"] = json!(true);
    m.global(json!({"require_confinement": false, "hooks": [confined]}));
    let fault = Path::new("no-landlock");
    let (code, answer, stderr) = m.check(&[("TOOLGATE_DEBUG_FAULT", fault)]);
    assert_eq!(code, Some(0), "runs unconfined, warned: {answer} {stderr}");
    m.managed(json!({"require_confinement": true}));
    let (code, answer, stderr) = m.check(&[("TOOLGATE_DEBUG_FAULT", fault)]);
    assert_eq!(code, Some(3), "fails closed: {answer} {stderr}");
    assert_eq!(answer["decided_by"], "mine", "{answer}");
}

#[test]
fn managed_hooks_only_ignores_the_global_and_workspace_configs() {
    let m = Machine::new();
    m.managed(json!({"managed_hooks_only": true,
                     "hooks": [hook("corp", &m.trace(), &allow())]}))
        .global(json!({"hooks": [hook("mine", &m.trace(), &deny())]}))
        // Not even read: a broken workspace config changes nothing.
        .workspace_config(json!({"hooks": "not a list"}));
    let (code, answer, stderr) = m.check(&[]);
    assert_eq!(code, Some(0), "{answer} {stderr}");
    assert_eq!(m.ran(), ["corp"]);
    let out = m.run_as_nobody(&["hooks"], &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("IGNORED: the managed layer sets managed_hooks_only"),
        "{text}"
    );
}

#[test]
fn forbid_on_failure_allow_makes_a_crashing_hook_with_on_failure_allow_block() {
    let m = Machine::new();
    let crash = json!({"name": "flaky", "command": ["/bin/sh", "-c", "exit 7"],
                       "on_failure": "allow"});
    m.global(json!({"hooks": [crash]}));
    let (code, answer, stderr) = m.check(&[]);
    assert_eq!(
        code,
        Some(0),
        "the user's allow stands alone: {answer} {stderr}"
    );
    m.managed(json!({"forbid_on_failure_allow": true}));
    let (code, answer, stderr) = m.check(&[]);
    assert_eq!(code, Some(3), "fails closed: {answer} {stderr}");
    assert_eq!(answer["decided_by"], "flaky", "{answer}");
    let out = m.run_as_nobody(&["hooks"], &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("(forced by managed)"), "{text}");
}

#[test]
fn managed_only_keys_in_global_or_workspace_files_are_refused() {
    let m = Machine::new();
    for (key, value) in [
        ("managed_hooks_only", json!(true)),
        ("forbid_on_failure_allow", json!(true)),
        ("allowed_registries", json!(["registry.example.com"])),
    ] {
        m.global(json!({key: value}));
        let (code, _, stderr) = m.check(&[]);
        assert_eq!(code, Some(1), "{key} in the global config: {stderr}");
        assert!(
            stderr.contains("only the managed layer") && stderr.contains(key),
            "{stderr}"
        );
        m.global(json!({}));
        m.workspace_config(json!({key: value}));
        let (code, _, stderr) = m.check(&[]);
        assert_eq!(code, Some(1), "{key} in the workspace config: {stderr}");
        assert!(stderr.contains("only the managed layer"), "{stderr}");
        m.workspace_config(json!({}));
    }
}

#[test]
fn a_managed_dir_or_file_not_root_owned_or_writable_by_others_fails_closed() {
    let m = Machine::new();
    m.managed(json!({"hooks": [hook("corp", &m.trace(), &allow())]}));
    let file = m.managed_dir().join("hooks.json");
    // What is wrong, how to spoil and mend it, and what the error says.
    type Case<'a> = (&'a str, Box<dyn Fn() + 'a>, Box<dyn Fn() + 'a>, &'a str);
    let cases: [Case<'_>; 4] = [
        (
            "a file others may write",
            Box::new(|| chmod(&file, 0o646)),
            Box::new(|| chmod(&file, 0o644)),
            "/etc/toolgate/hooks.json is writable by group or others",
        ),
        (
            "a file nobody owns",
            Box::new(|| chown_nobody(&file)),
            Box::new(|| std::os::unix::fs::lchown(&file, Some(0), Some(0)).unwrap()),
            "/etc/toolgate/hooks.json is owned by uid 65534",
        ),
        (
            "a folder the group may write",
            Box::new(|| chmod(&m.managed_dir(), 0o775)),
            Box::new(|| chmod(&m.managed_dir(), 0o755)),
            "/etc/toolgate is writable by group or others",
        ),
        (
            "a folder nobody owns",
            Box::new(|| chown_nobody(&m.managed_dir())),
            Box::new(|| std::os::unix::fs::lchown(m.managed_dir(), Some(0), Some(0)).unwrap()),
            "/etc/toolgate is owned by uid 65534",
        ),
    ];
    for (what, spoil, mend, says) in cases {
        spoil();
        let (code, answer, stderr) = m.check(&[]);
        assert_eq!(code, Some(1), "{what}: {answer} {stderr}");
        assert!(stderr.contains(says), "{what}: {stderr}");
        mend();
    }
    let (code, answer, stderr) = m.check(&[]);
    assert_eq!(code, Some(0), "mended: {answer} {stderr}");
}

#[test]
fn a_symlinked_managed_hooks_json_is_refused() {
    let m = Machine::new();
    m.managed(json!({"hooks": [hook("corp", &m.trace(), &allow())]}));
    let dir = m.managed_dir();
    std::fs::rename(dir.join("hooks.json"), dir.join("real.json")).unwrap();
    std::os::unix::fs::symlink("real.json", dir.join("hooks.json")).unwrap();
    let (code, answer, stderr) = m.check(&[]);
    assert_eq!(code, Some(1), "{answer} {stderr}");
    assert!(
        stderr.contains("/etc/toolgate/hooks.json") && stderr.contains("is a symlink"),
        "{stderr}"
    );
}

#[test]
fn toolgate_hooks_shows_the_managed_layer_and_what_it_enforces() {
    let m = Machine::new();
    m.managed(json!({
        "hooks": [hook("corp", &m.trace(), &allow())],
        "untrusted_hooks": "deny",
        "require_confinement": true,
        "chain_timeout_ms": 5000,
        "forbid_on_failure_allow": true,
        "allowed_registries": ["Registry.Example.com:5000"],
    }))
    .global(json!({"chain_timeout_ms": 9000}));
    let out = m.run_as_nobody(&["hooks"], &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    for expected in [
        "managed:  /etc/toolgate/hooks.json (read)",
        "enforces untrusted_hooks: deny",
        "enforces require_confinement: true",
        "enforces chain_timeout_ms: 5000",
        "enforces forbid_on_failure_allow",
        "enforces allowed_registries: oci:// components only from registry.example.com:5000",
        // The global config cannot raise the managed deadline.
        "chain deadline: 5000 ms",
    ] {
        assert!(text.contains(expected), "{expected:?} in:\n{text}");
    }
    let out = m.run_as_nobody(&["hooks", "--json"], &[]);
    let listing: Value = serde_json::from_slice(&out.stdout).unwrap();
    let managed = &listing["managed"];
    assert_eq!(managed["path"], "/etc/toolgate/hooks.json");
    assert_eq!(managed["found"], true);
    assert_eq!(managed["settings"]["untrusted_hooks"], "deny");
    assert_eq!(managed["settings"]["require_confinement"], true);
    assert_eq!(
        managed["settings"]["allowed_registries"],
        json!(["registry.example.com:5000"])
    );
    assert_eq!(listing["hooks"][0]["source"], "managed");
}

#[test]
fn as_root_toolgate_managed_dir_is_honoured() {
    // Root's own directory, under a chain of folders only root may write
    // (not /tmp, which is writable by everyone).
    let base = crate::support::root_only_dir();
    let dir = base.path().join("managed");
    std::fs::create_dir(&dir).unwrap();
    chmod(&dir, 0o755);
    std::fs::write(
        dir.join("hooks.json"),
        with_schema(json!({"hooks": [{"name": "root-policy",
            "command": ["/bin/sh", "-c", format!("cat > /dev/null; printf '%s\\n' '{}'", deny())]}]})),
    )
    .unwrap();
    chmod(&dir.join("hooks.json"), 0o644);
    let ws = tempfile::tempdir().unwrap();
    let out = crate::support::run_with_stdin(
        crate::support::toolgate()
            .args(["check", "--workspace"])
            .arg(ws.path())
            .env("TOOLGATE_MANAGED_DIR", &dir),
        REQUEST,
    );
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{answer} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(answer["decided_by"], "root-policy");
    assert_eq!(answer["runs"][0]["source"], "managed");
}

/// The compile cache's entries (`<key>.cwasm`) in nobody's cache, by key.
fn cached_keys(m: &Machine) -> Vec<String> {
    let dir = m.home().join(".cache/toolgate/wasm");
    let mut keys: Vec<String> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter_map(|name| name.strip_suffix(".cwasm").map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    keys.sort();
    keys
}

#[test]
fn a_compiled_artifact_planted_in_the_users_cache_cannot_replace_a_managed_guard() {
    let m = Machine::new();
    for guest in ["allow", "deny"] {
        let path = m.managed_dir().join(format!("{guest}.wasm"));
        std::fs::copy(crate::guests::path(guest), &path).unwrap();
        chmod(&path, 0o644);
    }
    let cache = m.home().join(".cache/toolgate/wasm");
    // The user's own hooks compile both into the user's cache.
    m.global(json!({"hooks": [{"name": "mine", "wasm": "/etc/toolgate/allow.wasm"}]}));
    let (code, answer, stderr) = m.check(&[]);
    assert_eq!(code, Some(0), "{answer} {stderr}");
    let allow_key = cached_keys(&m).pop().expect("the allow guest is cached");
    m.global(json!({"hooks": [{"name": "mine", "wasm": "/etc/toolgate/deny.wasm"}]}));
    let (code, answer, stderr) = m.check(&[]);
    assert_eq!(code, Some(2), "{answer} {stderr}");
    let deny_key = cached_keys(&m)
        .into_iter()
        .find(|k| *k != allow_key)
        .expect("the deny guest is cached");
    // What a process of the user's (the agent's shell tool, say) can do:
    // put the allow guest's artifact under the deny guest's key, its
    // metadata naming that key.
    let plant = |from: &str, to: &str, ext: &str| {
        let mut raw = std::fs::read(cache.join(format!("{from}.{ext}"))).unwrap();
        if ext == "meta" {
            let at = raw
                .windows(from.len())
                .position(|w| w == from.as_bytes())
                .expect("the metadata names its key");
            raw[at..at + from.len()].copy_from_slice(to.as_bytes());
        }
        let target = cache.join(format!("{to}.{ext}"));
        std::fs::write(&target, raw).unwrap();
        chown_nobody(&target);
        chmod(&target, 0o600);
    };
    plant(&allow_key, &deny_key, "cwasm");
    plant(&allow_key, &deny_key, "meta");
    // It works against the user's own hook (the user's own business:
    // SECURITY.md, "Out of scope")...
    let (code, answer, stderr) = m.check(&[]);
    assert_eq!(
        code,
        Some(0),
        "the planted artifact runs for a global hook: {answer} {stderr}"
    );
    // ...but not against the managed layer's: compiled from its own bytes.
    m.global(json!({}))
        .managed(json!({"hooks": [{"name": "corp", "wasm": "deny.wasm"}]}));
    let (code, answer, stderr) = m.check(&[]);
    assert_eq!(code, Some(2), "{answer} {stderr}");
    assert_eq!(answer["decided_by"], "corp", "{answer}");
    // The same through a cache named by the environment.
    let (code, answer, stderr) = m.check(&[("TOOLGATE_CACHE_DIR", &cache)]);
    assert_eq!(code, Some(2), "{answer} {stderr}");
}

#[test]
fn a_pulled_managed_component_replaced_in_the_users_cache_is_refused() {
    let registry = crate::oci::Registry::start();
    let pushed = crate::oci::push(
        "deny",
        &format!("oci://{}/corp/guard:v1", registry.address()),
    );
    let pinned = pushed["pinned"].as_str().unwrap();
    let hex = pushed["digest"]
        .as_str()
        .unwrap()
        .trim_start_matches("sha256:");
    let m = Machine::new();
    m.managed(json!({"hooks": [{"name": "corp", "wasm": pinned}]}));
    // Pulled into nobody's cache, checked, run.
    let (code, answer, stderr) = m.check(&[]);
    assert_eq!(code, Some(2), "{answer} {stderr}");
    assert_eq!(answer["decided_by"], "corp", "{answer}");
    // The user replaces the pulled bytes with a guest that allows.
    let stored = m
        .home()
        .join(".cache/toolgate/wasm/oci/sha256")
        .join(hex)
        .join("component.wasm");
    std::fs::write(
        &stored,
        std::fs::read(crate::guests::path("allow")).unwrap(),
    )
    .unwrap();
    chown_nobody(&stored);
    chmod(&stored, 0o600);
    let (code, answer, stderr) = m.check(&[]);
    assert_eq!(
        code,
        Some(1),
        "refused, the call blocked: {answer} {stderr}"
    );
    assert!(
        stderr.contains("it was changed after it was pulled") && stderr.contains(hex),
        "{stderr}"
    );
    // The user's own global hook on the same ref runs what the user put
    // there (the user's own business).
    m.managed(json!({}))
        .global(json!({"hooks": [{"name": "mine", "wasm": pinned}]}));
    let (code, answer, stderr) = m.check(&[]);
    assert_eq!(code, Some(0), "{answer} {stderr}");
}

#[test]
fn a_managed_ref_that_follows_a_tag_runs_for_a_user_only_when_signed() {
    let m = Machine::new();
    // Never pulled: the refusal comes first, whatever the registry says.
    m.managed(json!({"hooks": [{"name": "corp",
                                "wasm": "oci://127.0.0.1:9/corp/guard:stable"}]}));
    let (code, answer, stderr) = m.check(&[]);
    assert_eq!(code, Some(1), "{answer} {stderr}");
    assert!(
        stderr.contains("a managed ref that follows a tag must be signed"),
        "{stderr}"
    );
    // Signed, the same kind of ref is followed and runs: the signature,
    // checked on every load, says what runs.
    use crate::signing::{keys, sign};
    let registry = crate::oci::Registry::start();
    let dir = tempfile::tempdir().unwrap();
    let signed = dir.path().join("guard.wasm");
    std::fs::copy(crate::guests::path("deny"), &signed).unwrap();
    sign(&keys().a, &signed, "name=corp version=1");
    let reference = format!("oci://{}/corp/guard:stable", registry.address());
    crate::support::succeeded(
        crate::support::toolgate()
            .arg("push")
            .arg(&signed)
            .arg(&reference),
    );
    m.managed(
        json!({"signing": {"keys": [keys().a.public], "required": true},
                     "hooks": [{"name": "corp", "wasm": reference}]}),
    );
    let (code, answer, stderr) = m.check(&[]);
    assert_eq!(code, Some(2), "{answer} {stderr}");
    assert_eq!(answer["decided_by"], "corp", "{answer}");
}

/// A component the managed layer names binds the user as its hooks.json
/// does: one that another user owns, or that others can write, would let
/// them choose the guard. Such a component is refused (the call fails
/// closed, saying why); root's, 0644, it runs.
#[test]
fn a_managed_component_only_root_can_change_is_required() {
    let m = Machine::new();
    let path = m.managed_dir().join("deny.wasm");
    std::fs::copy(crate::guests::path("deny"), &path).unwrap();
    chmod(&path, 0o644);
    m.managed(json!({"hooks": [{"name": "corp", "wasm": "deny.wasm"}]}));
    let (code, answer, stderr) = m.check(&[]);
    assert_eq!(code, Some(2), "{answer} {stderr}");
    assert_eq!(answer["decided_by"], "corp", "{answer}");
    for (case, change) in [
        (
            "writable by others",
            (|p: &Path| chmod(p, 0o666)) as fn(&Path),
        ),
        ("another user's", |p: &Path| {
            chmod(p, 0o644);
            chown_nobody(p);
        }),
    ] {
        change(&path);
        let (code, answer, stderr) = m.check(&[]);
        assert!(
            code != Some(0) && code != Some(2),
            "{case}: ran anyway: {answer} {stderr}"
        );
        let said = format!("{answer} {stderr}");
        assert!(
            said.contains("the managed layer runs only what root alone can change"),
            "{case}: {said}"
        );
    }
}

/// Shadow mode across layers (issue 40): the managed layer may put a
/// user's hook in shadow; nothing a user writes puts a managed hook in
/// shadow — not a file-wide `mode`, not a hook of the same name marked
/// shadow, and `shadow_hooks` outside the managed file is refused.
#[test]
fn the_managed_layer_can_shadow_a_users_hook_and_a_user_cannot_shadow_a_managed_one() {
    let m = Machine::new();
    m.managed(json!({"shadow_hooks": ["mine"], "hooks": [hook("corp", &m.trace(), &allow())]}))
        .global(json!({"hooks": [hook("mine", &m.trace(), &deny())]}));
    let (code, answer, stderr) = m.check(&[]);
    assert_eq!(
        code,
        Some(0),
        "the user's deny is only recorded: {answer} {stderr}"
    );
    assert_eq!(answer["runs"][1]["shadow"], true, "{answer}");
    assert_eq!(answer["runs"][1]["verdict"], "deny", "{answer}");
    assert_eq!(answer["shadow"], json!({"would": "deny", "by": "mine"}));
    assert_eq!(m.ran(), ["corp", "mine"], "the shadow hook still ran");

    // The user's file says shadow, for itself and by the managed hook's name.
    let mut corp_named = hook("corp", &m.trace(), &allow());
    corp_named["mode"] = json!("shadow");
    m.managed(json!({"hooks": [hook("corp", &m.trace(), &deny())]}))
        .global(json!({"mode": "shadow", "hooks": [corp_named]}));
    let (code, answer, stderr) = m.check(&[]);
    assert_eq!(code, Some(2), "the managed deny stands: {answer} {stderr}");
    assert_eq!(answer["decided_by"], "corp");
    assert_eq!(answer["runs"][0]["source"], "managed");
    assert_eq!(answer["runs"][0].get("shadow"), None, "{answer}");

    // `shadow_hooks` is the managed layer's alone.
    m.managed(json!({"hooks": [hook("corp", &m.trace(), &deny())]}))
        .global(json!({"shadow_hooks": ["corp"], "hooks": []}));
    let (code, answer, stderr) = m.check(&[]);
    assert_ne!(code, Some(0), "{answer} {stderr}");
    assert!(
        stderr.contains("only the managed layer") && stderr.contains("shadow_hooks"),
        "{stderr}"
    );
}
