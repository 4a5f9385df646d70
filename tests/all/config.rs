//! hooks.json: every rejection names the file, the hook's index and name,
//! and the field; nothing is coerced toward the permissive branch.

use crate::support::*;
use serde_json::json;
use toolgate::config::Problem;
use toolgate::{BindingSpec, CommandSpec};
use toolgate::{Config, Event, OnFailure, Source};

/// Loads the workspace config written as `text` and returns its one problem.
fn only_problem(text: &str) -> (Problem, String) {
    let fx = Fixture::new();
    fx.script("hook.sh", "#!/bin/sh\necho '{\"decision\":\"allow\"}'\n");
    let path = fx.workspace_raw(text);
    let err = Config::load(None, Some(&fx.workspace())).expect_err("config must be rejected");
    assert_eq!(err.problems.len(), 1, "{err}");
    let problem = err.problems[0].clone();
    assert_eq!(problem.file, path, "the error names the file");
    let display = err.to_string();
    assert!(display.contains(&path.display().to_string()), "{display}");
    (problem, display)
}

fn hook_problem(hook: serde_json::Value) -> (Problem, String) {
    let text =
        json!({"schema": 1, "hooks": [{"name": "ok", "command": ["./hooks/hook.sh"]}, hook]})
            .to_string();
    let (problem, display) = only_problem(&text);
    assert_eq!(
        problem.index,
        Some(1),
        "the error names the hook's index: {display}"
    );
    (problem, display)
}

fn assert_names(hook: serde_json::Value, field: &str, says: &str) {
    let (problem, display) = hook_problem(hook);
    assert_eq!(
        problem.name.as_deref(),
        Some("bad"),
        "the error names the hook: {display}"
    );
    assert_eq!(
        problem.field.as_deref(),
        Some(field),
        "the error names the field: {display}"
    );
    assert!(display.contains("hooks[1] (\"bad\")"), "{display}");
    assert!(display.contains(&format!("field `{field}`")), "{display}");
    assert!(display.contains(says), "expected {says:?} in {display}");
}

#[test]
fn unknown_field_is_rejected_with_a_suggestion() {
    assert_names(
        json!({"name": "bad", "command": ["./hooks/hook.sh"], "on_faliure": "allow"}),
        "on_faliure",
        "did you mean `on_failure`",
    );
}

