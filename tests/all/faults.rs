//! Faults of the machine itself, real and not mocked: the server SIGKILLed
//! under load, a full disk (ENOSPC) under the compile cache and the trust
//! store, no file descriptors left (EMFILE), a read-only state or cache
//! directory (EROFS), two `toolgate trust` racing, and the wall clock
//! jumping backwards. Each test pins the same promise: every call gets an
//! answer, nothing denied is ever allowed, and nothing half-written is read
//! later.
//!
//! # Why mount namespaces, rlimits and libfaketime
//!
//! The suite runs as root (here and in CI), where permission bits stop
//! nothing: a read-only directory has to be a read-only mount, and a full
//! disk a small tmpfs. Both are made in a mount namespace of the test's own
//! (`unshare --mount --propagation private`, held open by a sleeping process
//! and entered with `nsenter`), so nothing is mounted on the machine the
//! other tests and helpers share, and the mounts vanish with the holder. The
//! test process reaches into the namespace through `/proc/<holder>/root`.
//! Descriptors are limited with `prlimit` (util-linux), on a command or on
//! the running server. The clock is moved with libfaketime (Debian's
//! `faketime`, installed by .ci/run): the process's wall clock only, as an
//! NTP step or a resumed VM moves it (the monotonic clock never goes back).

use crate::guests::{Guest, Verdict};
use crate::serve::Server;
use crate::support::{Fixture, finish_within, spawn_with_stdin, toolgate};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// A mount namespace of the test's own: a sleeping `unshare` holds it, and
/// commands run in it through `nsenter`. Killed (and the namespace with its
/// mounts gone) on drop.
struct MountNs {
    holder: std::process::Child,
}

