//! Workspace trust, through the real binary: a repository's command hooks
//! run only after the user pinned exactly what runs (SECURITY.md, "Workspace
//! trust"). Each test keeps its own state directory, so the trust store is
//! the only thing that differs between "trusted" and "not".

use crate::support::{Fixture, run_with_stdin, stderr, stdout_json, toolgate, write_executable};
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

const PUSH: &str = r#"{"event":"pre_tool_use","tool":"Bash","input":{"command":"git push"}}"#;

/// A workspace whose one command hook leaves a marker when it runs, and a
/// state directory of its own.
pub(crate) struct Case {
    pub(crate) fx: Fixture,
    state: tempfile::TempDir,
}

impl Case {
    pub(crate) fn new() -> Self {
        let fx = Fixture::new();
        let marker = fx.marker("ran");
        std::fs::create_dir_all(fx.workspace().join("hooks")).unwrap();
        write_executable(
            &fx.workspace().join("hooks/guard.sh"),
            &format!(
                "#!/bin/sh\ncat >/dev/null\ntouch '{}'\necho '{{\"decision\":\"allow\"}}'\n",
                marker.display()
            ),
        );
        fx.workspace_hooks(json!([
            {"name": "guard", "command": ["sh", "hooks/guard.sh"], "tools": ["Bash"]}
        ]));
        // The evidence is a file outside the hook's scratch folder.
        fx.unconfine("guard");
        Case {
            fx,
            state: tempfile::tempdir().unwrap(),
        }
    }

    fn ws(&self) -> PathBuf {
        self.fx.workspace()
    }

    fn cmd(&self) -> std::process::Command {
        self.cmd_from(toolgate())
    }

    /// `toolgate` (as `base` runs it: with a server, say) with this case's
    /// state directory and global config.
    /// Gives `cmd` (a `toolgate serve`) this case's trust state and
    /// global config: a server answers only with its own configuration.
    pub(crate) fn configure(&self, cmd: &mut std::process::Command) {
        cmd.env("XDG_STATE_HOME", self.state.path())
            .env("TOOLGATE_CONFIG_DIR", self.fx.global());
    }

    fn cmd_from(&self, mut base: std::process::Command) -> std::process::Command {
        base.env("XDG_STATE_HOME", self.state.path())
            .env("TOOLGATE_CONFIG_DIR", self.fx.global());
        base
    }

    pub(crate) fn store(&self) -> PathBuf {
        self.state.path().join("toolgate/trust")
    }