#[test]
fn unknown_top_level_field_is_rejected() {
    let (problem, display) = only_problem(r#"{"schema": 1, "hook": []}"#);
    assert_eq!(problem.field.as_deref(), Some("hook"), "{display}");
    assert!(display.contains("did you mean `hooks`"), "{display}");
}

#[test]
fn unknown_event_is_rejected() {
    assert_names(
        json!({"name": "bad", "command": ["./hooks/hook.sh"], "event": "PreToolUse"}),
        "event",
        "unknown event \"PreToolUse\"",
    );
}

#[test]
fn unknown_on_failure_is_rejected_not_defaulted() {
    assert_names(
        json!({"name": "bad", "command": ["./hooks/hook.sh"], "on_failure": "ignore"}),
        "on_failure",
        "unknown policy",
    );
    assert_names(
        json!({"name": "bad", "command": ["./hooks/hook.sh"], "on_failure": true}),
        "on_failure",
        "unknown policy",
    );
}

#[test]
fn bad_regex_is_rejected_at_load() {
    assert_names(
        json!({"name": "bad", "command": ["./hooks/hook.sh"], "matcher": "Edit|(Write"}),
        "matcher",
        "not a valid regex",
    );
}

#[test]
fn out_of_range_timeout_is_rejected_and_the_bounds_are_said() {
    for t in [json!(0), json!(600_001), json!(-5), json!(1.5)] {
        assert_names(
            json!({"name": "bad", "command": ["./hooks/hook.sh"], "timeout_ms": t}),
            "timeout_ms",
            "1..=600000 ms",
        );
    }
    assert_names(
        json!({"name": "bad", "command": ["./hooks/hook.sh"], "timeout_ms": "5s"}),
        "timeout_ms",
        "got a string",
    );
}

#[test]
fn empty_argv_is_rejected() {
    assert_names(
        json!({"name": "bad", "command": []}),
        "command",
        "empty argv",
    );
    assert_names(
        json!({"name": "bad", "command": [""]}),
        "command",
        "empty string",
    );
}

#[test]
/// The explicit form is shown, without repeating the string: an error
/// never quotes the file (`props::hooks_json_errors_never_quote_the_file`;
/// a command line may carry a secret).
fn a_shell_string_command_is_rejected_with_the_explicit_form() {
    assert_names(
        json!({"name": "bad", "command": "./hooks/hook.sh --x"}),
        "command",
        "[\"sh\", \"-c\", \"<the command>\"]",
    );
    let (_, display) = hook_problem(json!({"name": "bad", "command": "./hooks/hook.sh --x"}));
    assert!(!display.contains("hook.sh --x"), "{display}");
}

#[test]
fn a_missing_command_program_path_is_rejected() {
    assert_names(
        json!({"name": "bad", "command": ["./nope.sh"]}),
        "command",
        "not found",
    );
}

/// A script handed to an interpreter toolgate knows is checked at load, as
/// a program path is: `["python3", "hooks/gaurd.py"]` (a typo) is a load
/// error, not a failure at every call. The script is the word trust's own
/// reading takes for it, after the interpreter's options.
#[test]
fn a_missing_interpreter_script_is_rejected_at_load() {
    for argv in [
        json!(["python3", "hooks/gaurd.py"]),
        json!(["python3", "-u", "hooks/gaurd.py"]),
        json!(["/usr/bin/python3", "hooks/gaurd.py"]),
        json!(["sh", "hooks/gaurd.sh", "--flag"]),
        json!(["bash", "-eo", "pipefail", "hooks/gaurd.sh"]),
        json!(["node", "hooks/gaurd.js"]),
        json!(["perl", "hooks/gaurd.pl"]),
    ] {
        let (problem, display) = hook_problem(json!({"name": "bad", "command": argv}));
        assert_eq!(problem.name.as_deref(), Some("bad"), "{display}");
        assert_eq!(problem.field.as_deref(), Some("command"), "{display}");
        let at = argv.as_array().unwrap().len() - 1 - usize::from(argv[2] == "--flag");
        assert!(
            display.contains(&format!(
                "element {at}, the script the interpreter runs, does not exist"
            )),
            "{argv}: {display}"
        );
    }
}

/// Only a script toolgate can tell is the script is checked: inline code,
/// a module, stdin, an option it does not read, or a program it does not
/// know load as before (trust, or the call, says what is wrong with them).
#[test]
fn an_argv_without_a_script_toolgate_can_tell_is_not_checked_at_load() {
    let fx = Fixture::new();
    fx.script("guard.py", "");
    fx.workspace_hooks(json!([
        {"name": "here", "command": ["python3", "hooks/guard.py"]},
        {"name": "inline", "command": ["sh", "-c", "exit 0"]},
        {"name": "module", "command": ["python3", "-m", "hooks.missing"]},
        {"name": "stdin", "command": ["python3", "-"]},
        {"name": "unread-option", "command": ["python3", "-Q", "new", "hooks/missing.py"]},
        {"name": "other-program", "command": ["ruby", "hooks/missing.rb"]},
    ]));
    let config = Config::load(None, Some(&fx.workspace())).expect("loads");
    assert_eq!(config.hooks().len(), 6);
}

/// A global hook's script resolves where it runs: against the global config
/// directory.
#[test]
fn a_global_interpreter_script_resolves_against_the_global_config_dir() {
    let fx = Fixture::new();
    fx.global_script("g.py", "");
    fx.global_hooks(json!([{"name": "g", "command": ["python3", "g.py"]}]));
    Config::load(Some(&fx.global()), None).expect("the script is there");
    fx.global_hooks(json!([{"name": "g", "command": ["python3", "gg.py"]}]));
    let err = Config::load(Some(&fx.global()), None).unwrap_err();
    assert_eq!(err.problems.len(), 1, "{err}");
    assert!(
        err.to_string().contains(&format!(
            "looked for {}",
            fx.global().join("gg.py").display()
        )),
        "{err}"
    );
}

/// `toolgate hooks --check` reports a missing script with the file's other
/// problems, each naming file, hook and field.
#[test]
fn hooks_check_reports_a_missing_script_with_the_other_problems() {
    let fx = Fixture::new();
    fx.workspace_hooks(json!([
        {"name": "typo", "command": ["python3", "hooks/gaurd.py"]},
        {"name": "gone", "command": ["./hooks/x.sh"], "timeout_ms": 0},
    ]));
    let out = toolgate()
        .args(["hooks", "--check", "--workspace"])
        .arg(fx.workspace())
        .env("TOOLGATE_CONFIG_DIR", fx.global())
        .output()
        .unwrap();
    let text = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let looked_for = fx.workspace().join("hooks/gaurd.py");
    let typo = format!(
        "hooks[0] (\"typo\"): field `command`: element 1, the script the interpreter runs, \
         does not exist: looked for {}",
        looked_for.display()
    );
    for line in [
        typo.as_str(),
        "hooks[1] (\"gone\"): field `timeout_ms`",
        "hooks[1] (\"gone\"): field `command`: program \"./hooks/x.sh\" not found",
    ] {
        assert!(text.contains(line), "wanted {line:?} in:\n{text}");
    }
}

#[test]
fn empty_tools_list_is_rejected() {
    assert_names(
        json!({"name": "bad", "command": ["./hooks/hook.sh"], "tools": []}),
        "tools",
        "match no tool",
    );
}

#[test]
fn missing_or_duplicate_name_is_rejected() {
    let (problem, display) = hook_problem(json!({"command": ["./hooks/hook.sh"]}));
    assert_eq!(problem.field.as_deref(), Some("name"), "{display}");
    let (problem, display) = hook_problem(json!({"name": "ok", "command": ["./hooks/hook.sh"]}));
    assert_eq!(problem.field.as_deref(), Some("name"), "{display}");
    assert!(display.contains("same name"), "{display}");
}

#[test]
fn unsupported_or_missing_schema_is_rejected() {
    let (problem, display) = only_problem(r#"{"schema": 2, "hooks": []}"#);
    assert_eq!(problem.field.as_deref(), Some("schema"));
    assert!(display.contains("unsupported schema 2"), "{display}");
    let (problem, _) = only_problem(r#"{"hooks": []}"#);
    assert_eq!(problem.field.as_deref(), Some("schema"));
}

#[test]
fn invalid_json_names_the_file_and_the_position() {
    let (problem, display) = only_problem("{\"schema\": 1,\n \"hooks\": [,]}");
    assert!(problem.message.contains("line 2"), "{display}");
}

#[test]
fn every_problem_in_a_file_is_reported_at_once() {
    let fx = Fixture::new();
    fx.workspace_raw(
        &json!({"schema": 1, "hooks": [
            {"name": "a", "command": ["x"], "event": "nope"},
            {"name": "b", "command": ["x"], "timeout_ms": 0, "matcher": "("},
        ]})
        .to_string(),
    );
    let err = Config::load(None, Some(&fx.workspace())).unwrap_err();
    let fields: Vec<_> = err
        .problems
        .iter()
        .map(|p| (p.index, p.field.clone().unwrap()))
        .collect();
    assert_eq!(
        fields,
        [
            (Some(0), "event".into()),
            (Some(1), "matcher".into()),
            (Some(1), "timeout_ms".into())
        ]
    );
}

#[test]
fn problems_in_global_and_workspace_are_reported_together() {
    let fx = Fixture::new();
    fx.global_hooks(json!([{"name": "g", "command": ["x"], "event": 3}]));
    fx.workspace_hooks(json!([{"name": "w", "command": ["x"], "on_failure": "open"}]));
    let err = Config::load(Some(&fx.global()), Some(&fx.workspace())).unwrap_err();
    assert_eq!(err.problems.len(), 2, "{err}");
    assert!(err.problems[0].file.starts_with(fx.global()));
    assert!(err.problems[1].file.starts_with(fx.workspace()));
}

#[test]
fn a_valid_hook_gets_the_documented_defaults() {
    let fx = Fixture::new();
    fx.script("hook.sh", "#!/bin/sh\n");
    fx.workspace_hooks(
        json!([{"name": "h", "command": ["./hooks/hook.sh", "--flag"], "config": {"k": [1]}}]),
    );
    let config = Config::load(None, Some(&fx.workspace())).unwrap();
    let hook = &config.hooks()[0];
    assert_eq!(hook.events, [Event::PreToolUse]);
    assert_eq!(hook.timeout_ms, toolgate::limits::DEFAULT_TIMEOUT_MS);
    assert_eq!(hook.on_failure, OnFailure::Deny);
    assert_eq!(hook.source, Source::Workspace);
    assert_eq!(hook.config, Some(json!({"k": [1]})));
    let BindingSpec::Subprocess(CommandSpec {
        program,
        cwd,
        command,
        ..
    }) = &hook.binding
    else {
        panic!()
    };
    assert_eq!(program, &fx.workspace().join("./hooks/hook.sh"));
    assert_eq!(cwd, &fx.workspace());
    assert_eq!(command, &["./hooks/hook.sh", "--flag"]);
}

#[test]
fn missing_config_files_mean_no_hooks() {
    let dir = tempfile::tempdir().unwrap();
    let config = Config::load(Some(&dir.path().join("nowhere")), Some(dir.path())).unwrap();
    assert!(config.hooks().is_empty());
    assert!(config.files().iter().all(|f| !f.found));
}

#[test]
fn global_programs_resolve_against_the_global_config_dir() {
    let fx = Fixture::new();
    let script = fx.global_script("g.sh", "#!/bin/sh\n");
    fx.global_hooks(json!([{"name": "g", "command": [script]}]));
    let config = Config::load(Some(&fx.global()), None).unwrap();
    let BindingSpec::Subprocess(CommandSpec { program, cwd, .. }) = &config.hooks()[0].binding
    else {
        panic!()
    };
    assert!(program.starts_with(fx.global()));
    assert_eq!(cwd, &fx.global());
}

#[tokio::test]
async fn hooks_built_in_code_are_validated_and_run_like_a_files() {
    use toolgate::config::HookDef;
    use toolgate::wasm::WasmOptions;
    let fx = Fixture::new();
    let deny = fx.script(
        "deny.sh",
        &answer_script(&json!({"decision": "deny", "reason": "built in code"})),
    );
    let config = Config::from_hooks(
        [HookDef::command("guard", [deny.as_str()])
            .tools(["shell"])
            .timeout_ms(5000)],
        &fx.workspace(),
        &WasmOptions::new(),
    )
    .unwrap();
    assert_eq!(config.hooks()[0].source, Source::Host);
    let outcome = toolgate::HookRunner::builder()
        .config(config)
        .build()
        .pre_tool_use(&toolgate::Request::pre("shell", json!({})))
        .await;
    assert_eq!(
        outcome.decision,
        toolgate::Decision::Deny {
            reason: "built in code".into()
        }
    );

    // The same rules as a file: every problem, named by hook and field.
    let err = Config::from_hooks(
        [
            HookDef::command("a", ["sh"]).timeout_ms(0),
            HookDef::wasm("b", "missing.wasm").events(&[Event::PostToolUse]),
            HookDef::command("c", ["sh"]).fuel(5),
        ],
        &fx.workspace(),
        &WasmOptions::new(),
    )
    .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("(hooks built in code): hooks[0] (\"a\"): field `timeout_ms`"),
        "{text}"
    );
    assert!(text.contains("hooks[1] (\"b\"): field `wasm`"), "{text}");
    assert!(
        text.contains("hooks[2] (\"c\"): field `fuel`: only for `wasm` hooks"),
        "{text}"
    );
    assert_eq!(err.problems.len(), 3, "{text}");
}

/// A binding needs no `HookDef` method to be built in code: the generic
/// form loads exactly what the typed helpers do, and is checked as a file is.
#[test]
fn a_hook_built_by_field_loads_as_the_typed_helpers_build_it() {
    use toolgate::config::HookDef;
    use toolgate::wasm::WasmOptions;
    let root = std::path::Path::new("/");
    let typed = Config::from_hooks(
        [HookDef::command("g", ["true"])
            .tools(["Bash"])
            .timeout_ms(900)],
        root,
        &WasmOptions::new(),
    )
    .unwrap();
    let generic = Config::from_hooks(
        [HookDef::of("g", "command", json!(["true"]))
            .field("tools", json!(["Bash"]))
            .field("timeout_ms", json!(900))],
        root,
        &WasmOptions::new(),
    )
    .unwrap();
    assert_eq!(
        serde_json::to_value(typed.hooks()).unwrap(),
        serde_json::to_value(generic.hooks()).unwrap()
    );
    let err = Config::from_hooks(
        [HookDef::of("g", "command", json!(["true"])).field("fuel", json!(5))],
        root,
        &WasmOptions::new(),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("field `fuel`: only for `wasm` hooks"), "{err}");
}

// ---------------------------------------------------------------------------
// The JSON Schema editors use (crates/toolgate/src/config/schema.rs)
// ---------------------------------------------------------------------------

fn repo() -> &'static std::path::Path {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The JSON Schema reference implementation (python-jsonschema; Debian's
/// `python3-jsonschema`, which test.sh installs), one process per test,
/// one document per line. Not a Rust validator: the one on the registry
/// turns on features of hashbrown, serde_json and num-traits that `cargo
/// run` does not, so a fresh clone would compile wasmtime's dependencies
/// twice (pinned by tests/all/build.rs).
pub(crate) struct Validator {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: std::io::BufReader<std::process::ChildStdout>,
}

const VALIDATE_PY: &str = r#"
import json, sys
from jsonschema import Draft202012Validator
schema = json.loads(sys.stdin.readline())
Draft202012Validator.check_schema(schema)
validator = Draft202012Validator(schema)
print(json.dumps("ready"), flush=True)
for line in sys.stdin:
    doc = json.loads(line)
    errors = [e.message + " at /" + "/".join(map(str, e.absolute_path))
              for e in validator.iter_errors(doc)]
    print(json.dumps(errors), flush=True)
"#;

impl Validator {
    fn new() -> Self {
        Self::with_schema(&toolgate::config::json_schema())
    }

    /// A validator for `schema` (JSON Schema 2020-12), by python3-jsonschema.
    pub(crate) fn with_schema(schema: &serde_json::Value) -> Self {
        use std::io::{BufRead, Write};
        use std::process::{Command, Stdio};
        let mut child = Command::new("python3")
            .args(["-c", VALIDATE_PY])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs (test.sh installs python3-jsonschema)");
        let mut stdin = child.stdin.take().unwrap();
        let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        writeln!(stdin, "{schema}").unwrap();
        let mut ready = String::new();
        stdout.read_line(&mut ready).unwrap();
        assert_eq!(
            ready.trim(),
            "\"ready\"",
            "the schema is a valid JSON Schema (2020-12) and python3-jsonschema is installed"
        );
        Validator {
            child,
            stdin,
            stdout,
        }
    }

    pub(crate) fn errors(&mut self, doc: &serde_json::Value) -> Vec<String> {
        use std::io::{BufRead, Write};
        writeln!(self.stdin, "{doc}").unwrap();
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        serde_json::from_str(&line).expect("the validator answers a JSON list")
    }
}

impl Drop for Validator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `docs/hooks.schema.json` is what `toolgate hooks --schema` prints: a
/// field added to the loader and not published fails here.
/// `TOOLGATE_BLESS=1 cargo test --test all published_schema` rewrites it.
#[test]
fn the_published_schema_is_what_the_loader_generates() {
    let out = succeeded(toolgate().args(["hooks", "--schema"]));
    let printed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed, toolgate::config::json_schema());
    let path = repo().join("docs/hooks.schema.json");
    if std::env::var_os("TOOLGATE_BLESS").is_some() {
        std::fs::write(&path, &out.stdout).unwrap();
    }
    let committed = std::fs::read(&path).unwrap_or_default();
    assert!(
        committed == out.stdout,
        "docs/hooks.schema.json is not `toolgate hooks --schema`'s output: regenerate it with \
         `TOOLGATE_BLESS=1 cargo test --test all published_schema`"
    );
}

/// Every hooks.json the repository ships (the demo, the scaffolds' templates,
/// any other found in the tree) and every hooks.json example in the README
/// passes the schema: an editor pointed at it underlines none of them.
#[test]
fn every_hooks_json_in_the_repository_passes_the_schema() {
    let mut validator = Validator::new();
    let mut files = Vec::new();
    let mut dirs = vec![repo().to_owned()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            let kind = entry.file_type().unwrap();
            if kind.is_dir()
                && !["target", ".git", ".cache", "node_modules"].contains(&name.as_str())
            {
                dirs.push(path);
            } else if kind.is_file() && name == "hooks.json" {
                files.push(path);
            }
        }
    }
    let shipped = [
        "examples/demo/.toolgate/hooks.json",
        "sdk/templates/common/hooks.json",
    ];
    for file in shipped {
        assert!(files.contains(&repo().join(file)), "{file} was not found");
    }
    let mut docs: Vec<(String, serde_json::Value)> = files
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            (
                f.display().to_string(),
                serde_json::from_str(&text).unwrap(),
            )
        })
        .collect();
    // The ```json blocks of the README and the book that are whole
    // hooks.json files.
    for (page, text) in crate::support::documentation() {
        for (i, block) in text.split("```json\n").skip(1).enumerate() {
            let block = block.split("```").next().unwrap();
            if let Ok(doc @ serde_json::Value::Object(_)) = serde_json::from_str(block)
                && doc.get("schema").is_some()
                && doc.get("hooks").is_some()
            {
                docs.push((format!("{page} json block {i}"), doc));
            }
        }
    }
    assert!(
        docs.len() > shipped.len(),
        "the documentation's examples were found"
    );
    for (name, doc) in &docs {
        let errors = validator.errors(doc);
        assert!(errors.is_empty(), "{name}: {errors:#?}");
    }
}

