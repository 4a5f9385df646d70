//! `toolgate new`: every language's scaffold builds with its own build.sh and
//! passes its own sample tests through the real binary, with no edits.
//!
//! The toolchains come from the same shared cache the guest examples use
//! (guest-examples/.cache, filled by `guest-examples/build-all`); on a machine
//! without it the scaffold's build.sh installs them, so these tests build for
//! real either way and never skip.

use crate::support::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `toolgate new --lang <lang> <parent>/<name>`, which must succeed.
fn new_project(lang: &str, parent: &Path, name: &str) -> PathBuf {
    let dir = parent.join(name);
    succeeded(toolgate().args(["new", "--lang", lang]).arg(&dir));
    dir
}

/// One of a project's scripts, using the guest examples' toolchain cache.
fn in_guest_cache(script: PathBuf) -> Command {
    let mut cmd = Command::new(script);
    hermetic_keeping_toolchains(&mut cmd).env(
        "TOOLGATE_GUEST_CACHE",
        Path::new(env!("CARGO_MANIFEST_DIR")).join("guest-examples/.cache"),
    );
    cmd
}

/// Creates `<tmp>/hello-<lang>` with `toolgate new`, runs its test.sh, and
/// returns the project folder.
fn scaffold_passes_its_tests(lang: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = new_project(lang, tmp.path(), &format!("hello-{lang}"));
    let out = succeeded(
        in_guest_cache(dir.join("test.sh")).env("TOOLGATE", env!("CARGO_BIN_EXE_toolgate")),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    // The build says which phase it is in and how long it took (README:
    // "Each guest build prints its phases").
    let progress = String::from_utf8_lossy(&out.stderr);
    assert!(
        progress.contains(&format!("hello-{lang}")) && progress.contains(": done in "),
        "{progress}"
    );
    for case in ["tests/allow-ls.json", "tests/deny-sudo.json"] {
        assert!(stdout.contains(&format!("ok   {case}\n")), "{stdout}");
    }
    assert!(
        stdout.contains("test result: ok. 2 passed; 0 failed"),
        "{stdout}"
    );
    // The component really decides: the sample denial, through `check`, with
    // the reason built from the hook's config.
    let wasm = dir.join(format!("out/hello-{lang}.wasm"));
    assert!(wasm.metadata().unwrap().len() > 1000);
    let (code, v) = check_in(
        &dir,
        tmp.path(),
        r#"{"event":"pre_tool_use","tool":"Bash","input":{"command":"cd /srv && doas make install"}}"#,
    );
    assert_eq!(code, Some(2), "{v}");
    assert_eq!(
        v["reason"],
        "`doas` is not allowed in this workspace; run the command without it or ask the user.",
        "{v}"
    );
    assert_eq!(v["runs"][0]["binding"], "wasm");
    (tmp, dir)
}

#[test]
fn new_rust_project_builds_and_passes_its_own_tests() {
    scaffold_passes_its_tests("rust");
}

#[test]
fn new_go_project_builds_and_passes_its_own_tests() {
    scaffold_passes_its_tests("go");
}

#[test]
fn new_js_project_builds_and_passes_its_own_tests() {
    scaffold_passes_its_tests("js");
}

#[test]
fn new_python_project_builds_and_passes_its_own_tests() {
    scaffold_passes_its_tests("python");
}

#[test]
fn new_c_project_builds_and_passes_its_own_tests() {
    let (_tmp, dir) = scaffold_passes_its_tests("c");
    // The project carries its SDK, WIT and build functions: nothing points
    // back into this repository.
    for file in [
        "toolgate/wit/hook.wit",
        "toolgate/guest-build.sh",
        "toolgate/c/toolgate_hook.h",
    ] {
        assert!(dir.join(file).is_file(), "{file}");
    }
}

#[test]
fn new_refuses_a_non_empty_folder_and_a_bad_name() {
    let tmp = tempfile::tempdir().unwrap();
    let taken = tmp.path().join("taken");
    std::fs::create_dir(&taken).unwrap();
    std::fs::write(taken.join("keep.txt"), "mine").unwrap();
    let out = toolgate()
        .args(["new", "--lang", "go"])
        .arg(&taken)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not empty"));
    assert_eq!(
        std::fs::read_to_string(taken.join("keep.txt")).unwrap(),
        "mine"
    );
    assert_eq!(std::fs::read_dir(&taken).unwrap().count(), 1);

    let out = toolgate()
        .args(["new", "--lang", "rust"])
        .arg(tmp.path().join("My Hook"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("lowercase letters, digits"));
    assert!(!tmp.path().join("My Hook").exists());

    let out = toolgate()
        .args(["new", "--lang", "cobol", "x"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(64),
        "clap rejects an unknown language: a usage error"
    );
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("possible values: rust, go, js, python, c, subprocess")
    );
}

#[test]
fn go_sdk_reports_a_panic_as_a_guest_error_with_its_message() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = new_project("go", tmp.path(), "panicky");
    std::fs::write(
        dir.join("src/main.go"),
        r#"package main

import "toolgate.dev/hook"

func init() { hook.Register(decide) }
func main() {}

func decide(r *hook.Request) (hook.Verdict, error) {
	var m map[string]int
	m[r.Tool] = 1 // assignment to a nil map panics
	return hook.Allow(), nil
}
"#,
    )
    .unwrap();
    succeeded(&mut in_guest_cache(dir.join("build.sh")));
    let (code, v) = check_in(
        &dir,
        tmp.path(),
        r#"{"event":"pre_tool_use","tool":"Bash","input":{"command":"ls"}}"#,
    );
    assert_eq!(code, Some(3), "a panic fails closed, as a failure: {v}");
    assert_eq!(v["runs"][0]["failure"]["kind"], "guest_error", "{v}");
    let message = v["runs"][0]["failure"]["message"].as_str().unwrap();
    assert!(
        message.contains("hook panicked") && message.contains("nil map"),
        "{message}"
    );
}

/// The first ```json block of a scaffold README's "## Use it" section (the
/// global config it tells the author to write), with the placeholder path
/// made `project`'s.
fn readme_global_config(project: &Path) -> String {
    let readme = std::fs::read_to_string(project.join("README.md")).unwrap();
    let use_it = &readme[readme.find("## Use it").expect("a Use it section")..];
    let start = use_it.find("```json\n").expect("a JSON block") + "```json\n".len();
    let end = start + use_it[start..].find("```").unwrap();
    let name = project.file_name().unwrap().to_str().unwrap();
    use_it[start..end].replace(
        &format!("/absolute/path/to/{name}"),
        project.to_str().unwrap(),
    )
}

/// The global config `project`'s README gives, written in `tmp/global`:
/// the loader accepts its absolute path, and the hook decides both ways in
/// another folder's chain, with no trust asked.
fn readme_global_config_decides(tmp: &Path, project: &Path) {
    let global = tmp.join("global");
    std::fs::create_dir(&global).unwrap();
    std::fs::write(global.join("hooks.json"), readme_global_config(project)).unwrap();
    let elsewhere = tmp.join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let (code, v) = check_as_is(&elsewhere, &global, SUDO);
    assert_eq!(code, Some(2), "{v}");
    assert_eq!(
        v["decided_by"],
        project.file_name().unwrap().to_str().unwrap(),
        "{v}"
    );
    assert_eq!(v["runs"][0]["source"], "global", "{v}");
    let (code, v) = check_as_is(&elsewhere, &global, LS);
    assert_eq!(code, Some(0), "{v}");
}

const SUDO: &str =
    r#"{"event":"pre_tool_use","tool":"Bash","input":{"command":"sudo make install"}}"#;
const LS: &str = r#"{"event":"pre_tool_use","tool":"Bash","input":{"command":"ls -la"}}"#;

#[test]
fn new_subprocess_project_is_a_wire_v1_script_that_check_runs_once_trusted() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = new_project("subprocess", tmp.path(), "no-sudo");
    let script = dir.join("hooks/no-sudo.py");
    assert!(
        std::fs::read_to_string(&script)
            .unwrap()
            .starts_with("#!/usr/bin/env python3\n")
    );
    // No component SDK in a script project.
    assert!(!dir.join("toolgate").exists());
    succeeded(&mut Command::new(dir.join("build.sh")));
    // Its README says a workspace command hook needs trust, and after edits.
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    assert!(
        readme.contains("toolgate trust --workspace .") && readme.contains("needs no trust"),
        "{readme}"
    );

    // Untrusted, the workspace's script never runs: the call is blocked
    // with the command that trusts it.
    let (code, v) = check_as_is(&dir, tmp.path(), LS);
    assert_ne!(code, Some(0), "{v}");
    assert!(
        v["reason"].as_str().unwrap().contains("toolgate trust"),
        "{v}"
    );

    // Trusted (check_in trusts it as it is), it decides both ways.
    let (code, v) = check_in(&dir, tmp.path(), SUDO);
    assert_eq!(code, Some(2), "{v}");
    assert_eq!(v["decided_by"], "no-sudo", "{v}");
    assert_eq!(v["runs"][0]["binding"], "subprocess", "{v}");
    assert_eq!(
        v["reason"],
        "`sudo` is not allowed in this workspace; run the command without it or ask the user.",
        "{v}"
    );
    let (code, v) = check_in(&dir, tmp.path(), LS);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["decision"], "allow", "{v}");
}

