//! `toolgate new`: every language's scaffold builds with its own build.sh and
//! passes its own sample tests through the real binary, with no edits.
//!
//! The toolchains come from the same shared cache the guest examples use
//! (guest-examples/.cache, filled by `guest-examples/build-all`); on a machine
//! without it the scaffold's build.sh installs them, so these tests build for
//! real either way and never skip.

use crate::support::*;
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
        assert!(stdout.contains(&format!("ok    {case}")), "{stdout}");
    }
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
        Some(2),
        "clap rejects an unknown language"
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("possible values: rust, go, js, python, c")
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
    assert_eq!(code, Some(2), "a panic fails closed: {v}");
    assert_eq!(v["runs"][0]["failure"]["kind"], "guest_error", "{v}");
    let message = v["runs"][0]["failure"]["message"].as_str().unwrap();
    assert!(
        message.contains("hook panicked") && message.contains("nil map"),
        "{message}"
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