/// What the loader and the schema say of one document, read as the
/// managed config (where every field is allowed) with a script `g.sh` and a
/// component `g.wat` beside it.
struct Judge {
    fx: Fixture,
    validator: std::cell::RefCell<Validator>,
}

impl Judge {
    fn new() -> Self {
        let fx = Fixture::new();
        fx.global_script("g.sh", "#!/bin/sh\n");
        std::fs::copy(
            repo().join("examples/demo/hooks/no_network.wat"),
            fx.global().join("g.wat"),
        )
        .unwrap();
        Judge {
            fx,
            validator: std::cell::RefCell::new(Validator::new()),
        }
    }

    /// (the loader accepts it, the schema accepts it), and why not.
    fn judge(&self, doc: &serde_json::Value) -> ((bool, bool), String) {
        let path = self.fx.global().join("hooks.json");
        std::fs::write(&path, doc.to_string()).unwrap();
        // As the managed layer's: the one file where every field is allowed.
        let loaded = Config::from_file(Source::Managed, &path, &self.fx.global());
        let errors = self.validator.borrow_mut().errors(doc);
        let why = format!(
            "{doc}\nloader: {}\nschema: {errors:?}",
            loaded
                .as_ref()
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        );
        ((loaded.is_ok(), errors.is_empty()), why)
    }