#[test]
fn subprocess_readme_global_config_loads_and_runs_without_trust() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = new_project("subprocess", tmp.path(), "no-doas");
    readme_global_config_decides(tmp.path(), &dir);
}

/// Whether this toolgate has `toolgate test` (built by another part of
/// issue 27; `dev` runs it as a subprocess).
fn has_test_command() -> bool {
    toolgate()
        .args(["test", "--help"])
        .output()
        .unwrap()
        .status
        .success()
}

#[test]
fn dev_builds_places_the_component_in_the_workspace_and_check_runs_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = new_project("c", tmp.path(), "hello-dev");
    let ws = tmp.path().join("app");
    std::fs::create_dir(&ws).unwrap();
    let mut dev = in_guest_cache(env!("CARGO_BIN_EXE_toolgate").into());
    let out = dev
        .args(["dev", "--workspace"])
        .arg(&ws)
        .arg(&dir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    if has_test_command() {
        assert_eq!(out.status.code(), Some(0), "the fixtures pass: {err}");
    }
    assert!(err.contains("running the fixtures"), "{err}");
    // Placed inside the workspace, byte for byte what was built.
    let placed = ws.join(".toolgate/hooks/hello-dev/hello-dev.wasm");
    assert_eq!(
        std::fs::read(&placed).unwrap(),
        std::fs::read(dir.join("out/hello-dev.wasm")).unwrap(),
        "{err}"
    );
    let config: Value =
        serde_json::from_str(&std::fs::read_to_string(ws.join(".toolgate/hooks.json")).unwrap())
            .unwrap();
    assert_eq!(
        config["hooks"][0]["wasm"],
        ".toolgate/hooks/hello-dev/hello-dev.wasm"
    );
    // The workspace's chain runs it: a component needs no trust.
    let empty = tmp.path().join("no-global");
    let (code, v) = check_as_is(&ws, &empty, SUDO);
    assert_eq!(code, Some(2), "{v}");
    assert_eq!(v["decided_by"], "hello-dev", "{v}");
    assert_eq!(v["runs"][0]["binding"], "wasm", "{v}");
    let (code, v) = check_as_is(&ws, &empty, LS);
    assert_eq!(code, Some(0), "{v}");

    // The scaffold README's global config names the built component by
    // absolute path, and the loader accepts it.
    readme_global_config_decides(tmp.path(), &dir);
}