    /// The one record in the store.
    fn record(&self) -> PathBuf {
        let mut records = std::fs::read_dir(self.store())
            .unwrap()
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "json"));
        records.next().expect("a trust record").path()
    }

    /// `toolgate check` on a Bash call: exit code and answer.
    pub(crate) fn check(&self) -> (Option<i32>, Value) {
        self.check_from(toolgate())
    }

    /// [`Case::check`], run as `base` runs `toolgate`.
    pub(crate) fn check_from(&self, base: std::process::Command) -> (Option<i32>, Value) {
        let out = self.check_output_from(base);
        (out.status.code(), stdout_json(&out))
    }

    /// `toolgate check` on a Bash call, run as `base` runs `toolgate`: all
    /// it did.
    pub(crate) fn check_output_from(&self, base: std::process::Command) -> std::process::Output {
        run_with_stdin(
            self.cmd_from(base)
                .args(["check", "--workspace"])
                .arg(self.ws()),
            PUSH,
        )
    }

    /// Whether the hook ran since the last look.
    pub(crate) fn ran(&self) -> bool {
        let marker = self.fx.marker("ran");
        let ran = marker.exists();
        let _ = std::fs::remove_file(marker);
        ran
    }

    fn status(&self) -> Value {
        let out = self
            .cmd()
            .args(["trust", "status", "--json", "--workspace"])
            .arg(self.ws())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        stdout_json(&out)
    }

    fn digest(&self) -> String {
        self.status()["current_digest"]
            .as_str()
            .expect("a digest")
            .to_owned()
    }

    /// `toolgate trust <args> --workspace <ws>`, with nothing on stdin.
    fn trust_cmd(&self, cmd: &mut std::process::Command, args: &[&str]) -> std::process::Output {
        cmd.arg("trust")
            .args(args)
            .arg("--workspace")
            .arg(self.ws())
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    }

    fn trust_with(&self, digest: &str) -> std::process::Output {
        self.trust_cmd(&mut self.cmd(), &["--yes", digest])
    }

    pub(crate) fn trust(&self) {
        let out = self.trust_with(&self.digest());
        assert!(out.status.success(), "{}", stderr(&out));
    }

    /// The call is blocked by the gate (a failure, exit 3), the hook did not run, and the reason
    /// contains `why` and the command that fixes it.
    fn denied_untrusted(&self, why: &str) {
        let (code, answer) = self.check();
        assert_eq!(code, Some(3), "{answer}");
        let reason = answer["reason"].as_str().unwrap_or_default();
        assert!(reason.contains("is not trusted"), "{reason}");
        assert!(reason.contains(why), "wanted {why:?} in: {reason}");
        assert!(
            reason.contains(&format!(
                "toolgate trust --workspace {}",
                self.canonical().display()
            )),
            "{reason}"
        );
        assert!(!self.ran(), "an untrusted hook ran");
    }

    fn canonical(&self) -> PathBuf {
        self.ws().canonicalize().unwrap()
    }

    fn runs_trusted(&self) {
        let (code, answer) = self.check();
        assert_eq!(code, Some(0), "{answer}");
        assert!(self.ran(), "the trusted hook did not run: {answer}");
    }
}

/// `toolgate trust` refused (exit 1), saying `why` on stderr.
fn refused(out: &std::process::Output, why: &str) {
    assert_eq!(out.status.code(), Some(1), "{}", stderr(out));
    assert!(
        stderr(out).contains(why),
        "wanted {why:?} in: {}",
        stderr(out)
    );
}

#[test]
fn first_use_is_denied_with_the_command_that_trusts_it() {
    let case = Case::new();
    case.denied_untrusted("never trusted on this machine");
}

#[test]
fn trusted_hooks_run_and_status_says_so() {
    let case = Case::new();
    case.trust();
    case.runs_trusted();
    let status = case.status();
    assert_eq!(status["hooks"][0]["trust"]["state"], "trusted", "{status}");
    assert_eq!(status["recorded"]["digest"], status["current_digest"]);
    // The store is the user's own and private.
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&case.store()), 0o700);
    for entry in std::fs::read_dir(case.store()).unwrap() {
        let path = entry.unwrap().path();
        // Records 0600; the snapshots and scratch folders 0700.
        let want = if path.is_dir() { 0o700 } else { 0o600 };
        assert_eq!(mode(&path), want, "{}", path.display());
    }
}

#[test]
fn an_edit_to_the_script_revokes_trust() {
    let case = Case::new();
    case.trust();
    case.runs_trusted();
    let script = case.ws().join("hooks/guard.sh");
    let text = std::fs::read_to_string(&script).unwrap();
    std::fs::write(
        &script,
        text.replace("cat >/dev/null", "cat >/dev/null; : evil"),
    )
    .unwrap();
    case.denied_untrusted("script hooks/guard.sh changed since it was trusted");
}

#[test]
fn an_edit_to_hooks_json_revokes_trust() {
    let case = Case::new();
    case.trust();
    let path = case.ws().join(".toolgate/hooks.json");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("{text}\n")).unwrap();
    case.denied_untrusted("hooks.json changed since it was trusted");
}

#[test]
fn a_moved_workspace_is_not_trusted() {
    let case = Case::new();
    case.trust();
    let moved = case.fx.dir.path().join("moved");
    std::fs::rename(case.ws(), &moved).unwrap();
    let out = run_with_stdin(case.cmd().args(["check", "--workspace"]).arg(&moved), PUSH);
    assert_eq!(out.status.code(), Some(3));
    let reason = stdout_json(&out)["reason"].as_str().unwrap().to_owned();
    assert!(reason.contains("never trusted on this machine"), "{reason}");
    assert!(!case.ran());
}