    fn both_accept(&self, doc: serde_json::Value) {
        let (said, why) = self.judge(&doc);
        assert_eq!(said, (true, true), "{why}");
    }

    fn both_refuse(&self, doc: serde_json::Value) {
        let (said, why) = self.judge(&doc);
        assert_eq!(said, (false, false), "{why}");
    }
}

/// Puts a value in one field of a document.
type Place = Box<dyn Fn(serde_json::Value) -> serde_json::Value>;

/// The schema and the loader agree on the shape of every field, with the
/// cases read from the schema itself: each value a field's `enum` lists and
/// each bound of a number is accepted by the loader too, and what lies just
/// outside (another word, a bound ± 1, a value of the wrong type) is refused
/// by both. A parser changed without its field's schema fails here.
#[test]
fn the_schema_and_the_loader_agree_on_every_fields_values() {
    let judge = Judge::new();
    let schema = toolgate::config::json_schema();
    let command = json!({"name": "c", "command": ["./g.sh"]});
    let wasm = json!({"name": "w", "wasm": "g.wat"});
    let top = |key: &str, value: serde_json::Value| {
        let mut doc = json!({"schema": 1, "hooks": []});
        doc[key] = value;
        doc
    };
    let guard = json!({"name": "u", "use": "toolgate:shell"});
    // A binding's own field is tried on a hook of that binding (the first
    // one whose entry does not forbid it); a binding's key on a bare hook.
    let bindings = schema["$defs"]["hook"]["oneOf"].as_array().unwrap();
    let bases = [&command, &wasm, &guard];
    assert_eq!(bindings.len(), bases.len(), "a base hook per binding");
    let bare = json!({"name": "k"});
    let mut cases: Vec<(Place, &serde_json::Value)> = Vec::new();
    for (key, field) in schema["$defs"]["hook"]["properties"].as_object().unwrap() {
        let base = if bindings.iter().any(|b| b["required"][0] == key.as_str()) {
            &bare
        } else {
            let owner = bindings
                .iter()
                .position(|b| b["properties"].get(key).is_none())
                .unwrap();
            bases[owner]
        };
        let (key, base) = (key.clone(), base.clone());
        cases.push((
            Box::new(move |v| {
                let mut hook = base.clone();
                hook[&key] = v;
                json!({"schema": 1, "hooks": [hook]})
            }),
            field,
        ));
    }
    for (key, field) in schema["properties"].as_object().unwrap() {
        let key = key.clone();
        cases.push((Box::new(move |v| top(&key, v)), field));
    }
    let mut checked = 0;
    for (doc, field) in &cases {
        // `event` is a name or a list of names: its names are in `anyOf`.
        let field = field.get("anyOf").map_or(*field, |any| &any[0]);
        if let Some(names) = field.get("enum").and_then(|e| e.as_array()) {
            for name in names {
                judge.both_accept(doc(name.clone()));
            }
            judge.both_refuse(doc(json!("no-such-word")));
            judge.both_refuse(doc(json!(7)));
            checked += 1;
        }
        if let (Some(min), Some(max)) = (field["minimum"].as_u64(), field["maximum"].as_u64()) {
            judge.both_accept(doc(json!(min)));
            judge.both_accept(doc(json!(max)));
            if let Some(below) = min.checked_sub(1) {
                judge.both_refuse(doc(json!(below)));
            }
            judge.both_refuse(doc(json!(max + 1)));
            judge.both_refuse(doc(json!(min.to_string())));
            checked += 1;
        }
        match field["type"].as_str() {
            Some("boolean") => {
                judge.both_accept(doc(json!(true)));
                judge.both_accept(doc(json!(false)));
                judge.both_refuse(doc(json!("yes")));
            }
            Some("array" | "object") => judge.both_refuse(doc(json!(7))),
            Some("string") => judge.both_refuse(doc(json!(7))),
            _ => continue,
        }
        checked += 1;
    }
    assert!(checked >= 15, "only {checked} fields were checked");
}