impl MountNs {
    /// A new namespace, private (nothing mounted in it propagates out). A
    /// machine where it cannot be made fails the test, saying why: these
    /// faults cannot be made without one, and a skipped test proves nothing.
    fn new() -> MountNs {
        let mut holder = Command::new("unshare")
            .args(["--mount", "--propagation", "private", "sleep", "300"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("this test needs `unshare` (util-linux) for a mount namespace: {e}")
            });
        let ours = std::fs::read_link("/proc/self/ns/mnt").unwrap();
        let started = Instant::now();
        loop {
            if let Some(status) = holder.try_wait().unwrap() {
                let mut said = String::new();
                use std::io::Read;
                let _ = holder.stderr.take().unwrap().read_to_string(&mut said);
                panic!(
                    "this test needs a mount namespace of its own (root, or CAP_SYS_ADMIN), \
                     and `unshare --mount` failed ({status}): {said}"
                );
            }
            let theirs = std::fs::read_link(format!("/proc/{}/ns/mnt", holder.id()));
            if theirs.is_ok_and(|ns| ns != ours) {
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "unshare never entered its own mount namespace"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        MountNs { holder }
    }

    /// Runs `script` with `sh -c` in the namespace, failing the test unless
    /// it succeeds.
    fn sh(&self, script: &str) {
        let out = self
            .wrap(Command::new("sh").args(["-c", script]))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{script}: {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// A tmpfs of `kib` KiB at `dir`, mode 0700 (a cache or a trust store
    /// must be private), in the namespace.
    fn tmpfs(&self, dir: &Path, kib: u64) {
        std::fs::create_dir_all(dir).unwrap();
        self.sh(&format!(
            "mount -t tmpfs -o size={kib}k,mode=0700 tmpfs '{}'",
            dir.display()
        ));
    }

    /// `dir` read-only in the namespace (a bind mount of itself, remounted
    /// read-only); still writable outside it.
    fn read_only(&self, dir: &Path) {
        let d = dir.display();
        self.sh(&format!(
            "mount --bind '{d}' '{d}' && mount -o remount,bind,ro '{d}'"
        ));
    }

    /// `path` as the namespace sees it, for this process to read or write.
    fn path(&self, path: &Path) -> PathBuf {
        let rel = path.strip_prefix("/").expect("an absolute path");
        PathBuf::from(format!("/proc/{}/root", self.holder.id())).join(rel)
    }

    /// `cmd`, run in the namespace: its program and arguments after
    /// `nsenter`, its environment kept. Arguments added later go to it.
    fn wrap(&self, cmd: &Command) -> Command {
        let target = self.holder.id().to_string();
        wrapped(cmd, &["nsenter", "--target", &target, "--mount", "--"])
    }
}

impl Drop for MountNs {
    fn drop(&mut self) {
        let _ = self.holder.kill();
        let _ = self.holder.wait();
    }
}

/// `cmd` run by `prefix` (a program that runs the rest of its argv, such
/// as `prlimit` or `nsenter`), with `cmd`'s environment.
fn wrapped(cmd: &Command, prefix: &[&str]) -> Command {
    let mut out = Command::new(prefix[0]);
    out.args(&prefix[1..])
        .arg(cmd.get_program())
        .args(cmd.get_args());
    for (key, value) in cmd.get_envs() {
        match value {
            Some(value) => out.env(key, value),
            None => out.env_remove(key),
        };
    }
    if let Some(dir) = cmd.get_current_dir() {
        out.current_dir(dir);
    }
    out
}

/// `cmd` with at most `n` open descriptors (soft and hard).
fn with_nofile(cmd: &Command, n: u32) -> Command {
    let limit = format!("--nofile={n}:{n}");
    wrapped(cmd, &["prlimit", &limit, "--"])
}

/// Fills the filesystem holding `dir` (as this process reaches it) with a
/// file there, until it is full, then frees `pages` 4-KiB pages of it.
/// Returns the file (remove it to free the space).
fn fill(dir: &Path, pages: u64) -> PathBuf {
    use std::io::Write;
    let path = dir.join("filler");
    let mut file = std::fs::File::create(&path).unwrap();
    let chunk = vec![0u8; 4096];
    loop {
        match file.write(&chunk) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(nix::libc::ENOSPC) => break,
            Err(e) => panic!("filling {}: {e}", dir.display()),
        }
    }
    let full = file.metadata().unwrap().len() / 4096 * 4096;
    file.set_len(full.saturating_sub(pages * 4096)).unwrap();
    path
}

/// What a `toolgate claude-code` process answered, in Claude Code's
/// convention: exit 0 with the decision on stdout (nothing printed is an
/// allow), or exit 2 with the reason on stderr (blocked).
#[derive(Debug, PartialEq)]
enum Claude {
    Allowed,
    /// Denied, with the reason shown to the model.
    Denied(String),
    /// Blocked (exit 2), with what it said on stderr.
    Blocked(String),
}

impl Claude {
    /// Reads `out`, failing the test (naming `what`) on anything Claude Code
    /// would not read as an answer: another exit code (a crash, which it
    /// treats as a non-blocking error: the call runs), a signal, a block
    /// without a reason, or stdout that is not its JSON.
    fn of(out: &Output, what: &str) -> Claude {
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        match out.status.code() {
            Some(0) if stdout.trim().is_empty() => Claude::Allowed,
            Some(0) => {
                let answer: Value = serde_json::from_str(&stdout)
                    .unwrap_or_else(|e| panic!("{what}: stdout is not JSON ({e}): {stdout}"));
                let specific = &answer["hookSpecificOutput"];
                assert_eq!(specific["hookEventName"], "PreToolUse", "{what}: {answer}");
                match specific["permissionDecision"].as_str() {
                    Some("deny") => Claude::Denied(
                        specific["permissionDecisionReason"]
                            .as_str()
                            .unwrap_or_default()
                            .to_owned(),
                    ),
                    Some("allow") | None => Claude::Allowed,
                    Some(other) => panic!("{what}: decision {other:?}: {answer}"),
                }
            }
            Some(2) => {
                assert!(stdout.trim().is_empty(), "{what}: exit 2 with {stdout}");
                assert!(
                    !stderr.trim().is_empty(),
                    "{what}: blocked without a reason"
                );
                Claude::Blocked(stderr.into_owned())
            }
            _ => panic!(
                "{what}: not an answer Claude Code reads as one ({}): {stdout}\n{stderr}",
                out.status
            ),
        }
    }

    /// The call was refused (denied or blocked); fails the test naming
    /// `what` when it was allowed. Returns the reason.
    fn refused(self, what: &str) -> String {
        match self {
            Claude::Denied(why) | Claude::Blocked(why) => why,
            Claude::Allowed => panic!("{what}: ALLOWED, and it must be refused"),
        }
    }
}

/// Claude Code's hook input for a pre call of `tool` with `input`.
fn claude_pre(cwd: &Path, tool: &str, input: Value) -> String {
    json!({"session_id": "s", "transcript_path": "/dev/null", "cwd": cwd,
        "hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": input})
    .to_string()
}

/// The three calls a [`Guarded`] workspace is asked: the chain allows the
/// first and denies the other two.
const LS: (&str, &str) = ("Bash", "ls");
const RM: (&str, &str) = ("Bash", "rm -rf /");
const WRITE: (&str, &str) = ("Write", "/etc/passwd");

/// The command hook of a [`Guarded`] workspace: denies `rm -rf`, allows
/// the rest.
const GUARD: &str = "#!/bin/sh\ninput=$(cat)\ncase \"$input\" in\n\
    *'rm -rf'*) echo '{\"decision\":\"deny\",\"reason\":\"guard: never rm -rf\"}'; exit 0;;\n\
    esac\necho '{\"decision\":\"allow\"}'\n";

/// A workspace whose chain allows `ls`, denies `rm -rf` (a trusted command
/// hook) and denies every Write (a wasm guard), with a state directory (the
/// trust store) and a compile cache of its own, each a directory a test can
/// mount over.
struct Guarded {
    fx: Fixture,
    /// What the wasm guard's denial says.
    guard_says: String,
}

impl Guarded {
    /// `wasm_guard` names the component that denies Writes: a shared test
    /// guest, or one built for the test (a cache key no run has compiled).
    fn new(wasm_guard: Option<&str>) -> Guarded {
        let fx = Fixture::new();
        std::fs::create_dir_all(fx.dir.path().join("state")).unwrap();
        std::fs::create_dir_all(fx.dir.path().join("cache")).unwrap();
        let (wasm, guard_says) = match wasm_guard {
            None => (
                crate::guests::path("deny"),
                "no force-pushing from a sandbox".to_owned(),
            ),
            Some(says) => (
                Guest::answering(Verdict::Deny(says)).write(fx.dir.path(), "own-guard"),
                says.to_owned(),
            ),
        };
        fx.script("guard.sh", GUARD);
        fx.workspace_hooks(json!([
            {"name": "guard", "command": ["sh", "hooks/guard.sh"], "tools": ["Bash"]},
            {"name": "no-writes", "wasm": wasm, "tools": ["Write"]}
        ]));
        Guarded { fx, guard_says }
    }

    fn state(&self) -> PathBuf {
        self.fx.dir.path().join("state")
    }

    fn store(&self) -> PathBuf {
        self.state().join("toolgate/trust")
    }

    fn cache(&self) -> PathBuf {
        self.fx.dir.path().join("cache")
    }

    /// `base` (a `toolgate`) with this workspace's state, cache and global
    /// config.
    fn env(&self, mut base: Command) -> Command {
        self.configure(&mut base);
        base
    }

    /// Gives `cmd` this workspace's state, cache and global config: a
    /// `toolgate serve` answers only with its own configuration, so its
    /// server is started with the same as its callers.
    fn configure(&self, cmd: &mut Command) {
        cmd.env("XDG_STATE_HOME", self.state())
            .env("TOOLGATE_CACHE_DIR", self.cache())
            .env("TOOLGATE_CONFIG_DIR", self.fx.global());
    }

    /// The digest `toolgate trust` would record now.
    fn digest(&self, base: Command) -> String {
        let out = self
            .env(base)
            .args(["trust", "status", "--json", "--workspace"])
            .arg(self.fx.workspace())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr_of(&out));
        let status: Value = serde_json::from_slice(&out.stdout).unwrap();
        status["current_digest"]
            .as_str()
            .expect("a digest")
            .to_owned()
    }

    /// `toolgate trust --yes <digest>`, started (stdin closed).
    fn trust_spawn(&self, base: Command, digest: &str) -> std::process::Child {
        self.env(base)
            .args(["trust", "--yes", digest, "--workspace"])
            .arg(self.fx.workspace())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// Trusts the workspace as it is, as `toolgate trust --yes` records it.
    fn trust(&self) {
        self.trust_as(toolgate);
    }

    /// [`Guarded::trust`], `toolgate` run as `base` runs it (in a
    /// namespace, say).
    fn trust_as(&self, base: impl Fn() -> Command) {
        let digest = self.digest(base());
        let out = self
            .trust_spawn(base(), &digest)
            .wait_with_output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr_of(&out));
    }

    /// `toolgate claude-code` (run as `base` runs `toolgate`) on `call`,
    /// within 30 s.
    fn ask(&self, base: Command, (tool, arg): (&str, &str), what: &str) -> Claude {
        let input = match tool {
            "Write" => json!({"file_path": arg, "content": "x"}),
            _ => json!({"command": arg}),
        };
        let mut cmd = self.env(base);
        cmd.args(["claude-code", "--workspace"])
            .arg(self.fx.workspace());
        let child = spawn_with_stdin(&mut cmd, &claude_pre(&self.fx.workspace(), tool, input));
        let what = format!("{what}: {tool} {arg}");
        let out = finish_within(child, Duration::from_secs(30), &what);
        Claude::of(&out, &what)
    }

    /// The chain's two denials hold when asked through `base`: never an
    /// allow. Returns their reasons.
    fn refuses(&self, base: impl Fn() -> Command, what: &str) -> (String, String) {
        (
            self.ask(base(), RM, what)
                .refused(&format!("{what}: rm -rf")),
            self.ask(base(), WRITE, what)
                .refused(&format!("{what}: Write")),
        )
    }
}

fn stderr_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The names in `dir` (as this process reaches it), sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// A name unique to this run and call, for content no run compiled before.
fn nonce() -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    format!(
        "{}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    )
}

/// Sends SIGKILL to the process `pid` (a server this test started).
fn sigkill(pid: u64) {
    let pid = nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL).unwrap();
}

/// Two `toolgate trust --yes` for one workspace at once, twenty times: both
/// succeed, and the store holds exactly one record, complete (it reads back,
/// its digest the one confirmed), and nothing half-written beside it.
#[test]
fn two_trust_processes_racing_leave_one_complete_record_and_no_temporary_files() {
    let ws = Guarded::new(None);
    let digest = ws.digest(toolgate());
    let root = ws.fx.workspace().canonicalize().unwrap();
    let store = toolgate::trust::TrustStore::new(ws.store());
    for round in 0..20 {
        // Half the rounds race to create the record, half to replace it.
        if round % 2 == 0 {
            let _ = std::fs::remove_file(store.record_path(&root));
        }
        let racers = [
            ws.trust_spawn(toolgate(), &digest),
            ws.trust_spawn(toolgate(), &digest),
        ];
        for (n, racer) in racers.into_iter().enumerate() {
            let out = finish_within(
                racer,
                Duration::from_secs(30),
                &format!("round {round}: trust {n}"),
            );
            assert!(
                out.status.success(),
                "round {round}: trust {n} failed: {}",
                stderr_of(&out)
            );
        }
        let files: Vec<String> = names(&ws.store())
            .into_iter()
            .filter(|n| !["snapshots", "scratch"].contains(&n.as_str()))
            .collect();
        let record = store.record_path(&root);
        let name = record.file_name().unwrap().to_string_lossy().into_owned();
        assert_eq!(files, [name], "round {round}: the store holds {files:?}");
        let read = store
            .read(&root)
            .unwrap_or_else(|e| panic!("round {round}: the record does not read: {e}"))
            .expect("a record");
        assert_eq!(read.digest, digest, "round {round}");
    }
    // What the race recorded is trust the next call honours.
    assert_eq!(
        ws.ask(toolgate(), LS, "after the races"),
        Claude::Allowed,
        "the trusted guard did not allow ls"
    );
}

/// The compile cache on a full disk: the call still decides (the component
/// is compiled in memory; the cache promises speed, never the answer), and
/// whatever the write got to — nothing, part of the artifact, the artifact
/// without its metadata — nothing is left that a later call would read as
/// an entry. Once there is room, the next call writes the entry, whole.
#[test]
fn a_full_disk_under_the_compile_cache_still_decides_and_leaves_no_entry_a_later_call_reads() {
    let ws = Guarded::new(Some(&format!("the disk-full guard {}", nonce())));
    ws.trust();
    let ns = MountNs::new();
    ns.tmpfs(&ws.cache(), 2048);
    let cache = ns.path(&ws.cache());
    let in_ns = || ns.wrap(&toolgate());
    let denied_by_guard = |what: &str| {
        let why = ws.ask(in_ns(), WRITE, what).refused(what);
        assert!(why.contains(&ws.guard_says), "{what}: {why}");
    };
    // Not a byte free.
    let filler = fill(&cache, 0);
    denied_by_guard("a full disk");
    assert_eq!(ws.ask(in_ns(), LS, "a full disk"), Claude::Allowed);
    assert_eq!(names(&cache), ["filler"], "a full disk");
    // Room: the entry is written.
    std::fs::remove_file(&filler).unwrap();
    denied_by_guard("room");
    let entries = names(&cache);
    let artifact = entries
        .iter()
        .find(|n| n.ends_with(".cwasm"))
        .unwrap_or_else(|| panic!("no entry written once there was room: {entries:?}"))
        .clone();
    let key = artifact.trim_end_matches(".cwasm").to_owned();
    let pages = std::fs::metadata(cache.join(&artifact))
        .unwrap()
        .len()
        .div_ceil(4096);
    let clear = || {
        for name in names(&cache) {
            std::fs::remove_file(cache.join(name)).unwrap();
        }
    };
    // A page short of the artifact: its write fails part of the way; then
    // room for the artifact and not its metadata.
    for (free, what) in [
        (pages - 1, "the artifact's write failing part of the way"),
        (pages, "the metadata's write failing after the artifact's"),
    ] {
        clear();
        fill(&cache, free);
        denied_by_guard(what);
        denied_by_guard(what);
        let left = names(&cache);
        assert!(
            !left
                .iter()
                .any(|n| n.ends_with(".meta") || n.starts_with(".tmp")),
            "{what}: an entry or a temporary file was left: {left:?}"
        );
    }
    // Room again: the next call writes the whole entry, and later calls
    // use it.
    std::fs::remove_file(cache.join("filler")).unwrap();
    denied_by_guard("room again");
    let meta = cache.join(format!("{key}.meta"));
    assert_eq!(
        std::fs::metadata(&meta).map(|m| m.len()).ok(),
        Some(8 + 64 + 8 + 32),
        "the entry's metadata, once there was room: {:?}",
        names(&cache)
    );
    denied_by_guard("from the entry");
    assert_eq!(ws.ask(in_ns(), LS, "from the entry"), Claude::Allowed);
}

/// The trust store on a full disk: `toolgate trust` fails naming the record
/// it could not write, leaves nothing in the store, and the workspace stays
/// untrusted (its command hook does not run); with room, the record is
/// written whole. Then the hook's first run, whose private copy cannot be
/// made on a full disk, fails closed and leaves no half-made copy; with room
/// again it runs.
#[test]
fn a_full_disk_under_the_trust_store_fails_clearly_and_leaves_no_partial_record_or_copy() {
    let ws = Guarded::new(None);
    let ns = MountNs::new();
    ns.tmpfs(&ws.state(), 1024);
    let state = ns.path(&ws.state());
    let store = ns.path(&ws.store());
    let in_ns = || ns.wrap(&toolgate());
    let root = ws.fx.workspace().canonicalize().unwrap();
    let record = toolgate::trust::TrustStore::new(ws.store()).record_path(&root);
    let digest = ws.digest(in_ns());
    let filler = fill(&state, 0);
    let out = ws.trust_spawn(in_ns(), &digest).wait_with_output().unwrap();
    let said = stderr_of(&out);
    assert_eq!(out.status.code(), Some(1), "trust on a full disk: {said}");
    assert!(
        said.contains(&record.display().to_string()) && said.contains("No space left"),
        "the error names the record and the cause: {said}"
    );
    assert_eq!(names(&store), Vec::<String>::new(), "left in the store");
    let why = ws
        .ask(in_ns(), LS, "never trusted")
        .refused("never trusted");
    assert!(why.contains("not trusted"), "{why}");
    // Room: recorded, complete.
    std::fs::remove_file(&filler).unwrap();
    let out = ws.trust_spawn(in_ns(), &digest).wait_with_output().unwrap();
    assert!(out.status.success(), "trust with room: {}", stderr_of(&out));
    let name = record.file_name().unwrap().to_string_lossy().into_owned();
    assert_eq!(names(&store), [name.as_str()]);
    let text = std::fs::read(store.join(&name)).unwrap();
    let parsed = toolgate::fuzzing::trust_record(&text, &root).expect("the record parses");
    assert_eq!(parsed.digest, digest);
    // The hook's first run must copy its tree into the store: not on a
    // full disk.
    let filler = fill(&state, 0);
    let why = ws
        .ask(in_ns(), LS, "no room for the copy")
        .refused("no room for the copy");
    assert!(why.contains("No space left"), "{why}");
    ws.refuses(in_ns, "no room for the copy");
    let copies = names(&store.join("snapshots"));
    assert!(
        !copies.iter().any(|n| n.starts_with(".tmp")),
        "a half-made copy was left: {copies:?}"
    );
    std::fs::remove_file(&filler).unwrap();
    assert_eq!(ws.ask(in_ns(), LS, "room for the copy"), Claude::Allowed);
    let (why, _) = ws.refuses(in_ns, "room for the copy");
    assert!(why.contains("never rm -rf"), "{why}");
}

/// The state directory (trust store, hook copies, scratch folders) and the
/// compile cache read-only (EROFS): what can still be decided is decided —
/// the wasm guard compiles in memory and denies; a trusted command hook
/// whose copy or scratch folder cannot be made fails closed, its run record
/// saying why — and nothing the chain denies is ever allowed. Checked before
/// the hook's first run (no copy yet, the cache cold) and after one (both
/// there, read from the read-only mounts).
#[test]
fn a_read_only_state_or_cache_directory_decides_or_fails_closed_never_allowing_a_denial() {
    let ws = Guarded::new(Some(&format!("the read-only guard {}", nonce())));
    ws.trust();
    let ns = MountNs::new();
    ns.read_only(&ws.state());
    ns.read_only(&ws.cache());
    let in_ns = || ns.wrap(&toolgate());
    // `toolgate trust` compiled the guard into the cache: cold again.
    for name in names(&ws.cache()) {
        std::fs::remove_file(ws.cache().join(name)).unwrap();
    }
    for round in ["before the first run", "after a run"] {
        let (_, write) = ws.refuses(in_ns, round);
        assert!(write.contains(&ws.guard_says), "{round}: {write}");
        if round == "before the first run" {
            assert_eq!(
                names(&ws.cache()),
                Vec::<String>::new(),
                "written read-only"
            );
        }
        // The command hook cannot run from a read-only store: blocked, and
        // the operator reads why in the run record. (Were it to run, it
        // would allow.)
        if let refused @ (Claude::Denied(_) | Claude::Blocked(_)) = ws.ask(in_ns(), LS, round) {
            let mut check = ws.env(in_ns());
            check.args(["check", "--workspace"]).arg(ws.fx.workspace());
            let out = crate::support::run_with_stdin(
                &mut check,
                r#"{"event":"pre_tool_use","tool":"Bash","input":{"command":"ls"}}"#,
            );
            let answer = crate::support::stdout_json(&out);
            assert_eq!(out.status.code(), Some(3), "{round}: {answer}");
            assert!(
                answer.to_string().contains("Read-only file system"),
                "{round}: {refused:?} without saying why: {answer}"
            );
        }
        // Outside the namespace, writable: one run of each makes the copy
        // and fills the cache.
        assert_eq!(ws.ask(toolgate(), LS, "writable"), Claude::Allowed);
        ws.refuses(toolgate, "writable");
        assert!(
            names(&ws.cache()).iter().any(|n| n.ends_with(".meta")),
            "the cache was not filled: {:?}",
            names(&ws.cache())
        );
    }
}

/// One client's calls: for each, whether it started before the kill, ended
/// after it, and the answer.
type Calls = Vec<(bool, bool, Claude)>;

/// `clients` processes of `toolgate claude-code` in a loop against
/// `server`, each call bounded; the server is SIGKILLed once `kill_when`
/// says so, and each client goes on for `after` calls more. Returns every
/// client's calls.
fn kill_under_load(
    server: &Server,
    fx: &Fixture,
    clients: usize,
    after: usize,
    deadline_ms: &str,
    kill_when: impl Fn() -> bool,
) -> Vec<Calls> {
    let pid = server.status()["pid"].as_u64().expect("the server's pid");
    let killed = Arc::new(AtomicBool::new(false));
    let threads: Vec<_> = (0..clients)
        .map(|n| {
            let killed = killed.clone();
            let mut cmd = server.client();
            cmd.env("TOOLGATE_CONFIG_DIR", fx.global())
                .args(["claude-code", "--deadline-ms", deadline_ms, "--workspace"])
                .arg(fx.workspace());
            let input = claude_pre(&fx.workspace(), RM.0, json!({"command": RM.1}));
            std::thread::spawn(move || {
                let mut calls = Calls::new();
                let mut left = after;
                for call in 0.. {
                    let before = !killed.load(Ordering::SeqCst);
                    if !before && left == 0 {
                        break;
                    }
                    if !before {
                        left -= 1;
                    }
                    let what = format!("client {n}, call {call}");
                    let child = spawn_with_stdin(&mut cmd, &input);
                    let out = finish_within(child, Duration::from_secs(30), &what);
                    let after = killed.load(Ordering::SeqCst);
                    calls.push((before, after, Claude::of(&out, &what)));
                }
                calls
            })
        })
        .collect();
    let started = Instant::now();
    while !kill_when() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the load never reached the point of the kill"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    sigkill(pid);
    killed.store(true, Ordering::SeqCst);
    threads
        .into_iter()
        .map(|t| t.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
        .collect()
}

/// The server SIGKILLed while sixteen clients send it calls the chain
/// denies: every call is answered — by the server, by the client's own
/// evaluation once it is gone, or blocked — in Claude Code's format, none
/// allowed, none hanging; the calls in flight at the kill included.
#[test]
fn a_server_killed_under_load_leaves_every_call_answered_and_none_allowed() {
    let fx = Fixture::new();
    std::fs::write(
        fx.global().join("hooks.json"),
        json!({"schema": 1, "hooks": [{"name": "no", "wasm": crate::guests::path("deny")}]})
            .to_string(),
    )
    .unwrap();
    let server = Server::start_http(|cmd| {
        cmd.env("TOOLGATE_CONFIG_DIR", fx.global());
    });
    let served = || server.status()["requests"].as_u64().unwrap_or(0);
    let clients = kill_under_load(&server, &fx, 16, 3, "20000", || served() >= 48);
    let (mut in_flight, mut total) = (0, 0);
    for (n, calls) in clients.iter().enumerate() {
        for (call, (before, after, answer)) in calls.iter().enumerate() {
            let what = format!("client {n}, call {call}");
            match answer {
                Claude::Denied(why) => assert!(
                    why.contains("no force-pushing from a sandbox"),
                    "{what}: {why}"
                ),
                Claude::Blocked(why) => assert!(why.contains("blocked"), "{what}: {why}"),
                Claude::Allowed => panic!("{what}: ALLOWED"),
            }
            in_flight += usize::from(*before && *after);
            total += 1;
        }
    }
    assert!(in_flight > 0, "no call was in flight when the server died");
    eprintln!("{total} calls, {in_flight} in flight at the kill");
}

/// The server SIGKILLed while it holds sixteen calls it acknowledged and
/// has not answered (their hook is still running): each client, its
/// connection closed under it, evaluates the call itself and denies it; none
/// is allowed, none hangs.
#[test]
fn a_server_killed_holding_acknowledged_calls_leaves_each_to_its_client_and_none_allowed() {
    let fx = Fixture::new();
    let started = fx.marker("started");
    std::fs::create_dir_all(&started).unwrap();
    let slow = fx.global_script(
        "slow.sh",
        &format!(
            "#!/bin/sh\ncat >/dev/null\ntouch '{}'/$$\nsleep 1\n\
             echo '{{\"decision\":\"deny\",\"reason\":\"the slow guard says no\"}}'\n",
            started.display()
        ),
    );
    std::fs::write(
        fx.global().join("hooks.json"),
        json!({"schema": 1, "hooks": [{"name": "slow", "command": [slow]}]}).to_string(),
    )
    .unwrap();
    let server = Server::start_http(|cmd| {
        cmd.env("TOOLGATE_CONFIG_DIR", fx.global());
    });
    let runs = || names(&started).len();
    let clients = kill_under_load(&server, &fx, 16, 0, "20000", || runs() >= 16);
    let mut in_flight = 0;
    for (n, calls) in clients.iter().enumerate() {
        for (call, (before, after, answer)) in calls.iter().enumerate() {
            let what = format!("client {n}, call {call}");
            let why = match answer {
                Claude::Denied(why) | Claude::Blocked(why) => why,
                Claude::Allowed => panic!("{what}: ALLOWED"),
            };
            assert!(why.contains("the slow guard says no"), "{what}: {why}");
            in_flight += usize::from(*before && *after);
        }
    }
    assert_eq!(
        in_flight, 16,
        "every client's call was the server's when it died"
    );
    // Each was evaluated again by its client, once the server was gone.
    assert!(runs() >= 32, "the hook ran {} times", runs());
}

/// `toolgate claude-code` with almost no descriptors, from one beyond its
/// standard streams up: at every limit each call is answered in Claude
/// Code's format — decided, or blocked with a reason — and the calls the
/// chain denies are never allowed. (With the three streams and not one
/// more, the dynamic loader cannot open the C runtime and exits 127 before
/// any of toolgate runs: no program can answer from there, so the sweep
/// starts at four.)
#[test]
fn out_of_descriptors_a_client_answers_every_call_and_allows_no_denial() {
    let ws = Guarded::new(None);
    ws.trust();
    let mut decided = 0;
    for n in [4, 5, 6, 7, 8, 9, 10, 12, 16, 24, 32, 64] {
        let limited = || with_nofile(&toolgate(), n);
        let what = format!("RLIMIT_NOFILE {n}");
        ws.refuses(limited, &what);
        match ws.ask(limited(), LS, &what) {
            Claude::Allowed => decided += 1,
            Claude::Denied(why) | Claude::Blocked(why) => {
                assert!(why.contains("blocked"), "{what}: {why}");
            }
        }
    }
    assert!(decided > 0, "no limit was high enough to decide a call");
}

/// The server out of descriptors (RLIMIT_NOFILE lowered on the running
/// process, its descriptors held by idle connections), then freed a few at
/// a time: every call meanwhile is answered — by the client itself when the
/// server cannot take it, or by the server, whose hook may fail to start
/// (EMFILE) and then blocks the call — and none the chain denies is allowed.
/// Once the pressure is gone the server answers again.
#[test]
fn out_of_descriptors_the_server_blocks_or_hands_back_every_call_and_serves_again_after() {
    let ws = Guarded::new(None);
    ws.trust();
    let server = Server::start_http(|cmd| ws.configure(cmd));
    let pid = server.status()["pid"].as_u64().unwrap();
    let via_server = || server.client();
    assert_eq!(ws.ask(via_server(), LS, "warm"), Claude::Allowed);
    // What makes an allow below the server's: with ten descriptors a
    // client cannot spawn the hook itself.
    let alone = ws.ask(
        with_nofile(&toolgate(), 10),
        LS,
        "ten descriptors, no server",
    );
    assert_ne!(alone, Claude::Allowed);
    let limit = 48;
    let out = Command::new("prlimit")
        .arg(format!("--pid={pid}"))
        .arg(format!("--nofile={limit}:{limit}"))
        .output()
        .unwrap();
    assert!(out.status.success(), "prlimit: {}", stderr_of(&out));
    let socket: PathBuf = server
        .client()
        .get_envs()
        .find(|(k, _)| *k == "TOOLGATE_SOCKET")
        .and_then(|(_, v)| v)
        .expect("the client names the socket")
        .into();
    let mut held: Vec<std::os::unix::net::UnixStream> = (0..64)
        .map(|_| std::os::unix::net::UnixStream::connect(&socket).unwrap())
        .collect();
    let fds = format!("/proc/{pid}/fd");
    let started = Instant::now();
    while std::fs::read_dir(&fds).unwrap().count() < limit {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the server never used up its descriptors"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut round = 0;
    loop {
        let what = format!("{} connections held", held.len());
        ws.refuses(via_server, &what);
        match ws.ask(via_server(), LS, &what) {
            Claude::Allowed => {}
            Claude::Denied(why) | Claude::Blocked(why) => {
                assert!(why.contains("blocked"), "{what}: {why}")
            }
        }
        if held.is_empty() {
            break;
        }
        held.truncate(held.len().saturating_sub(8));
        round += 1;
    }
    assert!(round > 0);
    // Free: once the connections still queued are drained (the server
    // accepts them as its back-off allows), the server answers again. A
    // client with ten descriptors cannot evaluate this call itself (its
    // hook cannot be spawned: see the test above), so an allow is the
    // server's.
    let lean = || with_nofile(&server.client(), 10);
    let started = Instant::now();
    loop {
        match ws.ask(lean(), LS, "freed") {
            Claude::Allowed => break,
            Claude::Denied(why) | Claude::Blocked(why) => {
                assert!(
                    started.elapsed() < Duration::from_secs(15),
                    "the server never answered again: {why}"
                );
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
    ws.refuses(lean, "freed");
}

/// libfaketime, which moves a process's clock (Debian's `faketime`;
/// .ci/run installs it).
fn libfaketime() -> PathBuf {
    let path = PathBuf::from(format!(
        "/usr/lib/{}-linux-gnu/faketime/libfaketime.so.1",
        std::env::consts::ARCH
    ));
    assert!(
        path.exists(),
        "this test needs libfaketime (apt-get install faketime; .ci/run installs it): {} is \
         missing",
        path.display()
    );
    path
}

/// `cmd` with its wall clock moved as `FAKETIME` says (`-1h`, `+10d`) or,
/// with `file`, as that file says whenever the clock is read. Only the wall
/// clock: a monotonic clock does not go back, whatever NTP or a resumed VM
/// do to the wall.
fn faked_clock<'a>(cmd: &'a mut Command, spec: &str, file: Option<&Path>) -> &'a mut Command {
    cmd.env("LD_PRELOAD", libfaketime())
        .env("FAKETIME_DONT_FAKE_MONOTONIC", "1");
    match file {
        Some(file) => cmd
            .env("FAKETIME_TIMESTAMP_FILE", file)
            .env("FAKETIME_NO_CACHE", "1"),
        None => cmd.env("FAKETIME", spec),
    }
}

/// The one-shot path's reload check for components is the compile cache's
/// stat index: a component whose identity (device, inode, size, mtime,
/// ctime) was recorded with its content hash is not read again. A write
/// within one clock tick of a recorded identity can keep it, so an identity
/// is recorded only once the file is older than that (`RACY`). With the
/// wall clock behind the file's last change — it jumped back since the
/// write — the file's age cannot be told, and it must not count as old.
#[test]
fn a_clock_jumped_back_behind_a_components_change_does_not_count_it_as_settled() {
    let ws = Guarded::new(Some(&format!("the clock guard {}", nonce())));
    let stat_files = || {
        names(&ws.cache())
            .into_iter()
            .filter(|n| n.ends_with(".stat"))
            .count()
    };
    let mut behind = toolgate();
    faked_clock(&mut behind, "-1h", None);
    let why = ws
        .ask(behind, WRITE, "an hour behind")
        .refused("an hour behind");
    assert!(why.contains(&ws.guard_says), "{why}");
    assert_eq!(
        stat_files(),
        0,
        "a component changed an hour in this process's future was recorded as settled"
    );
    // The same file an hour in the past: settled, recorded (what the test
    // above would see, were the rule not kept).
    let mut ahead = toolgate();
    faked_clock(&mut ahead, "+1h", None);
    let why = ws
        .ask(ahead, WRITE, "an hour ahead")
        .refused("an hour ahead");
    assert!(why.contains(&ws.guard_says), "{why}");
    assert_eq!(stat_files(), 1, "{:?}", names(&ws.cache()));
}

/// Rewrites `path` in place — the same inode, the same size — with `text`,
/// then sets its mtime to `mtime`: only its content and its ctime (which
/// no user can set) differ from before.
fn rewrite_in_place(path: &Path, text: &str, mtime: std::time::SystemTime) {
    use std::io::Write;
    use std::os::unix::fs::MetadataExt;
    let before = std::fs::metadata(path).unwrap();
    assert_eq!(
        before.len(),
        text.len() as u64,
        "a rewrite of the same size"
    );
    let mut file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    file.write_all(text.as_bytes()).unwrap();
    file.set_modified(mtime).unwrap();
    drop(file);
    let after = std::fs::metadata(path).unwrap();
    assert_eq!((after.ino(), after.len()), (before.ino(), before.len()));
    assert_eq!(after.modified().unwrap(), mtime);
}

/// The server's reload check with its wall clock jumping backwards, and the
/// config's mtime moved backwards with it (restored to what the server
/// loaded, then earlier still): what it compares is each file's identity
/// (device, inode, size, mtime and ctime) for equality, never "newer than
/// the load", so every edit is picked up at the next call and the stale
/// chain never answers. The edits keep the inode and the size: the content
/// and the ctime are all that change.
#[test]
fn a_clock_jumping_back_never_keeps_a_stale_chain_in_the_server() {
    let fx = Fixture::new();
    let chain = |guest: &str| {
        json!({"schema": 1, "hooks": [{"name": "g", "wasm": crate::guests::path(guest)}]})
            .to_string()
    };
    let (allow, deny) = (chain("allow"), chain("deny"));
    let width = allow.len().max(deny.len());
    let (allow, deny) = (format!("{allow:width$}"), format!("{deny:width$}"));
    let config = fx.global().join("hooks.json");
    std::fs::write(&config, &allow).unwrap();
    let loaded_mtime = std::fs::metadata(&config).unwrap().modified().unwrap();
    let clock = fx.marker("clock");
    std::fs::write(&clock, "+0").unwrap();
    let server = Server::start_http(|cmd| {
        faked_clock(cmd, "", Some(&clock));
        cmd.env("TOOLGATE_CONFIG_DIR", fx.global());
    });
    let ask = |what: &str| {
        let mut cmd = server.client();
        cmd.env("TOOLGATE_CONFIG_DIR", fx.global())
            .args(["claude-code", "--workspace"])
            .arg(fx.workspace());
        let input = claude_pre(&fx.workspace(), "Bash", json!({"command": "ls"}));
        let out = finish_within(
            spawn_with_stdin(&mut cmd, &input),
            Duration::from_secs(30),
            what,
        );
        Claude::of(&out, what)
    };
    assert_eq!(ask("loaded"), Claude::Allowed);
    // The server's clock is the file's: ten days on, then a day before it
    // started (its uptime cannot be told: 0).
    std::fs::write(&clock, "+10d").unwrap();
    assert!(server.status()["up_s"].as_u64().unwrap() >= 9 * 86_400);
    std::fs::write(&clock, "-1d").unwrap();
    assert_eq!(server.status()["up_s"], 0);
    let hour = Duration::from_secs(3600);
    let edits = [
        ("-1d", &deny, loaded_mtime, "its mtime restored"),
        ("-2d", &allow, loaded_mtime - hour, "its mtime an hour back"),
        (
            "-3d",
            &deny,
            loaded_mtime - 24 * hour,
            "its mtime a day back",
        ),
    ];
    for (at, text, mtime, what) in edits {
        std::fs::write(&clock, at).unwrap();
        rewrite_in_place(&config, text, mtime);
        let answer = ask(what);
        if *text == deny {
            let why = answer.refused(what);
            assert!(
                why.contains("no force-pushing from a sandbox"),
                "{what}: {why}"
            );
        } else {
            assert_eq!(answer, Claude::Allowed, "{what}");
        }
    }
    let status = server.status();
    assert_eq!(
        status["requests"], 4,
        "every call was the server's: {status}"
    );
    assert_eq!(status["reloads"], 3, "{status}");
}

/// `toolgate serve` in a mount namespace (its program is `nsenter`, which
/// the server of tests/all/serve.rs, running `toolgate` itself, cannot
/// be), on a socket outside the namespace's own mounts; killed on drop.
struct ServerIn<'a> {
    ns: &'a MountNs,
    child: std::process::Child,
    socket: PathBuf,
}

impl<'a> ServerIn<'a> {
    /// `configure` gives it the configuration its callers have.
    fn start(ns: &'a MountNs, dir: &Path, configure: impl FnOnce(&mut Command)) -> ServerIn<'a> {
        std::fs::create_dir_all(dir).unwrap();
        let socket = dir.join("serve.sock");
        let mut serve = ns.wrap(&toolgate());
        configure(&mut serve);
        let child = serve
            .args(["serve", "--socket"])
            .arg(&socket)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let started = Instant::now();
        while std::os::unix::net::UnixStream::connect(&socket).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "the server did not start listening"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        ServerIn { ns, child, socket }
    }

    /// A `toolgate`, in the namespace, that uses this server.
    fn client(&self) -> Command {
        let mut cmd = self.ns.wrap(&toolgate());
        cmd.env_remove("TOOLGATE_SERVER")
            .env("TOOLGATE_SOCKET", &self.socket);
        cmd
    }

    fn status(&self) -> Value {
        let out = self
            .client()
            .args(["serve", "status", "--json", "--socket"])
            .arg(&self.socket)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr_of(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

impl Drop for ServerIn<'_> {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The server loading a trusted workspace while the disk under the trust
/// store is full: the hook's private copy cannot be made, so its calls are
/// refused; once there is room the next call is the hook's again, as a
/// fresh process decides it. (The server used to keep that refusal, judged
/// once at the load, for as long as no file of the config changed.)
#[test]
fn a_server_that_loaded_on_a_full_disk_runs_the_trusted_hook_once_there_is_room() {
    let ws = Guarded::new(None);
    let ns = MountNs::new();
    ns.tmpfs(&ws.state(), 1024);
    let in_ns = || ns.wrap(&toolgate());
    ws.trust_as(in_ns);
    let filler = fill(&ns.path(&ws.state()), 0);
    let server = ServerIn::start(&ns, &ws.fx.dir.path().join("run"), |cmd| ws.configure(cmd));
    let why = ws
        .ask(server.client(), LS, "a full disk")
        .refused("a full disk");
    assert!(why.contains("No space left"), "{why}");
    ws.refuses(|| server.client(), "a full disk");
    std::fs::remove_file(&filler).unwrap();
    assert_eq!(ws.ask(server.client(), LS, "room"), Claude::Allowed);
    let (why, _) = ws.refuses(|| server.client(), "room");
    assert!(why.contains("never rm -rf"), "{why}");
    let status = server.status();
    assert_eq!(
        status["requests"], 6,
        "every call was the server's: {status}"
    );
}

/// `untrusted_hooks: "skip"` lets a workspace's *untrusted* hooks step
/// aside; a trusted guard whose private copy cannot be made on a full disk
/// is not one of them: its calls are blocked, saying it is trusted and why
/// it cannot run (not asking for a trust that is already there). It was
/// skipped, and `rm -rf /` went through on a full disk.
#[test]
fn under_untrusted_hooks_skip_a_trusted_guard_that_cannot_be_copied_still_blocks() {
    let ws = Guarded::new(None);
    std::fs::write(
        ws.fx.global().join("hooks.json"),
        json!({"schema": 1, "untrusted_hooks": "skip", "hooks": []}).to_string(),
    )
    .unwrap();
    let ns = MountNs::new();
    ns.tmpfs(&ws.state(), 1024);
    let in_ns = || ns.wrap(&toolgate());
    ws.trust_as(in_ns);
    let filler = fill(&ns.path(&ws.state()), 0);
    let (rm, _) = ws.refuses(in_ns, "a full disk, untrusted hooks skipped");
    assert!(
        rm.contains("is trusted but cannot run here") && rm.contains("No space left"),
        "{rm}"
    );
    assert!(!rm.contains("toolgate trust"), "{rm}");
    std::fs::remove_file(&filler).unwrap();
    let (rm, _) = ws.refuses(in_ns, "room");
    assert!(rm.contains("never rm -rf"), "{rm}");
    assert_eq!(ws.ask(in_ns(), LS, "room"), Claude::Allowed);
}