#[test]
fn a_symlinked_program_is_pinned_to_what_it_points_at() {
    let case = Case::new();
    let ws = case.ws();
    std::fs::create_dir_all(ws.join("bin")).unwrap();
    std::fs::create_dir_all(ws.join("other")).unwrap();
    std::fs::copy(ws.join("hooks/guard.sh"), ws.join("other/guard.sh")).unwrap();
    std::os::unix::fs::symlink("../hooks/guard.sh", ws.join("bin/guard")).unwrap();
    case.fx.workspace_hooks(json!([
        {"name": "guard", "command": ["bin/guard"], "tools": ["Bash"]}
    ]));
    case.trust();
    case.runs_trusted();
    // Same bytes, another file: the link now resolves elsewhere.
    std::fs::remove_file(ws.join("bin/guard")).unwrap();
    std::os::unix::fs::symlink("../other/guard.sh", ws.join("bin/guard")).unwrap();
    case.denied_untrusted("now resolves to");
}

#[test]
fn a_symlink_inside_the_pinned_tree_is_refused() {
    let case = Case::new();
    let hooks = case.ws().join("hooks");
    std::os::unix::fs::symlink("guard.sh", hooks.join("link")).unwrap();
    refused(
        &case.trust_with("blake3:0"),
        "hooks/link is a symlink; a pinned tree holds regular files only",
    );
    case.denied_untrusted("is a symlink");
}

#[test]
fn a_trust_store_anyone_else_can_read_or_write_trusts_nothing() {
    let case = Case::new();
    case.trust();
    case.runs_trusted();
    std::fs::set_permissions(case.store(), std::fs::Permissions::from_mode(0o755)).unwrap();
    case.denied_untrusted("is accessible by group or others (mode 755)");
    // Recording into it is refused too.
    let out = case.trust_with(&case.digest());
    refused(&out, "the trust store");
    std::fs::set_permissions(case.store(), std::fs::Permissions::from_mode(0o700)).unwrap();
    case.runs_trusted();
    // A record others can read is refused the same way.
    let record = case.record();
    std::fs::set_permissions(&record, std::fs::Permissions::from_mode(0o644)).unwrap();
    case.denied_untrusted("the trust record");
}

#[test]
fn a_hand_written_record_is_refused() {
    let case = Case::new();
    case.trust();
    let record = case.record();
    // Pin some other script content, keep the old digest: a forged record.
    let text = std::fs::read_to_string(&record).unwrap();
    let mut value: Value = serde_json::from_str(&text).unwrap();
    value["hooks"][0]["argv"] = json!(["sh", "-c", "anything"]);
    std::fs::write(&record, value.to_string()).unwrap();
    case.denied_untrusted("its digest does not match what it records");
}

#[test]
fn a_workspace_cannot_choose_the_trust_store_or_the_policy() {
    let case = Case::new();
    for (field, value) in [
        ("trust_dir", json!("/tmp/x")),
        ("untrusted_hooks", json!("skip")),
    ] {
        let mut config = json!({"schema": 1, "hooks": [
            {"name": "guard", "command": ["sh", "hooks/guard.sh"]}
        ]});
        config[field] = value;
        case.fx.workspace_raw(&config.to_string());
        let out = run_with_stdin(
            case.cmd().args(["check", "--workspace"]).arg(case.ws()),
            PUSH,
        );
        assert_eq!(out.status.code(), Some(1), "{field}");
        assert!(
            stderr(&out).contains(&format!("field `{field}`")),
            "{}",
            stderr(&out)
        );
        assert!(!case.ran());
    }
    // A state directory inside the workspace (an agent's settings could
    // point XDG_STATE_HOME there) is refused, even with a record in it.
    let case = Case::new();
    let inside = case.ws().join(".state");
    std::fs::create_dir(&inside).unwrap();
    std::fs::set_permissions(&inside, std::fs::Permissions::from_mode(0o700)).unwrap();
    let digest = case.digest();
    let out = case.trust_cmd(
        case.cmd().env("XDG_STATE_HOME", &inside),
        &["--yes", &digest],
    );
    refused(&out, "inside the workspace");
}

