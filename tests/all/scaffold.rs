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
    assert_eq!(code, Some(3), "a panic fails closed, as a failure: {v}");
    assert_eq!(v["runs"][0]["failure"]["kind"], "guest_error", "{v}");
    let message = v["runs"][0]["failure"]["message"].as_str().unwrap();
    assert!(
        message.contains("hook panicked") && message.contains("nil map"),
        "{message}"
    );
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