/// What no single field says: a hook runs exactly one binding, has a name,
/// and has no field another binding or nobody reads; the file has a
/// supported `schema` and no unknown field. `"$schema"` (for editors) is
/// any string and nothing else.
#[test]
fn the_schema_and_the_loader_agree_on_the_files_shape() {
    let judge = Judge::new();
    let file = |hook: serde_json::Value| json!({"schema": 1, "hooks": [hook]});
    judge.both_accept(json!({
        "$schema": "./docs/hooks.schema.json",
        "schema": 1,
        "chain_timeout_ms": 5000,
        "untrusted_hooks": "skip",
        "require_confinement": false,
        "unconfined_workspace_hooks": [{"workspace": "/srv/ws", "hook": "h"}],
        "hooks": [
            {"name": "c", "command": ["./g.sh", "--flag"], "event": ["pre_tool_use", "post_tool_use"],
             "tools": ["Bash"], "matcher": "Bash|Write", "timeout_ms": 2000, "on_failure": "allow",
             "config": {"any": ["json", 1]}, "protocol": "claude-code", "trust_files": ["g.sh"]},
            {"name": "w", "wasm": "g.wat", "event": "post_tool_use", "fuel": 1000000, "memory_mb": 16},
        ],
    }));
    judge.both_accept(json!({"$schema": "https://example.com/any", "schema": 1}));
    judge.both_refuse(json!({"$schema": 3, "schema": 1}));
    judge.both_refuse(json!({"schema": 1, "$schemas": "x"}));
    judge.both_refuse(json!({"hooks": []}));
    judge.both_refuse(json!({"schema": 2, "hooks": []}));
    judge.both_refuse(json!([]));
    judge.both_refuse(file(json!({"name": "n"})));
    judge.both_refuse(file(json!({"command": ["./g.sh"]})));
    judge.both_refuse(file(
        json!({"name": "n", "command": ["./g.sh"], "wasm": "g.wat"}),
    ));
    judge.both_refuse(file(
        json!({"name": "n", "command": ["./g.sh"], "fuel": 10}),
    ));
    judge.both_refuse(file(
        json!({"name": "n", "wasm": "g.wat", "protocol": "toolgate"}),
    ));
    judge.both_refuse(file(
        json!({"name": "n", "command": ["./g.sh"], "on_faliure": "deny"}),
    ));
    judge.both_refuse(file(json!({"name": "", "command": ["./g.sh"]})));
    judge.both_refuse(file(json!({"name": "  ", "command": ["./g.sh"]})));
    judge.both_refuse(file(json!({"name": "a\u{7}b", "command": ["./g.sh"]})));
    judge.both_refuse(file(json!({"name": "n", "command": []})));
    judge.both_refuse(file(json!({"name": "n", "command": [""]})));
    judge.both_refuse(file(json!({"name": "n", "command": ["./g.sh", 3]})));
    judge.both_refuse(file(
        json!({"name": "n", "command": ["./g.sh"], "event": []}),
    ));
    judge.both_refuse(file(
        json!({"name": "n", "command": ["./g.sh"], "tools": []}),
    ));
    judge.both_refuse(file(
        json!({"name": "n", "command": ["./g.sh"], "tools": [""]}),
    ));
    judge.both_refuse(file(
        json!({"name": "n", "command": ["./g.sh"], "event": ["pre_tool_use", "pre_tool_use"]}),
    ));
    judge.both_refuse(file(json!({"name": "n", "wasm": ""})));
    judge.both_refuse(
        json!({"schema": 1, "unconfined_workspace_hooks": [{"workspace": "rel", "hook": "h"}]}),
    );
    judge.both_refuse(json!({"schema": 1, "unconfined_workspace_hooks": [{"workspace": "/a", "hook": "h", "x": 1}]}));
}