#[test]
fn skip_mode_leaves_the_hook_out_and_says_so() {
    let case = Case::new();
    std::fs::write(
        case.fx.global().join("hooks.json"),
        json!({"schema": 1, "untrusted_hooks": "skip"}).to_string(),
    )
    .unwrap();
    let (code, answer) = case.check();
    assert_eq!(code, Some(0), "{answer}");
    assert!(!case.ran());
    let run = &answer["runs"][0];
    assert_eq!(run["verdict"], "skipped", "{answer}");
    let reason = run["reason"].as_str().unwrap();
    assert!(
        reason.contains("never trusted") && reason.contains("toolgate trust"),
        "{reason}"
    );
    let out = case
        .cmd()
        .args(["hooks", "--workspace"])
        .arg(case.ws())
        .env("COLUMNS", "200")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("UNTRUSTED: skip"), "{text}");
    assert!(text.contains("untrusted: guard will not run"), "{text}");
}

/// A script that is not there is never pinned (neither "as absent" nor any
/// other way): the config does not load, so the review refuses, names the
/// hook and the field, and records nothing.
#[test]
fn a_missing_interpreter_script_is_refused_not_pinned() {
    let case = Case::new();
    case.fx.workspace_hooks(json!([
        {"name": "guard", "command": ["sh", "hooks/gaurd.sh"], "tools": ["Bash"]}
    ]));
    for args in [&[][..], &["--yes", "blake3:0000"][..]] {
        let out = case.trust_cmd(&mut case.cmd(), args);
        refused(&out, "does not load, so it cannot be trusted");
        let text = stderr(&out);
        assert!(
            text.contains("hooks[0] (\"guard\"): field `command`: element 1, the script"),
            "{text}"
        );
        assert!(!text.contains("absent"), "{text}");
        assert!(!String::from_utf8_lossy(&out.stdout).contains("absent"));
    }
    let records = std::fs::read_dir(case.store())
        .map(|dir| dir.flatten().count())
        .unwrap_or(0);
    assert_eq!(records, 0, "nothing is recorded");
    assert!(!case.ran());
}

#[test]
fn yes_with_a_wrong_digest_records_nothing() {
    let case = Case::new();
    let out = case.trust_with("blake3:0000");
    refused(&out, "not what was reviewed");
    assert!(case.status()["recorded"].is_null());
    case.denied_untrusted("never trusted");
    // Nor does a review without a terminal to ask on: it prints the command.
    let out = case.trust_cmd(&mut case.cmd(), &[]);
    refused(&out, &format!("--yes {}", case.digest()));
    assert!(String::from_utf8_lossy(&out.stdout).contains("hooks/guard.sh"));
    case.denied_untrusted("never trusted");
}

#[test]
fn the_review_shows_what_changed_since_it_was_trusted() {
    let case = Case::new();
    case.trust();
    std::fs::write(
        case.ws().join("hooks/guard.sh"),
        "#!/bin/sh\necho changed\n",
    )
    .unwrap();
    let out = case.trust_cmd(&mut case.cmd(), &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("~ guard (command; script hooks/guard.sh changed since it was trusted)"),
        "{text}"
    );
    assert!(
        text.contains("hooks.json") && text.contains("(as trusted)"),
        "{text}"
    );
}