#[test]
fn dev_leaves_an_existing_workspace_config_alone_and_prints_the_entry() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = new_project("subprocess", tmp.path(), "guard");
    let ws = tmp.path().join("app");
    std::fs::create_dir_all(ws.join(".toolgate")).unwrap();
    // A module the script imports, beside it: it comes along.
    std::fs::write(dir.join("hooks/words.py"), "FORBIDDEN = ['sudo']\n").unwrap();
    std::fs::create_dir(dir.join("hooks/__pycache__")).unwrap();
    std::fs::write(dir.join("hooks/__pycache__/words.cpython-311.pyc"), b"\0").unwrap();
    let mine = r#"{"schema": 1, "hooks": []}"#;
    std::fs::write(ws.join(".toolgate/hooks.json"), mine).unwrap();
    let out = toolgate()
        .args(["dev", "--workspace"])
        .arg(&ws)
        .arg(&dir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        std::fs::read_to_string(ws.join(".toolgate/hooks.json")).unwrap(),
        mine,
        "an existing hooks.json is never edited: {err}"
    );
    assert!(
        ws.join(".toolgate/hooks/guard/guard.py").is_file(),
        "the script is placed: {err}"
    );
    assert!(ws.join(".toolgate/hooks/guard/words.py").is_file(), "{err}");
    assert!(
        !ws.join(".toolgate/hooks/guard/__pycache__").exists(),
        "no bytecode: {err}"
    );
    // The entry to add names the copy, and the author is told about trust.
    assert!(
        err.contains(r#"{"name": "guard", "command": [".toolgate/hooks/guard/guard.py"]"#),
        "{err}"
    );
    assert!(err.contains("toolgate trust --workspace"), "{err}");
    assert!(err.contains("needs no trust"), "{err}");

    // Added as printed, the placed script is what the workspace runs once
    // trusted.
    let line = err
        .lines()
        .find(|l| l.starts_with(r#"{"name": "guard""#))
        .unwrap();
    std::fs::write(
        ws.join(".toolgate/hooks.json"),
        format!(r#"{{"schema": 1, "hooks": [{line}]}}"#),
    )
    .unwrap();
    let (code, v) = check_in(&ws, &tmp.path().join("no-global"), SUDO);
    assert_eq!(code, Some(2), "{v}");
    assert_eq!(v["decided_by"], "guard", "{v}");
}

#[test]
fn dev_writes_nothing_through_a_link_the_workspace_plants() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = new_project("subprocess", tmp.path(), "guard");
    let ws = tmp.path().join("app");
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::create_dir_all(ws.join(".toolgate/hooks")).unwrap();
    std::fs::create_dir(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, ws.join(".toolgate/hooks/guard")).unwrap();
    let out = toolgate()
        .args(["dev", "--workspace"])
        .arg(&ws)
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("is a symbolic link"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);

    // Nor a hooks.json that is a link to a file that is not there yet.
    std::fs::remove_file(ws.join(".toolgate/hooks/guard")).unwrap();
    std::os::unix::fs::symlink(
        elsewhere.join("planted.json"),
        ws.join(".toolgate/hooks.json"),
    )
    .unwrap();
    let out = toolgate()
        .args(["dev", "--workspace"])
        .arg(&ws)
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(!elsewhere.join("planted.json").exists());
}

#[test]
fn dev_refuses_a_folder_that_is_not_a_hook_project() {
    let tmp = tempfile::tempdir().unwrap();
    let out = toolgate().arg("dev").arg(tmp.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a hook project"));
}

/// The bug `toolgate test` exists for: a guard that crashes on its deny
/// path is blocked by fail closed, and a test that only looked at "was the
/// call blocked" reported its deny fixture `ok`. C builds fastest; the
/// crash is a trap right before the deny.
#[test]
fn a_crashing_guard_fails_its_deny_fixture() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = new_project("c", tmp.path(), "crashy");
    let source = dir.join("src/policy.c");
    let text = std::fs::read_to_string(&source).unwrap();
    let deny = "      tg_deny(ans, (tg_str){reason, n + sizeof rest});";
    assert!(text.contains(deny), "the template's deny line moved");
    std::fs::write(
        &source,
        text.replace(
            deny,
            &format!("      __builtin_trap(); /* the bug */\n{deny}"),
        ),
    )
    .unwrap();
    let out = in_guest_cache(dir.join("test.sh"))
        .env("TOOLGATE", env!("CARGO_BIN_EXE_toolgate"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(100),
        "a failed fixture: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("ok   tests/allow-ls.json\n"), "{stdout}");
    assert!(
        stdout.contains(
            "FAIL tests/deny-sudo.json: expected deny, got failed: hook `crashy` failed (trap), \
             which is not a deny"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("test result: FAILED. 1 passed; 1 failed"),
        "{stdout}"
    );
}

/// Builds a `toolgate new --lang <lang>` project with `source` in place of its
/// sample (at `file`), and returns a `check` of a Bash call running `command`
/// through it: the exit code and the hook's run record.
struct FailingGuest {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
}

impl FailingGuest {
    fn build(lang: &str, file: &str, source: &str) -> FailingGuest {
        let tmp = tempfile::tempdir().unwrap();
        let dir = new_project(lang, tmp.path(), "failing");
        std::fs::write(dir.join(file), source).unwrap();
        succeeded(&mut in_guest_cache(dir.join("build.sh")));
        FailingGuest { _tmp: tmp, dir }
    }

    /// The hook's run record for a Bash call running `command`; a failure
    /// blocks the call.
    fn run(&self, command: &str) -> serde_json::Value {
        let request = serde_json::json!({"event": "pre_tool_use", "tool": "Bash",
                                         "input": {"command": command}});
        let (code, v) = check_in(&self.dir, self._tmp.path(), &request.to_string());
        if !v["runs"][0]["failure"].is_null() {
            assert_ne!(code, Some(0), "a failure fails closed: {v}");
            assert_eq!(v["decision"], "deny", "{v}");
        }
        v["runs"][0].clone()
    }

    /// The failure of a call that made the guest fail: its kind and message.
    fn failure(&self, command: &str) -> (String, String) {
        let run = self.run(command);
        let failure = &run["failure"];
        (
            failure["kind"].as_str().unwrap_or_default().to_owned(),
            failure["message"].as_str().unwrap_or_default().to_owned(),
        )
    }
}

#[test]
fn rust_sdk_reports_a_panic_as_a_guest_error_with_its_message() {
    let guest = FailingGuest::build(
        "rust",
        "src/lib.rs",
        r#"use toolgate_hook::{Hook, Request, Verdict};
use toolgate_hook::serde_json::Value;

struct Policy;

impl Hook for Policy {
    fn decide(request: Request) -> Result<Verdict, String> {
        let input: Value = request.input_json()?;
        let words: Vec<&str> = input["command"].as_str().unwrap_or("").split(' ').collect();
        if words[0] == "trap" {
            core::arch::wasm32::unreachable(); // a trap that is not a panic
        }
        if words[0] == "boom" {
            return Ok(Verdict::deny(words[7])); // out of bounds: panics
        }
        Ok(Verdict::allow())
    }
}

toolgate_hook::export!(Policy);
"#,
    );
    // The panic hook changes nothing for a call that does not panic.
    assert_eq!(guest.run("ls -la")["verdict"], "allow");
    let (kind, message) = guest.failure("boom now");
    assert_eq!(kind, "guest_error", "{message}");
    assert!(
        message.contains(
            "hook panicked at src/lib.rs:14:42: index out of bounds: the len is 2 but the index is 7"
        ),
        "{message}"
    );
    // A trap the SDK cannot explain stays a trap, and the scaffold keeps the
    // name section (strip = "debuginfo"), so its backtrace names the function.
    let (kind, message) = guest.failure("trap now");
    assert_eq!(kind, "trap", "{message}");
    assert!(message.contains("failing.wasm!decide"), "{message}");
}

#[test]
fn js_sdk_reports_an_exception_as_a_guest_error_with_its_message_and_where() {
    let guest = FailingGuest::build(
        "js",
        "src/app.js",
        r#"import { hook, allow } from "./toolgate_hook.js";

function firstWord(request) {
  const limits = request.config.limits;
  return limits.max; // the config has no limits: a TypeError
}

export const decide = hook((request) => {
  if (request.input.command.startsWith("boom")) return allow(firstWord(request));
  return allow();
});
"#,
    );
    assert_eq!(guest.run("ls -la")["verdict"], "allow");
    let (kind, message) = guest.failure("boom now");
    assert_eq!(kind, "guest_error", "{message}");
    assert!(message.contains("TypeError: "), "{message}");
    assert!(message.contains("at firstWord (app.js:5:"), "{message}");
}

#[test]
fn python_sdk_reports_an_exception_as_a_guest_error_with_its_traceback() {
    let guest = FailingGuest::build(
        "python",
        "src/app.py",
        r#"from toolgate_hook import Hook, allow


def limit(request):
    return int(request.input["command"].split()[1])


class WitWorld(Hook):
    def check(self, request):
        if request.input["command"].startswith("boom"):
            limit(request)
        return allow()
"#,
    );
    assert_eq!(guest.run("ls -la")["verdict"], "allow");
    let (kind, message) = guest.failure("boom now");
    assert_eq!(kind, "guest_error", "{message}");
    assert!(
        message.contains(
            "Traceback (most recent call last):\n  File \"app.py\", line 11, in check\n  \
             File \"app.py\", line 5, in limit\nValueError: invalid literal for int() with base 10: 'now'"
        ),
        "{message}"
    );
}

#[test]
fn c_sdk_reports_a_failed_assert_as_a_guest_error_and_an_abort_by_function_name() {
    let guest = FailingGuest::build(
        "c",
        "src/policy.c",
        r#"#define TOOLGATE_HOOK_IMPLEMENTATION
#include "toolgate_hook.h"

#include <assert.h>
#include <stdlib.h>

static void check_marker(const tg_request *req) {
  assert(!tg_str_contains(req->input, "boom", 4) && "no booms");
  if (tg_str_contains(req->input, "abort", 5)) abort();
}

void tg_decide(const tg_request *req, tg_verdict *out) {
  check_marker(req);
  if (tg_str_contains(req->input, "fail", 4)) {
    tg_fail("the marker says fail");
  }
  tg_allow(out);
}
"#,
    );
    assert_eq!(guest.run("ls -la")["verdict"], "allow");
    let (kind, message) = guest.failure("boom now");
    assert_eq!(kind, "guest_error", "{message}");
    assert!(
        message.contains(
            "assertion failed: !tg_str_contains(req->input, \"boom\", 4) && \"no booms\" \
             (src/policy.c:8, in check_marker)"
        ),
        "{message}"
    );
    let (kind, message) = guest.failure("fail now");
    assert_eq!(kind, "guest_error", "{message}");
    assert!(message.contains("the marker says fail"), "{message}");
    // A bare abort() says nothing, but the build keeps the name section, so
    // the trap's backtrace names the functions (check_marker is inlined).
    let (kind, message) = guest.failure("abort now");
    assert_eq!(kind, "trap", "{message}");
    assert!(
        message.contains("!abort\n") && message.contains("!tg_decide\n"),
        "{message}"
    );
}
