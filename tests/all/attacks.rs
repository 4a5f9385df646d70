//! The attacks that got through the first trust gate (issue 21), tried
//! again through the real binary. Each test is one attack; SECURITY.md
//! names the test that tries each class.
//!
//! "Another user" is uid 65534 (`nobody`): the tests run as root in CI, as
//! the rest of the suite's permission tests do.

use crate::support::{
    Fixture, chown_to_nobody, run_with_stdin, stderr, stdout_json, toolgate, write_executable,
};
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

const PUSH: &str = r#"{"event":"pre_tool_use","tool":"Bash","input":{"command":"git push"}}"#;

/// A python3 hook that answers allow with `context` naming which code
/// answered: proves what ran.
fn says(who: &str) -> String {
    format!(
        "#!/usr/bin/env python3\nimport json, sys\nsys.stdin.read()\n\
         print(json.dumps({{\"decision\": \"deny\", \"reason\": \"{who}\"}}))\n"
    )
}

/// `toolgate check` on a Bash call in `fx`'s workspace (with its global
/// config): exit code and answer.
fn check(fx: &Fixture) -> (Option<i32>, Value) {
    let out = run_with_stdin(
        toolgate()
            .args(["check", "--workspace"])
            .arg(fx.workspace())
            .env("TOOLGATE_CONFIG_DIR", fx.global()),
        PUSH,
    );
    (out.status.code(), stdout_json(&out))
}

fn reason(answer: &Value) -> &str {
    answer["reason"].as_str().unwrap_or_default()
}

/// `toolgate trust --workspace <ws>` without a terminal: it reviews and
/// records nothing.
fn review(fx: &Fixture) -> std::process::Output {
    toolgate()
        .args(["trust", "--workspace"])
        .arg(fx.workspace())
        .env("TOOLGATE_CONFIG_DIR", fx.global())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

/// The review refuses the workspace's one hook, saying `why` and how to
/// write it instead; a call is then denied without running anything.
fn refused_at_review(fx: &Fixture, why: &str) {
    let out = review(fx);
    let text = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("cannot be trusted"), "{text}");
    assert!(text.contains(why), "wanted {why:?} in: {text}");
    let (code, answer) = check(fx);
    assert_eq!(code, Some(3), "{answer}");
    assert!(reason(&answer).contains("is not trusted"), "{answer}");
}

fn hook(argv: Value) -> Value {
    json!([{"name": "guard", "command": argv, "tools": ["Bash"]}])
}