#[test]
fn the_review_shows_a_unified_diff_of_a_changed_script_and_hooks_json() {
    let case = Case::new();
    case.trust();
    let script = case.ws().join("hooks/guard.sh");
    let before = std::fs::read_to_string(&script).unwrap();
    std::fs::write(
        &script,
        before.replace(
            "cat >/dev/null\n",
            "cat >/dev/null\ncurl -s https://example.com\n",
        ),
    )
    .unwrap();
    let config = case.ws().join(".toolgate/hooks.json");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("{text}\n")).unwrap();
    let out = case.trust_cmd(&mut case.cmd(), &[]);
    let shown = String::from_utf8_lossy(&out.stdout);
    // The script: what was added, as a diff against the trusted text.
    assert!(shown.contains("changed   hooks/guard.sh"), "{shown}");
    assert!(shown.contains("--- hooks/guard.sh (trusted)"), "{shown}");
    assert!(shown.contains("+++ hooks/guard.sh (now)"), "{shown}");
    assert!(
        shown.contains("      +curl -s https://example.com"),
        "{shown}"
    );
    assert!(shown.contains("       cat >/dev/null"), "context: {shown}");
    // hooks.json too.
    assert!(
        shown.contains("--- .toolgate/hooks.json (trusted)"),
        "{shown}"
    );
    // Trusting the change keeps its text for the next review.
    let digest = shown
        .lines()
        .find_map(|l| l.strip_prefix("digest: "))
        .unwrap()
        .to_owned();
    let out = case.trust_with(&digest);
    assert!(out.status.success(), "{}", stderr(&out));
    std::fs::write(&script, &before).unwrap();
    let out = case.trust_cmd(&mut case.cmd(), &[]);
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.contains("      -curl -s https://example.com"),
        "{shown}"
    );
}

#[test]
fn the_record_keeps_only_texts_that_hash_to_their_digest() {
    let case = Case::new();
    case.trust();
    let record = case.record();
    let mut value: Value = serde_json::from_slice(&std::fs::read(&record).unwrap()).unwrap();
    let kept = value["kept"].as_object_mut().expect("kept texts");
    assert!(!kept.is_empty());
    // Someone who can write the store rewrites the kept text: the review
    // does not show it as what was trusted.
    for k in kept.values_mut() {
        if k.get("text").is_some() {
            k["text"] = json!("#!/bin/sh\necho planted\n");
        }
    }
    std::fs::write(&record, serde_json::to_vec(&value).unwrap()).unwrap();
    std::fs::set_permissions(&record, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::write(case.ws().join("hooks/guard.sh"), "#!/bin/sh\necho new\n").unwrap();
    let out = case.trust_cmd(&mut case.cmd(), &[]);
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(!shown.contains("planted"), "{shown}");
    assert!(
        shown.contains("changed   hooks/guard.sh: blake3:"),
        "digests instead: {shown}"
    );
}

#[test]
fn a_changed_binary_is_shown_by_digest_and_size() {
    let case = Case::new();
    let blob = case.ws().join("hooks/table.bin");
    std::fs::write(&blob, [0u8, 1, 2, 3]).unwrap();
    case.trust();
    std::fs::write(&blob, [0u8, 1, 2, 3, 4, 5]).unwrap();
    let out = case.trust_cmd(&mut case.cmd(), &[]);
    let shown = String::from_utf8_lossy(&out.stdout);
    let line = shown
        .lines()
        .find(|l| l.contains("changed   hooks/table.bin"))
        .unwrap_or_else(|| panic!("{shown}"));
    assert!(line.contains("(4 bytes) → blake3:"), "{line}");
    assert!(line.contains("(6 bytes)"), "{line}");
}

#[test]
fn declared_trust_files_are_pinned() {
    let case = Case::new();
    std::fs::write(case.ws().join("hooks/lib.sh"), "X=1\n").unwrap();
    case.fx.workspace_hooks(json!([{
        "name": "guard", "command": ["sh", "hooks/guard.sh"], "tools": ["Bash"],
        "trust_files": ["hooks/lib.sh"]
    }]));
    case.trust();
    case.runs_trusted();
    std::fs::write(case.ws().join("hooks/lib.sh"), "X=2\n").unwrap();
    case.denied_untrusted("declared hooks/lib.sh changed");
}

#[test]
fn a_program_outside_the_workspace_that_others_can_write_cannot_be_trusted() {
    let case = Case::new();
    let open = case.fx.dir.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    std::fs::copy("/bin/sh", open.join("sh")).unwrap();
    case.fx.workspace_hooks(json!([
        {"name": "guard", "command": [open.join("sh"), "hooks/guard.sh"], "tools": ["Bash"]}
    ]));
    refused(&case.trust_with("blake3:0"), "could be changed by others");
    case.denied_untrusted("could be changed by others");
}

#[test]
fn revoking_stops_the_hooks() {
    let case = Case::new();
    case.trust();
    case.runs_trusted();
    let out = case.trust_cmd(&mut case.cmd(), &["revoke"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("revoked"));
    case.denied_untrusted("never trusted");
}

#[test]
fn global_hooks_need_no_trust() {
    let case = Case::new();
    case.fx.workspace_raw(r#"{"schema": 1, "hooks": []}"#);
    let script = case.fx.global_script(
        "g.sh",
        &std::fs::read_to_string(case.ws().join("hooks/guard.sh")).unwrap(),
    );
    case.fx
        .global_hooks(json!([{"name": "g", "command": [script]}]));
    case.runs_trusted();
}

#[test]
fn an_agent_is_told_to_ask_a_person_and_the_hook_does_not_run() {
    let case = Case::new();
    let input = json!({
        "session_id": "s", "transcript_path": "/dev/null", "cwd": case.ws(),
        "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": "git push"}
    });
    let out = run_with_stdin(
        case.cmd()
            .args(["claude-code", "--workspace"])
            .arg(case.ws()),
        &input.to_string(),
    );
    let answer = stdout_json(&out);
    let hso = &answer["hookSpecificOutput"];
    assert_eq!(hso["permissionDecision"], "deny", "{answer}");
    assert!(
        hso["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains("A person must review it"),
        "{answer}"
    );
    assert!(!case.ran());
}

/// The pin is checked again just before each spawn, not only at load: a
/// long-lived runner (an embedding harness, the server) does not run a
/// script that changed after its config was loaded.
#[test]
fn an_edit_after_loading_is_caught_before_the_spawn() {
    let case = Case::new();
    case.fx.trust();
    let config = crate::support::loader(&case.ws())
        .global_dir(case.fx.global())
        .load()
        .unwrap();
    let runner = toolgate::HookRunner::builder().config(config).build();
    let request = toolgate::Request::pre("Bash", json!({"command": "ls"}));
    let rt = tokio::runtime::Runtime::new().unwrap();
    assert!(rt.block_on(runner.pre_tool_use(&request)).may_proceed());
    assert!(case.ran());
    let script = case.ws().join("hooks/guard.sh");
    let text = std::fs::read_to_string(&script).unwrap();
    std::fs::write(&script, format!("{text}# edited\n")).unwrap();
    let outcome = rt.block_on(runner.pre_tool_use(&request));
    assert!(!outcome.may_proceed());
    assert!(!case.ran(), "the edited script ran");
    let reason = outcome.runs[0].reason.as_deref().unwrap();
    assert!(reason.contains("changed since it was trusted"), "{reason}");
}

#[test]
fn on_a_terminal_trust_asks_and_records_only_on_yes() {
    let case = Case::new();
    let ask = |answer: &str| {
        let command = format!(
            "{} trust --workspace {}",
            env!("CARGO_BIN_EXE_toolgate"),
            case.ws().display()
        );
        let out = crate::support::run_with_stdin(
            crate::support::hermetic(&mut std::process::Command::new("script"))
                .args(["-qec", &command, "/dev/null"])
                .env("XDG_STATE_HOME", case.state.path()),
            answer,
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let said = ask("n\n");
    assert!(said.contains("Trust this command hook in"), "{said}");
    assert!(said.contains("not trusted; nothing recorded"), "{said}");
    case.denied_untrusted("never trusted");
    let said = ask("y\n");
    assert!(said.contains("trusted: 1 command hook in"), "{said}");
    case.runs_trusted();
}