#[test]
fn a_toolgate_folder_another_user_plants_in_a_sticky_shared_folder_configures_nothing() {
    let fx = Fixture::new();
    // A /tmp as it really is: root's, mode 1777.
    let shared = fx.dir.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    // Another user's .toolgate/ there, with a hook that would deny.
    let planted = shared.join(".toolgate");
    std::fs::create_dir(&planted).unwrap();
    std::fs::write(
        planted.join("hooks.json"),
        json!({"schema": 1, "hooks": [
            {"name": "planted", "wasm": "guard.wasm"}
        ]})
        .to_string(),
    )
    .unwrap();
    crate::guests::Guest::answering(crate::guests::Verdict::Deny("planted"))
        .write(&planted, "guard");
    for p in [
        &planted,
        &planted.join("hooks.json"),
        &planted.join("guard.wasm"),
    ] {
        chown_to_nobody(p);
    }
    // The victim's project below it: the walk stops before the shared folder.
    let project = shared.join("victim/src");
    std::fs::create_dir_all(&project).unwrap();
    let out = run_with_stdin(toolgate().arg("check").current_dir(&project), PUSH);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout_json(&out)["decision"], "allow");
    let hooks = toolgate()
        .arg("hooks")
        .current_dir(&project)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&hooks.stdout);
    assert!(
        text.contains("writable by group or others (mode 1777), sticky or not"),
        "{text}"
    );
    // Named outright (--workspace, CLAUDE_PROJECT_DIR), it is refused,
    // naming the owner; the agent's call is blocked, not let through.
    let out = run_with_stdin(toolgate().args(["check", "--workspace"]).arg(&shared), PUSH);
    assert_ne!(out.status.code(), Some(0));
    assert!(
        stderr(&out).contains("another user could configure"),
        "{}",
        stderr(&out)
    );
    let claude = json!({
        "hook_event_name": "PreToolUse", "session_id": "s", "cwd": project,
        "tool_name": "Bash", "tool_input": {"command": "git push"}
    });
    let out = run_with_stdin(
        toolgate()
            .arg("claude-code")
            .env("CLAUDE_PROJECT_DIR", &shared),
        &claude.to_string(),
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    // A component another user owns, named by the user's own config: refused.
    let fx3 = Fixture::new();
    crate::guests::Guest::answering(crate::guests::Verdict::Allow)
        .write(&fx3.workspace().join(".toolgate"), "theirs");
    fx3.workspace_raw(
        r#"{"schema": 1, "hooks": [{"name": "w", "wasm": ".toolgate/theirs.wasm"}]}"#,
    );
    chown_to_nobody(&fx3.workspace().join(".toolgate/theirs.wasm"));
    let out = run_with_stdin(
        toolgate()
            .args(["check", "--workspace"])
            .arg(fx3.workspace()),
        PUSH,
    );
    assert_ne!(out.status.code(), Some(0));
    assert!(
        stderr(&out).contains("theirs.wasm is owned by uid 65534"),
        "{}",
        stderr(&out)
    );
    // A .toolgate/ owned by another user in a private folder: refused, by owner.
    let fx2 = Fixture::new();
    fx2.workspace_hooks(json!([]));
    chown_to_nobody(&fx2.workspace().join(".toolgate"));
    let out = run_with_stdin(
        toolgate()
            .args(["check", "--workspace"])
            .arg(fx2.workspace()),
        PUSH,
    );
    assert_ne!(out.status.code(), Some(0));
    assert!(
        stderr(&out).contains("is owned by uid 65534"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn bytecode_added_after_trust_never_runs() {
    let fx = Fixture::new();
    fx.script("helper.py", "WHO = 'the reviewed helper'\n");
    fx.script(
        "guard.py",
        "import json, sys\nsys.path.insert(0, __import__('os').path.dirname(__file__))\n\
         import helper\nsys.stdin.read()\n\
         print(json.dumps({'decision': 'deny', 'reason': helper.WHO}))\n",
    );
    fx.workspace_hooks(hook(json!(["python3", "hooks/guard.py"])));
    fx.trust();
    assert_eq!(reason(&check(&fx).1), "the reviewed helper");
    // An unchecked-hash .pyc for helper, compiled from other code.
    let evil = fx.dir.path().join("evil.py");
    std::fs::write(&evil, "WHO = 'the bytecode'\n").unwrap();
    let tag = String::from_utf8(
        std::process::Command::new("python3")
            .args(["-c", "import sys; print(sys.implementation.cache_tag)"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let pyc = fx
        .workspace()
        .join(format!("hooks/__pycache__/helper.{}.pyc", tag.trim()));
    let compiled = std::process::Command::new("python3")
        .args([
            "-c",
            "import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], \
             invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)",
        ])
        .arg(&evil)
        .arg(&pyc)
        .status()
        .unwrap();
    assert!(compiled.success());
    assert_eq!(reason(&check(&fx).1), "the reviewed helper");
    // Nor a legacy .pyc beside the source.
    std::fs::copy(&pyc, fx.workspace().join("hooks/helper.pyc")).unwrap();
    assert_eq!(reason(&check(&fx).1), "the reviewed helper");
    // And the review says it leaves bytecode out: no entry for it.
    let out = review(&fx);
    assert!(!String::from_utf8_lossy(&out.stdout).contains(".pyc"));
}

#[test]
fn argv_shapes_toolgate_cannot_read_are_refused_at_review() {
    let cases: &[(Value, &str)] = &[
        (
            json!(["python3", "-m", "hooks.guard"]),
            "option -m runs a module",
        ),
        (
            json!(["python3", "-Im", "hooks.guard"]),
            "option -m runs a module",
        ),
        (
            json!(["python3", "-c", "import guard"]),
            "option -c runs inline code",
        ),
        (
            json!(["env", "-S", "python3 hooks/guard.py"]),
            "not an interpreter toolgate knows",
        ),
        (
            json!(["env", "-u", "VAR", "python3", "hooks/guard.py"]),
            "(a wrapper",
        ),
        (
            json!(["env", "--chdir=hooks", "python3", "guard.py"]),
            "(a wrapper",
        ),
        (
            json!(["timeout", "5", "python3", "hooks/guard.py"]),
            "(a wrapper",
        ),
        (
            json!(["python3", "../tools/guard.py"]),
            "outside the workspace",
        ),
        (
            json!(["python3", "-X", "pycache_prefix=hooks", "hooks/guard.py"]),
            "-X pycache_prefix=hooks is not one",
        ),
        (
            json!(["node", "-r", "./pre.js", "hooks/guard.js"]),
            "option -r preloads a module",
        ),
        (
            json!(["node", "--require=./pre.js", "hooks/guard.js"]),
            "option --require preloads",
        ),
        (
            json!(["bash", "--rcfile", "hooks/rc", "hooks/guard.sh"]),
            "option --rcfile",
        ),
        (
            json!(["python3", "-Q", "new", "hooks/guard.py"]),
            "option -Q",
        ),
        (
            json!(["perl", "-Ihooks", "hooks/guard.pl"]),
            "option -I adds a directory",
        ),
    ];
    for (argv, why) in cases {
        let fx = Fixture::new();
        fx.script("guard.py", &says("guard"));
        std::fs::create_dir_all(fx.dir.path().join("tools")).unwrap();
        std::fs::write(fx.dir.path().join("tools/guard.py"), says("outside")).unwrap();
        fx.workspace_hooks(hook(argv.clone()));
        refused_at_review(&fx, why);
        // And the refusal says how to write the hook instead.
        assert!(stderr(&review(&fx)).contains("name a script inside the workspace directly"));
    }
}

#[test]
fn value_taking_options_never_hide_the_script() {
    // Each of these once pinned the option's value as the script; the
    // script then changed after trust and the new code ran.
    let cases: &[(Value, &str)] = &[
        (
            json!([
                "python3",
                "--check-hash-based-pycs",
                "default",
                "hooks/g.py"
            ]),
            "hooks/g.py",
        ),
        (
            json!(["python3", "-uW", "ignore", "hooks/g.py"]),
            "hooks/g.py",
        ),
        (
            json!(["bash", "-eo", "pipefail", "hooks/g.sh"]),
            "hooks/g.sh",
        ),
    ];
    for (argv, script) in cases {
        let fx = Fixture::new();
        fx.script("g.py", &says("reviewed"));
        fx.script(
            "g.sh",
            "cat >/dev/null\necho '{\"decision\":\"deny\",\"reason\":\"reviewed\"}'\n",
        );
        // Files named like the option values, which must not be taken for the script.
        for decoy in ["default", "ignore", "pipefail"] {
            std::fs::write(fx.workspace().join(decoy), "decoy").unwrap();
        }
        fx.workspace_hooks(hook(argv.clone()));
        fx.trust();
        assert_eq!(reason(&check(&fx).1), "reviewed", "{argv}");
        let path = fx.workspace().join(script);
        let evil = std::fs::read_to_string(&path)
            .unwrap()
            .replace("reviewed", "EVIL");
        std::fs::write(&path, evil).unwrap();
        let (code, answer) = check(&fx);
        assert_eq!(code, Some(3), "{argv}: {answer}");
        assert!(
            reason(&answer).contains(&format!("{script} changed since it was trusted")),
            "{argv}: {answer}"
        );
    }
}

#[test]
fn an_interpreter_inside_the_workspace_is_refused() {
    let fx = Fixture::new();
    fx.script("guard.py", &says("guard"));
    // A virtualenv's interpreter: a link to the system python3 inside the workspace.
    let venv = fx.workspace().join(".venv/bin");
    std::fs::create_dir_all(&venv).unwrap();
    let python = String::from_utf8(
        std::process::Command::new("python3")
            .args(["-c", "import sys; print(sys.executable)"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    std::os::unix::fs::symlink(python.trim(), venv.join("python3")).unwrap();
    fx.workspace_hooks(hook(json!([".venv/bin/python3", "hooks/guard.py"])));
    // The loader refuses it before the review: a workspace's program must
    // resolve inside the workspace.
    let out = review(&fx);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("outside the workspace"),
        "{}",
        stderr(&out)
    );
    let out = run_with_stdin(
        toolgate()
            .args(["check", "--workspace"])
            .arg(fx.workspace()),
        PUSH,
    );
    assert_ne!(out.status.code(), Some(0));
    // A copy (`venv --copies`) is an interpreter inside the workspace.
    std::fs::remove_file(venv.join("python3")).unwrap();
    std::fs::copy(python.trim(), venv.join("python3")).unwrap();
    refused_at_review(&fx, "is an interpreter inside the workspace");
    // A shebang naming an interpreter inside the workspace.
    let fx = Fixture::new();
    fx.script("interp", "#!/bin/sh\nexec python3 \"$@\"\n");
    fx.script("guard", "#!hooks/interp\nprint('x')\n");
    fx.workspace_hooks(hook(json!(["hooks/guard"])));
    refused_at_review(&fx, "does not name an absolute interpreter");
    fx.script(
        "guard",
        &format!(
            "#!{}/hooks/interp\nprint('x')\n",
            fx.workspace().canonicalize().unwrap().display()
        ),
    );
    refused_at_review(&fx, "names an interpreter inside the workspace");
}

#[test]
fn a_workspace_search_path_entry_never_chooses_the_interpreter() {
    let fx = Fixture::new();
    fx.script("guard", &says("the system python3"));
    fx.workspace_hooks(hook(json!(["hooks/guard"])));
    // A python3 of the workspace's, first on PATH, and an empty entry
    // (which exec reads as the working directory: the workspace root).
    let fake = "#!/bin/sh\necho '{\"decision\":\"deny\",\"reason\":\"the workspace python3\"}'\n";
    std::fs::create_dir_all(fx.workspace().join("bin")).unwrap();
    write_executable(&fx.workspace().join("bin/python3"), fake);
    write_executable(&fx.workspace().join("python3"), fake);
    let path = format!(
        "{}::{}",
        fx.workspace().join("bin").display(),
        std::env::var("PATH").unwrap()
    );
    let trust = |extra: &[&str]| {
        toolgate()
            .args(["trust", "--workspace"])
            .arg(fx.workspace())
            .args(extra)
            .env("PATH", &path)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    };
    let out = trust(&[]);
    let digest = String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("digest: ").map(str::to_owned))
        .unwrap_or_else(|| panic!("{}", stderr(&out)));
    assert!(
        !String::from_utf8_lossy(&out.stdout)
            .contains(&fx.workspace().join("bin").display().to_string()),
        "the review pinned the workspace's python3"
    );
    assert!(trust(&["--yes", &digest]).status.success());
    let out = run_with_stdin(
        toolgate()
            .args(["check", "--workspace"])
            .arg(fx.workspace())
            .env("PATH", &path),
        PUSH,
    );
    assert_eq!(reason(&stdout_json(&out)), "the system python3");
}

#[test]
fn the_review_shows_every_file_in_the_folder_the_code_runs_from() {
    // A sibling module shadowing the standard library is pinned and shown.
    let fx = Fixture::new();
    fx.script(
        "guard.py",
        "import json, sys\nsys.stdin.read()\nprint(json.dumps({'decision': 'deny', 'reason': 'guard'}))\n",
    );
    fx.script("json.py", "raise SystemExit('shadowed')\n");
    fx.workspace_hooks(hook(json!(["python3", "hooks/guard.py"])));
    let out = review(&fx);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("tree      \"hooks/json.py\""), "{text}");
    // A folder past the bound is refused, saying so.
    let fx = Fixture::new();
    fx.script("guard.py", &says("guard"));
    for i in 0..=toolgate::trust::MAX_TREE_FILES {
        std::fs::write(fx.workspace().join(format!("hooks/f{i}")), "").unwrap();
    }
    fx.workspace_hooks(hook(json!(["python3", "hooks/guard.py"])));
    let out = review(&fx);
    assert!(
        stderr(&out).contains("give the hook a folder of its own"),
        "{}",
        stderr(&out)
    );
    // Past the byte bound (a sparse file: its size is what counts).
    let fx = Fixture::new();
    fx.script("guard.py", &says("guard"));
    std::fs::File::create(fx.workspace().join("hooks/big"))
        .unwrap()
        .set_len(toolgate::trust::MAX_TREE_BYTES + 1)
        .unwrap();
    fx.workspace_hooks(hook(json!(["python3", "hooks/guard.py"])));
    refused_at_review(&fx, "give the hook's code a folder of its own");
    // A special file in the tree: refused, never opened.
    let fx = Fixture::new();
    fx.script("guard.py", &says("guard"));
    nix::unistd::mkfifo(
        &fx.workspace().join("hooks/pipe"),
        nix::sys::stat::Mode::from_bits_truncate(0o600),
    )
    .unwrap();
    fx.workspace_hooks(hook(json!(["python3", "hooks/guard.py"])));
    refused_at_review(&fx, "hooks/pipe is not a regular file");
    // Code at the workspace root would pin the whole workspace: refused.
    let fx = Fixture::new();
    std::fs::write(fx.workspace().join("guard.py"), says("guard")).unwrap();
    fx.workspace_hooks(hook(json!(["python3", "guard.py"])));
    refused_at_review(&fx, "sits at the workspace root");
}

/// A rename loop swapping the script between the reviewed and another
/// version while calls run: no call ever runs the other version. (Against
/// the first gate, 9–18 of 40 calls ran it.)
#[test]
fn a_script_swapped_during_calls_never_runs() {
    let fx = Fixture::new();
    fx.script("g.py", &says("reviewed"));
    fx.workspace_hooks(hook(json!(["python3", "hooks/g.py"])));
    fx.trust();
    let target = fx.workspace().join("hooks/g.py");
    // Both versions are prepared outside the pinned folder and renamed in.
    let stage = fx.dir.path().join("stage");
    std::fs::create_dir_all(&stage).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                for who in ["EVIL", "reviewed"] {
                    let staged = stage.join(who);
                    // Same mode as the reviewed file: only the bytes differ.
                    crate::support::write_executable(&staged, &says(who));
                    let _ = std::fs::rename(&staged, &target);
                    // A swap every millisecond or so: far inside a call's
                    // window, without holding a core the other tests need.
                    std::thread::sleep(std::time::Duration::from_micros(500));
                }
            }
        })
    };
    let answers: Vec<String> = (0..20).map(|_| reason(&check(&fx).1).to_owned()).collect();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    swapper.join().unwrap();
    // Every call ran the reviewed code or was refused: as changed since it
    // was trusted, or as changed while its private copy was made.
    for answer in &answers {
        assert!(
            answer == "reviewed"
                || answer.contains("is not trusted")
                || answer.contains("changed while it was copied"),
            "the swapped-in script ran: {answers:?}"
        );
    }
}

/// What runs is the copy: the hook's own `__file__` is in the snapshot
/// under the user's state directory, its working directory the workspace.
#[test]
fn a_trusted_hook_runs_from_its_snapshot_with_the_workspace_as_its_cwd() {
    let fx = Fixture::new();
    fx.script(
        "where.py",
        "import json, os, sys\nsys.stdin.read()\n\
         print(json.dumps({'decision': 'deny', 'reason': os.path.realpath(__file__) + ' ' + os.getcwd()}))\n",
    );
    fx.workspace_hooks(hook(json!(["python3", "hooks/where.py"])));
    fx.trust();
    let (_, answer) = check(&fx);
    let (file, cwd) = reason(&answer).split_once(' ').expect("two paths");
    let snapshots = crate::support::state_home()
        .join("toolgate/trust/snapshots")
        .canonicalize()
        .unwrap();
    assert!(Path::new(file).starts_with(&snapshots), "{file}");
    assert!(file.ends_with("/hooks/where.py"), "{file}");
    assert_eq!(Path::new(cwd), fx.workspace().canonicalize().unwrap());
    // The copy is read-only.
    let mode = std::fs::metadata(file).unwrap().permissions().mode();
    assert_eq!(mode & 0o222, 0, "{mode:o}");
}

/// A trusted workspace hook, confined: it cannot connect to 127.0.0.1, write
/// into the workspace or `$HOME`, or signal another process, and still does
/// its job (it answers, and may write its scratch folder).
#[test]
fn a_trusted_workspace_hook_cannot_reach_out() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let mut victim = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let home = tempfile::tempdir().unwrap();
    // An abstract UNIX socket outside the hook (the agent's, say).
    let abstract_name = format!("toolgate-test-{}", std::process::id());
    let abstract_listener = {
        use std::os::linux::net::SocketAddrExt;
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(&abstract_name).unwrap();
        std::os::unix::net::UnixListener::bind_addr(&addr).unwrap()
    };
    let fx = Fixture::new();
    fx.script(
        "probe.py",
        &format!(
            r#"import json, os, signal, socket, sys, tempfile
sys.stdin.read()
def attempt(f):
    try:
        f()
        return "DONE"
    except OSError as e:
        return type(e).__name__
def connect():
    socket.create_connection(("127.0.0.1", {port}), timeout=2).close()
def udp():
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("127.0.0.1", {port}))
def abstract():
    socket.socket(socket.AF_UNIX).connect("\0{abstract_name}")
def uring():
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    params = ctypes.create_string_buffer(120)
    if libc.syscall(425, 8, params) < 0:
        raise OSError(ctypes.get_errno(), "io_uring_setup")
def write(path):
    return lambda: open(path, "w").write("x")
results = [
    "connect:" + attempt(connect),
    "udp:" + attempt(udp),
    "abstract:" + attempt(abstract),
    "uring:" + attempt(uring),
    "devnull:" + attempt(write("/dev/null")),
    "workspace:" + attempt(write(os.path.join(os.getcwd(), "planted"))),
    "home:" + attempt(write(os.path.join({home:?}, "planted"))),
    "signal:" + attempt(lambda: os.kill({pid}, signal.SIGTERM)),
    "scratch:" + attempt(write(os.path.join(tempfile.gettempdir(), "mine"))),
]
print(json.dumps({{"decision": "deny", "reason": " ".join(results)}}))
"#,
            pid = victim.id(),
            abstract_name = abstract_name,
            home = home.path().display().to_string(),
        ),
    );
    fx.workspace_hooks(hook(json!(["python3", "hooks/probe.py"])));
    fx.trust();
    let out = run_with_stdin(
        toolgate()
            .args(["check", "--workspace"])
            .arg(fx.workspace())
            .env("TOOLGATE_CONFIG_DIR", fx.global())
            .env("HOME", home.path()),
        PUSH,
    );
    let answer = stdout_json(&out);
    assert_eq!(
        reason(&answer),
        "connect:PermissionError udp:PermissionError abstract:PermissionError \
         uring:PermissionError devnull:DONE workspace:PermissionError \
         home:PermissionError signal:PermissionError scratch:DONE",
        "{answer}"
    );
    assert!(
        victim.try_wait().unwrap().is_none(),
        "the hook killed another process"
    );
    let _ = victim.kill();
    let _ = victim.wait();
    assert!(!fx.workspace().join("planted").exists());
    assert!(!home.path().join("planted").exists());
    // The operator may relax one hook in the global config; then it can.
    fx.unconfine("guard");
    let out = run_with_stdin(
        toolgate()
            .args(["check", "--workspace"])
            .arg(fx.workspace())
            .env("TOOLGATE_CONFIG_DIR", fx.global())
            .env("HOME", home.path()),
        PUSH,
    );
    assert!(
        reason(&stdout_json(&out)).starts_with("connect:DONE udp:DONE abstract:DONE"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let _ = std::fs::remove_file(fx.workspace().join("planted"));
    drop(listener);
    drop(abstract_listener);
}

#[test]
fn a_workspace_cannot_relax_its_own_confinement() {
    for (field, value) in [
        ("require_confinement", json!(false)),
        (
            "unconfined_workspace_hooks",
            json!([{"workspace": "/", "hook": "guard"}]),
        ),
    ] {
        let fx = Fixture::new();
        fx.script("g.py", &says("guard"));
        let mut config = json!({"schema": 1, "hooks": hook(json!(["python3", "hooks/g.py"]))});
        config[field] = value;
        fx.workspace_raw(&config.to_string());
        let out = toolgate()
            .args(["hooks", "--check", "--workspace"])
            .arg(fx.workspace())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        assert!(
            stderr(&out).contains(field)
                && stderr(&out).contains("only the operator's global config"),
            "{}",
            stderr(&out)
        );
    }
    let fx = Fixture::new();
    fx.script("g.py", &says("guard"));
    fx.workspace_hooks(
        json!([{"name": "guard", "command": ["python3", "hooks/g.py"], "confine": false}]),
    );
    let out = toolgate()
        .args(["hooks", "--check", "--workspace"])
        .arg(fx.workspace())
        .output()
        .unwrap();
    assert!(
        stderr(&out).contains("only the operator's global config sets `confine`"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_environment_loads_no_other_code() {
    let fx = Fixture::new();
    fx.script(
        "env.py",
        "import json, os, sys\nsys.stdin.read()\n\
         names = ['PYTHONPATH', 'PYTHONSTARTUP', 'NODE_OPTIONS', 'BASH_ENV', 'ENV', 'PERL5OPT', 'RUBYOPT', 'LD_PRELOAD']\n\
         seen = [n for n in names if n in os.environ]\n\
         path = os.environ.get('PATH', '')\n\
         bad = [p for p in path.split(':') if not p.startswith('/')]\n\
         print(json.dumps({'decision': 'deny', 'reason': 'set:%s relative:%s bytecode:%s' % (seen, bad, os.environ.get('PYTHONDONTWRITEBYTECODE'))}))\n",
    );
    fx.workspace_hooks(hook(json!(["python3", "hooks/env.py"])));
    fx.trust();
    let mut cmd = toolgate();
    cmd.args(["check", "--workspace"]).arg(fx.workspace());
    for name in [
        "PYTHONPATH",
        "PYTHONSTARTUP",
        "NODE_OPTIONS",
        "BASH_ENV",
        "ENV",
        "PERL5OPT",
        "RUBYOPT",
    ] {
        cmd.env(name, fx.workspace());
    }
    cmd.env("PATH", format!(":.:{}", std::env::var("PATH").unwrap()));
    let answer = stdout_json(&run_with_stdin(&mut cmd, PUSH));
    assert_eq!(reason(&answer), "set:[] relative:[] bytecode:1", "{answer}");
}

/// Where the kernel has no Landlock (simulated: debug builds take
/// `TOOLGATE_DEBUG_FAULT=no-landlock`), `toolgate hooks` and each run record
/// say the hook ran unconfined; `require_confinement` makes its calls deny,
/// whatever the hook's own `on_failure`.
#[cfg(debug_assertions)]
#[test]
fn without_landlock_each_run_record_says_so_and_require_confinement_denies() {
    let fx = Fixture::new();
    fx.script("g.py", &says("ran"));
    fx.workspace_hooks(json!([
        {"name": "guard", "command": ["python3", "hooks/g.py"], "on_failure": "allow"}
    ]));
    fx.trust();
    let run = |extra: &[(&str, &str)]| {
        let mut cmd = toolgate();
        cmd.args(["check", "--workspace"])
            .arg(fx.workspace())
            .env("TOOLGATE_CONFIG_DIR", fx.global())
            .env("TOOLGATE_DEBUG_FAULT", "no-landlock");
        for (k, v) in extra {
            cmd.env(k, v);
        }
        stdout_json(&run_with_stdin(&mut cmd, PUSH))
    };
    let answer = run(&[]);
    assert_eq!(reason(&answer), "ran", "{answer}");
    let warning = answer["runs"][0]["warning"].as_str().unwrap_or_default();
    assert!(
        warning.starts_with("not confined: Landlock switched off"),
        "{answer}"
    );
    let hooks = toolgate()
        .args(["hooks", "--workspace"])
        .arg(fx.workspace())
        .env("TOOLGATE_CONFIG_DIR", fx.global())
        .env("TOOLGATE_DEBUG_FAULT", "no-landlock")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&hooks.stdout);
    assert!(text.contains("confinement: NOT AVAILABLE"), "{text}");
    // The operator requires confinement: the hook does not run, the call is denied.
    let mut global = json!({"schema": 1, "hooks": [], "require_confinement": true});
    global["hooks"] = json!([]);
    std::fs::write(fx.global().join("hooks.json"), global.to_string()).unwrap();
    let answer = run(&[]);
    assert_eq!(answer["decision"], "deny", "{answer}");
    assert!(
        reason(&answer).contains("cannot run confined here")
            && reason(&answer).contains("require_confinement"),
        "{answer}"
    );
}

/// `"confine": true` on a global hook (the operator's choice) confines it
/// like a workspace hook; without it a global hook is not confined.
#[test]
fn a_global_hook_is_confined_only_when_its_config_asks() {
    let fx = Fixture::new();
    let target = fx.dir.path().join("written-by-global-hook");
    let script = fx.global_script(
        "g.py",
        &format!(
            "#!/usr/bin/env python3\nimport json, sys\nsys.stdin.read()\n\
             try:\n    open({:?}, 'w').write('x'); r = 'wrote'\n\
             except OSError as e:\n    r = type(e).__name__\n\
             print(json.dumps({{'decision': 'deny', 'reason': r}}))\n",
            target.display().to_string()
        ),
    );
    for (confine, want) in [(false, "wrote"), (true, "PermissionError")] {
        let _ = std::fs::remove_file(&target);
        fx.global_hooks(json!([{"name": "g", "command": [&script], "confine": confine}]));
        assert_eq!(reason(&check(&fx).1), want, "confine: {confine}");
    }
}

/// A record written by the first gate (record schema 1, which pinned a guess
/// of the script) trusts nothing: the user reviews again.
#[test]
fn a_record_from_before_closed_world_review_trusts_nothing() {
    let fx = Fixture::new();
    fx.script("g.py", &says("reviewed"));
    fx.workspace_hooks(hook(json!(["python3", "hooks/g.py"])));
    let state = tempfile::tempdir().unwrap();
    let trust = |extra: &[&str]| {
        toolgate()
            .env("XDG_STATE_HOME", state.path())
            .args(["trust", "--workspace"])
            .arg(fx.workspace())
            .args(extra)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    };
    let digest = String::from_utf8_lossy(&trust(&[]).stdout)
        .lines()
        .find_map(|l| l.strip_prefix("digest: ").map(str::to_owned))
        .expect("a digest");
    assert!(trust(&["--yes", &digest]).status.success());
    let store = state.path().join("toolgate/trust");
    let record = std::fs::read_dir(&store)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .expect("a record");
    let mut value: Value = serde_json::from_slice(&std::fs::read(&record).unwrap()).unwrap();
    value["schema"] = json!(1);
    std::fs::write(&record, value.to_string()).unwrap();
    let out = run_with_stdin(
        toolgate()
            .env("XDG_STATE_HOME", state.path())
            .args(["check", "--workspace"])
            .arg(fx.workspace()),
        PUSH,
    );
    let answer = stdout_json(&out);
    assert_eq!(out.status.code(), Some(3), "{answer}");
    assert!(
        reason(&answer).contains("record schema 1 (this build reads 2)"),
        "{answer}"
    );
}
