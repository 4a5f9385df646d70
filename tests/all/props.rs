//! Property tests of every parser a hostile party feeds: hooks.json, wire v1
//! requests and answers, the inward Claude Code and Gemini CLI answers, every
//! agent dialect's hook input and answer, recorded transcripts, trust
//! records, the server's protocol lines and a guest's lifted verdict.
//!
//! # Why properties, beside the attack-by-attack tests
//!
//! The security tests pin the attacks someone thought of. These pin four
//! rules over inputs nobody wrote by hand: never a panic (on arbitrary bytes
//! and on JSON shaped like the real thing — the right keys with the wrong
//! types, deep nesting, huge, unicode and control-character strings,
//! duplicate keys written as raw text, a byte-order mark, truncation); never
//! an allow from an answer that carries a deny signal anywhere the dialect
//! reads one; errors that say where and never quote what; and encode →
//! decode is the identity wherever toolgate both writes and reads a format.
//! Each property is one test, named for the rule it pins. A case proptest
//! shrinks to is kept as a named regression test below the properties.
//!
//! CI runs `PROPTEST_CASES` cases per property (2000 when unset: the module
//! takes about 17 s of CPU in the debug test binary); a failing seed is
//! saved in `proptest-regressions/props.txt` (committed) and replayed first
//! on every run. A long campaign, in the debug test binary `./test.sh`
//! already built (its dependencies are optimised, so `--release` would speed
//! up only toolgate's own code, at the cost of a second cold build of
//! wasmtime): 30,000 cases per property took 15 min here.
//!
//! ```text
//! PROPTEST_CASES=30000 nice -n 10 cargo test --test all -- props::
//! ```

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::FileFailurePersistence;
use serde_json::{Value, json};
use toolgate::agent::AgentHook as _;
use toolgate::agent::{Outward, read_agent_input, render_outcome};
use toolgate::fuzzing::{self, GuestDecision};
use toolgate::{Decision, Event, HookFailure, HookRequest, Inward, Outcome, ToolResult, Verdict};

/// Planted in keys and values: no error may quote it.
const MARKER: &str = "Qz7pMARKERk3";

/// Cases per property: `PROPTEST_CASES`, else 2000.
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(2000)
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: cases(),
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/props.txt",
        ))),
        ..ProptestConfig::default()
    }
}

// ---------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------

/// A JSON document as text is written: an object may repeat a key.
#[derive(Clone, Debug)]
enum Doc {
    Leaf(Value),
    Arr(Vec<Doc>),
    Obj(Vec<(String, Doc)>),
}

impl Doc {
    fn text(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    fn write(&self, out: &mut String) {
        match self {
            Doc::Leaf(v) => out.push_str(&v.to_string()),
            Doc::Arr(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    item.write(out);
                }
                out.push(']');
            }
            Doc::Obj(entries) => {
                out.push('{');
                for (i, (k, v)) in entries.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::from(k.as_str()).to_string());
                    out.push(':');
                    v.write(out);
                }
                out.push('}');
            }
        }
    }

    /// The entries, when it is an object.
    fn entries(&mut self) -> Option<&mut Vec<(String, Doc)>> {
        match self {
            Doc::Obj(entries) => Some(entries),
            Doc::Leaf(_) | Doc::Arr(_) => None,
        }
    }
}

/// Strings a hostile party writes: printable unicode, control and
/// bidirectional characters, quotes and backslashes, a credential-like word,
/// and now and then a huge one. Never the marker: the (c) properties plant
/// it where they know.
fn hostile_string() -> BoxedStrategy<String> {
    prop_oneof![
        6 => "\\PC{0,12}",
        2 => any::<String>(),
        2 => "[\\x00-\\x1f\\x7f\u{80}-\u{9f}\u{200b}\u{202e}\u{2066}\u{feff}\"\\\\/{}\\[\\]:,]{0,8}",
        2 => "\\PC{0,4}".prop_map(|s| format!("{s}AKIA0SECRET{s}")),
        1 => (any::<char>(), 1000usize..40_000).prop_map(|(c, n)| c.to_string().repeat(n)),
    ]
    .boxed()
}

/// A JSON scalar of any type.
fn scalar() -> BoxedStrategy<Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| json!(f)),
        hostile_string().prop_map(Value::from),
    ]
    .boxed()
}

/// A document shaped like the real thing: keys mostly from `keys`, values
/// mostly from `plausible` (the right types and the words the parser looks
/// for) or any scalar (the wrong types), nested.
fn doc(keys: &'static [&'static str], plausible: Vec<Value>) -> BoxedStrategy<Doc> {
    let key = prop_oneof![
        4 => prop::sample::select(keys).prop_map(str::to_owned),
        1 => hostile_string(),
    ];
    let leaf = prop_oneof![
        3 => prop::sample::select(plausible).prop_map(Doc::Leaf),
        2 => scalar().prop_map(Doc::Leaf),
    ];
    leaf.prop_recursive(5, 48, 6, move |inner| {
        prop_oneof![
            1 => prop::collection::vec(inner.clone(), 0..5).prop_map(Doc::Arr),
            3 => prop::collection::vec((key.clone(), inner), 0..7).prop_map(Doc::Obj),
        ]
    })
    .boxed()
}

/// An object at the top (what every parser here expects), shaped as [`doc`].
fn object(keys: &'static [&'static str], plausible: Vec<Value>) -> BoxedStrategy<Doc> {
    let key = prop_oneof![
        6 => prop::sample::select(keys).prop_map(str::to_owned),
        1 => hostile_string(),
    ];
    prop::collection::vec((key, doc(keys, plausible)), 0..9)
        .prop_map(Doc::Obj)
        .boxed()
}

/// What can happen to a text on its way: nothing (most often), a byte-order
/// mark, surrounding whitespace, truncation, a flipped or inserted byte.
#[derive(Clone, Debug)]
struct Mangle {
    kind: u8,
    at: Index,
    byte: u8,
}

fn mangle() -> impl Strategy<Value = Mangle> {
    (0u8..10, any::<Index>(), any::<u8>()).prop_map(|(kind, at, byte)| Mangle { kind, at, byte })
}

impl Mangle {
    fn apply(&self, text: String) -> Vec<u8> {
        let mut b = text.into_bytes();
        let at = self.at.index(b.len() + 1);
        match self.kind {
            5 => b.splice(0..0, "\u{feff}".bytes()).for_each(drop),
            6 => {
                b.splice(0..0, *b" \n\t").for_each(drop);
                b.extend_from_slice(b"\r\n ");
            }
            7 => b.truncate(at),
            8 if at < b.len() => b[at] ^= self.byte | 1,
            9 => b.insert(at, self.byte),
            _ => {}
        }
        b
    }
}

/// Bytes for a parser: arbitrary, or a shaped object (or any document),
/// mangled.
fn input(keys: &'static [&'static str], plausible: Vec<Value>) -> BoxedStrategy<Vec<u8>> {
    prop_oneof![
        1 => prop::collection::vec(any::<u8>(), 0..300),
        5 => (object(keys, plausible.clone()), mangle()).prop_map(|(d, m)| m.apply(d.text())),
        1 => (doc(keys, plausible), mangle()).prop_map(|(d, m)| m.apply(d.text())),
    ]
    .boxed()
}

fn strings(words: &[&str]) -> Vec<Value> {
    words.iter().map(|w| json!(w)).collect()
}

// ---------------------------------------------------------------------------
// What each parser's input looks like
// ---------------------------------------------------------------------------

const CONFIG_KEYS: &[&str] = &[
    "schema",
    "hooks",
    "chain_timeout_ms",
    "untrusted_hooks",
    "require_confinement",
    "unconfined_workspace_hooks",
    "name",
    "event",
    "tools",
    "matcher",
    "timeout_ms",
    "on_failure",
    "config",
    "command",
    "wasm",
    "use",
    "protocol",
    "fuel",
    "env",
];

fn config_values() -> Vec<Value> {
    let mut v = strings(&[
        "guard",
        "pre_tool_use",
        "post_tool_use",
        "deny",
        "allow",
        "skip",
        ".*",
        "Bash",
        "claude-code",
        "gemini",
        "hooks/guard.wat",
        "sh",
        "../../etc/passwd",
        "(",
    ]);
    v.extend([
        json!(1),
        json!(0),
        json!(5000),
        json!(true),
        json!(["sh", "-c", "exit 0"]),
        json!(["python3", "hooks/x.py"]),
        json!([]),
        json!({}),
    ]);
    v
}

const WIRE_KEYS: &[&str] = &[
    "schema",
    "event",
    "hook",
    "tool",
    "input",
    "result",
    "output",
    "is_error",
    "session_id",
    "turn_id",
    "tool_call_id",
    "cwd",
    "config",
    "decision",
    "reason",
    "context",
];

fn wire_values() -> Vec<Value> {
    let mut v = strings(&[
        "pre_tool_use",
        "post_tool_use",
        "allow",
        "deny",
        "modify",
        "replace",
        "shell",
        "no",
    ]);
    v.extend([json!(1), json!(2), json!(false), json!(true), json!({})]);
    v.push(json!({"output": "x", "is_error": false}));
    v.push(json!({"command": "ls"}));
    v
}

/// Every agent dialect's input keys, with Claude Code's answer keys (the
/// inward dialects read those).
const AGENT_KEYS: &[&str] = &[
    "hook_event_name",
    "session_id",
    "transcript_path",
    "cwd",
    "permission_mode",
    "tool_name",
    "tool_input",
    "tool_response",
    "tool_use_id",
    "error",
    "turn_id",
    "toolName",
    "toolArgs",
    "toolResult",
    "resultType",
    "textResultForLlm",
    "timestamp",
    "workspace_roots",
    "event",
    "tool",
    "args",
    "output",
    "directory",
    "timeout_ms",
    "llmContent",
    "returnDisplay",
    "tool_calls",
    "tool_results",
];

fn agent_values() -> Vec<Value> {
    let mut v = strings(&[
        "PreToolUse",
        "PostToolUse",
        "PostToolUseFailure",
        "PostToolBatch",
        "BeforeTool",
        "AfterTool",
        "preToolUse",
        "postToolUse",
        "beforeShellExecution",
        "tool.execute.before",
        "tool.execute.after",
        "Bash",
        "{\"command\":\"ls\"}",
        "/work",
    ]);
    v.extend([
        json!({"command": "ls"}),
        json!({"stdout": "x", "stderr": ""}),
        json!(30000),
        json!(["/work"]),
    ]);
    v
}

const ANSWER_KEYS: &[&str] = &[
    "continue",
    "stopReason",
    "suppressOutput",
    "systemMessage",
    "decision",
    "reason",
    "hookSpecificOutput",
    "hookEventName",
    "permissionDecision",
    "permissionDecisionReason",
    "updatedInput",
    "updatedToolOutput",
    "updatedMCPToolOutput",
    "additionalContext",
    "tool_input",
    "tailToolCallRequest",
    "context",
    "input",
    "result",
];

fn answer_values() -> Vec<Value> {
    let mut v = strings(&[
        "allow",
        "approve",
        "deny",
        "block",
        "ask",
        "defer",
        "modify",
        "replace",
        "PreToolUse",
        "BeforeTool",
        "no",
    ]);
    v.extend([
        json!(true),
        json!(false),
        json!({}),
        json!({"command": "ls"}),
    ]);
    v
}

const TRANSCRIPT_KEYS: &[&str] = &[
    "type",
    "message",
    "content",
    "id",
    "name",
    "input",
    "tool_use_id",
    "is_error",
    "text",
    "toolUseResult",
    "sessionId",
    "cwd",
    "event",
    "tool",
    "result",
];

fn transcript_values() -> Vec<Value> {
    let mut v = strings(&[
        "assistant",
        "user",
        "tool_use",
        "tool_result",
        "text",
        "t1",
        "Bash",
        "pre_tool_use",
    ]);
    v.extend([json!({"command": "ls"}), json!(true), json!([])]);
    v
}

const SERVE_KEYS: &[&str] = &[
    "id",
    "version",
    "op",
    "mode",
    "workspace",
    "input",
    "event",
    "tool",
    "deadline_ms",
    "context",
    "global",
    "trust",
    "path",
    "decision_log",
];

fn serve_values() -> Vec<Value> {
    let mut v = strings(&["evaluate", "status", "check", "/w", "{}"]);
    v.extend(Outward::ALL.iter().map(|o| json!(o.name())));
    v.extend([json!(1), json!(2), json!(50000), json!(null), json!({})]);
    v
}

const TRUST_KEYS: &[&str] = &[
    "schema",
    "digest",
    "trusted_at",
    "workspace",
    "config",
    "hooks",
    "name",
    "binding",
    "argv",
    "files",
    "role",
    "written",
    "path",
    "target",
    "executable",
];

fn trust_values() -> Vec<Value> {
    let mut v = strings(&[
        "blake3:00",
        "subprocess",
        "wasm",
        "program",
        "script",
        "/w",
        "guard",
    ]);
    v.extend([json!(2), json!(1), json!(true), json!([]), json!(["sh"])]);
    v
}

// ---------------------------------------------------------------------------
// Calling the parsers
// ---------------------------------------------------------------------------

/// A workspace root for the parsers that need one (hooks.json, trust
/// records), made once.
fn root() -> &'static std::path::Path {
    static ROOT: std::sync::LazyLock<tempfile::TempDir> = std::sync::LazyLock::new(|| {
        let dir = tempfile::tempdir().expect("a temporary directory");
        std::fs::create_dir_all(dir.path().join(".toolgate")).expect("a .toolgate folder");
        dir
    });
    ROOT.path()
}

/// An error and every source below it, as an operator would read it.
fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    toolgate::text::error_chain(error)
}

/// Which of a verdict's decisions it is, in one word.
fn is_deny(v: &Verdict) -> bool {
    matches!(v.decision, Decision::Deny { .. })
}

fn events() -> impl Strategy<Value = Event> {
    prop_oneof![Just(Event::PreToolUse), Just(Event::PostToolUse)]
}

fn exit_code() -> impl Strategy<Value = Option<i32>> {
    prop_oneof![
        4 => Just(Some(0)),
        2 => Just(Some(2)),
        1 => Just(Some(1)),
        1 => Just(None),
        1 => any::<i32>().prop_map(Some),
    ]
}

fn inwards() -> impl Strategy<Value = Inward> {
    prop::sample::select(
        Inward::VARIANTS
            .iter()
            .map(|name| name.parse().expect("a protocol's name parses"))
            .collect::<Vec<Inward>>(),
    )
}

fn outwards() -> impl Strategy<Value = Outward> {
    prop::sample::select(Outward::ALL)
}

// ---------------------------------------------------------------------------
// (a) Never a panic
// ---------------------------------------------------------------------------

proptest! {
    #![proptest_config(config())]

    #[test]
    fn hooks_json_never_panics(text in input(CONFIG_KEYS, config_values())) {
        let _ = fuzzing::hooks_json(&text, root());
    }

    #[test]
    fn wire_requests_never_panic(
        text in input(WIRE_KEYS, wire_values()),
        event in prop::option::of("\\PC{0,14}"),
        tool in prop::option::of("\\PC{0,8}"),
    ) {
        let _ = toolgate::wire::read_request(&text, event.as_deref(), tool.as_deref());
    }

    #[test]
    fn subprocess_answers_never_panic_in_any_inward_protocol(
        inward in inwards(),
        event in events(),
        code in exit_code(),
        out in input(ANSWER_KEYS, answer_values()),
        err in prop_oneof![Just(Vec::new()), input(ANSWER_KEYS, answer_values())],
    ) {
        let _ = fuzzing::subprocess_answer(inward, event, code, &out, &err);
    }

    #[test]
    fn agent_inputs_never_panic_in_any_dialect(
        dialect in outwards(),
        text in input(AGENT_KEYS, agent_values()),
    ) {
        let _ = read_agent_input(&text, dialect);
    }

    #[test]
    fn rendering_any_outcome_never_panics_in_any_dialect(
        dialect in outwards(),
        outcome in outcome(),
        hook_event_name in prop_oneof![
            prop::sample::select(agent_values()).prop_map(|v| v.as_str().unwrap_or("").to_owned()),
            "\\PC{0,12}",
        ],
    ) {
        let _ = render_outcome(&outcome, dialect, &hook_event_name);
    }

    #[test]
    fn recorded_transcripts_never_panic(
        lines in prop::collection::vec(
            prop_oneof![
                3 => input(TRANSCRIPT_KEYS, transcript_values()),
                1 => input(WIRE_KEYS, wire_values()),
            ],
            0..6,
        ),
    ) {
        let text = lines
            .iter()
            .map(|l| String::from_utf8_lossy(l).into_owned())
            .collect::<Vec<_>>()
            .join("\n");
        let _ = toolgate::replay::parse(&text);
    }

    #[test]
    fn trust_records_never_panic(text in input(TRUST_KEYS, trust_values())) {
        let _ = fuzzing::trust_record(&text, root());
    }

    #[test]
    fn serve_request_lines_never_panic(text in input(SERVE_KEYS, serve_values())) {
        let _ = toolgate::serve::read_request(&text);
    }

    #[test]
    fn guest_verdicts_never_panic(decision in guest_decision(), context in prop::option::of(hostile_string())) {
        let _ = fuzzing::guest_verdict(decision, context);
    }
}

fn guest_decision() -> impl Strategy<Value = GuestDecision> {
    let json_text = prop_oneof![
        2 => doc(WIRE_KEYS, wire_values()).prop_map(|d| d.text()),
        1 => hostile_string(),
    ];
    prop_oneof![
        Just(GuestDecision::Allow),
        hostile_string().prop_map(GuestDecision::Deny),
        json_text.clone().prop_map(GuestDecision::Modify),
        (json_text, any::<bool>())
            .prop_map(|(output, is_error)| GuestDecision::Replace { output, is_error }),
        hostile_string().prop_map(GuestDecision::Ask),
    ]
}

/// A JSON value without floats (which do not all read back bit for bit).
fn exact_value() -> BoxedStrategy<Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        hostile_string().prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(hostile_string(), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
    .boxed()
}

fn tool_result() -> impl Strategy<Value = ToolResult> {
    (exact_value(), any::<bool>()).prop_map(|(output, is_error)| ToolResult { output, is_error })
}

fn decision() -> impl Strategy<Value = Decision> {
    prop_oneof![
        Just(Decision::Allow),
        hostile_string().prop_map(|reason| Decision::Deny { reason }),
        exact_value().prop_map(|input| Decision::Modify { input }),
        tool_result().prop_map(|result| Decision::Replace { result }),
        (hostile_string(), prop::option::of(exact_value()))
            .prop_map(|(reason, input)| Decision::Ask { reason, input }),
    ]
}

fn outcome() -> impl Strategy<Value = Outcome> {
    (
        events(),
        decision(),
        prop::option::of("\\PC{0,8}"),
        prop::option::of(tool_result()),
        prop::option::of(tool_result()),
        prop::option::of(hostile_string()),
    )
        .prop_map(
            |(event, decision, decided_by, shown, tool_result, context)| Outcome {
                event,
                decision,
                decided_by,
                shown,
                tool_result,
                context,
                runs: Vec::new(),
            },
        )
}

// ---------------------------------------------------------------------------
// (b) Never an allow from an answer that carries a deny signal
// ---------------------------------------------------------------------------

/// A deny signal as one dialect spells it, and where it goes.
#[derive(Clone, Debug)]
enum Signal {
    /// `key: value` at the top of the answer.
    Top(&'static str, Value),
    /// `key: value` inside `hookSpecificOutput`.
    Specific(&'static str, Value),
    /// The exit code alone.
    Exit(i32),
}

/// Where a signal is put into an answer: at which position among the
/// entries, beside which repeats of its key (before it and after it), and
/// whether the answer is then wrapped as a JSON string (Gemini CLI unwraps
/// one) or read from stderr.
#[derive(Clone, Debug)]
struct Placement {
    at: Index,
    before: Option<Value>,
    after: Option<Value>,
    leading_space: bool,
}

fn placement() -> impl Strategy<Value = Placement> {
    let other = prop_oneof![
        3 => prop::sample::select(answer_values()),
        1 => scalar(),
    ];
    (
        any::<Index>(),
        prop::option::of(other.clone()),
        prop::option::of(other),
        any::<bool>(),
    )
        .prop_map(|(at, before, after, leading_space)| Placement {
            at,
            before,
            after,
            leading_space,
        })
}

/// Puts `key: value` among `entries` at the placement's position, with its
/// repeats around it.
fn put(entries: &mut Vec<(String, Doc)>, key: &str, value: Value, p: &Placement) {
    let at = p.at.index(entries.len() + 1);
    let mut run = Vec::new();
    if let Some(b) = &p.before {
        run.push((key.to_owned(), Doc::Leaf(b.clone())));
    }
    run.push((key.to_owned(), Doc::Leaf(value)));
    if let Some(a) = &p.after {
        run.push((key.to_owned(), Doc::Leaf(a.clone())));
    }
    entries.splice(at..at, run);
}

/// The answer's text with `signal` put in (`None` for an exit-code signal,
/// which leaves the answer as it was).
fn inject(mut answer: Doc, signal: &Signal, p: &Placement) -> String {
    let Some(entries) = answer.entries() else {
        return answer.text();
    };
    match signal {
        Signal::Top(key, value) => put(entries, key, value.clone(), p),
        Signal::Specific(key, value) => {
            let existing = entries
                .iter_mut()
                .find(|(k, _)| k == "hookSpecificOutput")
                .and_then(|(_, v)| v.entries());
            match existing {
                Some(specific) => put(specific, key, value.clone(), p),
                None => {
                    let mut specific = Vec::new();
                    put(&mut specific, key, value.clone(), p);
                    let at = p.at.index(entries.len() + 1);
                    entries.insert(at, ("hookSpecificOutput".into(), Doc::Obj(specific)));
                }
            }
        }
        Signal::Exit(_) => {}
    }
    let text = answer.text();
    if p.leading_space {
        format!(" \n{text}\n")
    } else {
        text
    }
}

fn code_for(signal: &Signal, code: Option<i32>) -> Option<i32> {
    match signal {
        Signal::Exit(c) => Some(*c),
        Signal::Top(..) | Signal::Specific(..) => code,
    }
}

/// Claude Code's deny signals (`permissionDecision` only before the call).
fn claude_signal(event: Event) -> BoxedStrategy<Signal> {
    let common = prop_oneof![
        Just(Signal::Top("continue", json!(false))),
        Just(Signal::Top("decision", json!("block"))),
        Just(Signal::Exit(2)),
    ];
    if event == Event::PreToolUse {
        prop_oneof![
            common,
            prop::sample::select(vec!["deny", "ask", "defer"])
                .prop_map(|w| Signal::Specific("permissionDecision", json!(w))),
        ]
        .boxed()
    } else {
        common.boxed()
    }
}

/// Gemini CLI's deny signals: `decision` deny, block or ask, `continue:
/// false`, an exit code of 2 or more.
fn gemini_signal() -> BoxedStrategy<Signal> {
    prop_oneof![
        prop::sample::select(vec!["deny", "block", "ask"])
            .prop_map(|w| Signal::Top("decision", json!(w))),
        Just(Signal::Top("continue", json!(false))),
        (2i32..256).prop_map(Signal::Exit),
    ]
    .boxed()
}

/// What the chain may make of an answer that carried a deny signal: a
/// denial, an `ask` (a clean `ask` before the call: a person confirms it
/// or the chain refuses it), or a failure (which `on_failure`, deny by
/// default, decides). Never an allow.
fn denies_or_fails(answer: &Result<Verdict, HookFailure>) -> bool {
    match answer {
        Ok(v) => is_deny(v) || matches!(v.decision, Decision::Ask { .. }),
        Err(_) => true,
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn a_wire_v1_answer_saying_deny_anywhere_never_allows(
        answer in object(ANSWER_KEYS, answer_values()),
        p in placement(),
        code in exit_code(),
    ) {
        let signal = Signal::Top("decision", json!("deny"));
        let text = inject(answer, &signal, &p);
        let (read, _) =
            fuzzing::subprocess_answer(Inward::Toolgate, Event::PreToolUse, code, text.as_bytes(), b"");
        prop_assert!(denies_or_fails(&read), "{text} was read as {read:?}");
    }

    #[test]
    fn a_claude_code_answer_with_a_deny_signal_anywhere_never_allows(
        (event, signal) in events().prop_flat_map(|e| (Just(e), claude_signal(e))),
        answer in object(ANSWER_KEYS, answer_values()),
        p in placement(),
        code in exit_code(),
        stderr in prop_oneof![Just(Vec::new()), input(ANSWER_KEYS, answer_values())],
    ) {
        let text = inject(answer, &signal, &p);
        let code = code_for(&signal, code);
        let (read, _) =
            fuzzing::subprocess_answer(Inward::ClaudeCode, event, code, text.as_bytes(), &stderr);
        prop_assert!(denies_or_fails(&read), "{text} (exit {code:?}) was read as {read:?}");
    }

    #[test]
    fn a_gemini_answer_with_a_deny_signal_anywhere_never_allows(
        event in events(),
        signal in gemini_signal(),
        answer in object(ANSWER_KEYS, answer_values()),
        p in placement(),
        code in exit_code(),
        (as_string, on_stderr) in (any::<bool>(), any::<bool>()),
    ) {
        let mut text = inject(answer, &signal, &p);
        if as_string {
            text = Value::from(text).to_string();
        }
        let code = code_for(&signal, code);
        let (out, err) = if on_stderr { (" \n", text.as_str()) } else { (text.as_str(), "") };
        let (read, _) = fuzzing::subprocess_answer(
            Inward::Gemini, event, code, out.as_bytes(), err.as_bytes(),
        );
        prop_assert!(denies_or_fails(&read), "{text} (exit {code:?}) was read as {read:?}");
    }

    #[test]
    fn a_guest_that_denies_never_allows(reason in hostile_string(), context in prop::option::of(hostile_string())) {
        let read = fuzzing::guest_verdict(GuestDecision::Deny(reason), context);
        prop_assert!(denies_or_fails(&read), "read as {read:?}");
    }

    #[test]
    fn a_denied_call_is_never_answered_with_silence_in_any_dialect(
        dialect in outwards(),
        reason in hostile_string(),
        context in prop::option::of(hostile_string()),
        replace in prop::option::of(tool_result()),
    ) {
        // Before the call an agent reads silence (exit 0, nothing printed)
        // as "no objection": a denial (or a pre replace, which refuses the
        // call) must say something.
        let decision = match replace {
            Some(result) => Decision::Replace { result },
            None => Decision::Deny { reason },
        };
        let outcome = Outcome {
            event: Event::PreToolUse,
            decision,
            decided_by: Some("guard".into()),
            shown: None,
            tool_result: None,
            context,
            runs: Vec::new(),
        };
        let event = dialect.install().events.first().copied().unwrap_or("PreToolUse");
        let rendered = render_outcome(&outcome, dialect, event);
        prop_assert!(
            rendered.as_ref().is_some_and(|v| v.as_object().is_some_and(|o| !o.is_empty())),
            "{dialect}: {rendered:?}"
        );
    }
}

// ---------------------------------------------------------------------------
// (c) Errors say where, never what
// ---------------------------------------------------------------------------

impl Doc {
    /// Every leaf and every key, counted in order.
    fn spots(&self) -> usize {
        match self {
            Doc::Leaf(_) => 1,
            Doc::Arr(items) => items.iter().map(Doc::spots).sum(),
            Doc::Obj(entries) => entries.iter().map(|(_, v)| 1 + v.spots()).sum(),
        }
    }

    /// Puts the marker at spot `n` (see [`Doc::spots`]): a key renamed, or a
    /// leaf replaced by a string holding it. Returns where: the key it was
    /// put in, or the key of the object the leaf sits in (`field`).
    fn plant(&mut self, n: &mut usize, field: Option<&str>) -> Option<Planted> {
        match self {
            Doc::Leaf(v) => {
                let here = *n == 0;
                *n = n.wrapping_sub(1);
                here.then(|| {
                    *v = Value::from(format!("x{MARKER}x"));
                    Planted::Value(field.map(str::to_owned))
                })
            }
            Doc::Arr(items) => items.iter_mut().find_map(|i| i.plant(n, field)),
            Doc::Obj(entries) => entries.iter_mut().find_map(|(k, v)| {
                let here = *n == 0;
                *n = n.wrapping_sub(1);
                if here {
                    k.push_str(MARKER);
                    return Some(Planted::Key);
                }
                v.plant(n, Some(k))
            }),
        }
    }
}

/// Where the marker was put.
#[derive(Clone, Debug)]
enum Planted {
    /// In a key.
    Key,
    /// In a value, under this key.
    Value(Option<String>),
}

/// A shaped object with the marker in one of its keys or values, and where.
fn planted(
    keys: &'static [&'static str],
    plausible: Vec<Value>,
) -> BoxedStrategy<(String, Planted)> {
    (object(keys, plausible), any::<Index>(), mangle())
        .prop_map(|(mut d, at, m)| {
            let spots = d.spots();
            let planted = if spots > 0 {
                d.plant(&mut at.index(spots), None)
            } else {
                None
            };
            let planted = planted.unwrap_or_else(|| {
                d = Doc::Obj(vec![(MARKER.into(), Doc::Leaf(json!(MARKER)))]);
                Planted::Key
            });
            (
                String::from_utf8_lossy(&m.apply(d.text())).into_owned(),
                planted,
            )
        })
        .boxed()
}

/// Whether an error may name what was planted: a value given for a closed
/// set of words (an event, a mode, an op, a role, a protocol version, a
/// hook's name) is
/// named when it is refused, so the writer sees which word was wrong; the
/// codebase pins those messages (`unknown event "PreToolUse"` in
/// tests/all/config.rs, `unknown mode "gemini-cli"` in
/// crates/toolgate-contract/src/serve.rs). Everything else — a tool's input or output, any
/// free text, a value of the wrong type, an unknown key — is content, never
/// quoted. `keys_are_positions`: an error names an unknown key as where the
/// problem is (hooks.json problems, `toolgate check`'s "unknown field
/// `inptu`", pinned in tests/all/cli.rs).
fn may_name(planted: &Planted, words: &[&str], keys_are_positions: bool) -> bool {
    match planted {
        Planted::Key => keys_are_positions,
        Planted::Value(Some(field)) => words.contains(&field.as_str()),
        Planted::Value(None) => false,
    }
}

fn quotes(text: &str) -> bool {
    text.contains(MARKER)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn hooks_json_errors_never_quote_the_file(
        (text, planted) in planted(CONFIG_KEYS, config_values()),
    ) {
        let words = ["name", "event", "protocol", "on_failure", "untrusted_hooks", "use"];
        if let Err(e) = fuzzing::hooks_json(text.as_bytes(), root()) {
            for problem in &e.problems {
                let said = problem.to_string();
                // A missing script is named by the path looked for, so a
                // typo is seen (the one quoted value, besides a program).
                let missing_script = said.contains("the script the interpreter runs, does not exist: looked for");
                prop_assert!(
                    !quotes(&said) || may_name(&planted, &words, true) || missing_script,
                    "{said}\nfrom {text}"
                );
            }
        }
    }

    #[test]
    fn wire_request_errors_never_quote_the_request(
        (text, planted) in planted(WIRE_KEYS, wire_values()),
    ) {
        if let Err(e) = toolgate::wire::read_request(text.as_bytes(), None, None) {
            let said = chain(&e);
            prop_assert!(!quotes(&said) || may_name(&planted, &["event"], true), "{said}\nfrom {text}");
        }
    }

    #[test]
    fn agent_input_errors_never_quote_the_input(
        dialect in outwards(),
        (text, planted) in planted(AGENT_KEYS, agent_values()),
    ) {
        if let Err(e) = read_agent_input(text.as_bytes(), dialect) {
            let said = chain(&e);
            // An event outside the agent's set is named (a closed set of
            // words); Copilot CLI names none, so its refusal names the tool
            // field that no shape of its has, as where the problem is.
            let may = may_name(&planted, &["hook_event_name", "event"], dialect == Outward::Copilot);
            prop_assert!(!quotes(&said) || may, "{dialect}: {said}\nfrom {text}");
        }
    }

    #[test]
    fn transcript_skips_never_quote_the_recording(
        (text, planted) in planted(TRANSCRIPT_KEYS, transcript_values()),
    ) {
        for skipped in toolgate::replay::parse(&text).skipped {
            prop_assert!(
                !quotes(&skipped.reason) || may_name(&planted, &["event", "tool_use_id"], false),
                "{}\nfrom {text}",
                skipped.reason
            );
        }
    }

    #[test]
    fn trust_record_errors_never_quote_the_record(
        (text, planted) in planted(TRUST_KEYS, trust_values()),
    ) {
        if let Err(e) = fuzzing::trust_record(text.as_bytes(), root()) {
            let said = chain(&e);
            prop_assert!(!quotes(&said) || may_name(&planted, &["role"], false), "{said}\nfrom {text}");
        }
    }

    #[test]
    fn serve_request_errors_never_quote_the_line(
        (text, planted) in planted(SERVE_KEYS, serve_values()),
    ) {
        if let Err((_, e)) = toolgate::serve::read_request(text.as_bytes()) {
            let said = chain(&e);
            prop_assert!(
                !quotes(&said) || may_name(&planted, &["version", "mode", "op"], false),
                "{said}\nfrom {text}"
            );
        }
    }
}

// ---------------------------------------------------------------------------
// (d) Encode → decode is the identity
// ---------------------------------------------------------------------------

/// A reason that reads back as itself (a blank one is replaced by a
/// default, on purpose).
fn reason() -> impl Strategy<Value = String> {
    hostile_string().prop_filter("a reason that is not blank", |r| !r.trim().is_empty())
}

fn verdict() -> impl Strategy<Value = Verdict> {
    let decision = prop_oneof![
        Just(Decision::Allow),
        reason().prop_map(|reason| Decision::Deny { reason }),
        exact_value().prop_map(|input| Decision::Modify { input }),
        tool_result().prop_map(|result| Decision::Replace { result }),
    ];
    (decision, prop::option::of(hostile_string()))
        .prop_map(|(decision, context)| Verdict { decision, context })
}

fn request() -> impl Strategy<Value = toolgate::Request> {
    (
        events(),
        hostile_string(),
        exact_value(),
        tool_result(),
        prop::collection::vec(prop::option::of(hostile_string()), 4),
    )
        .prop_map(|(event, tool, input, result, ids)| toolgate::Request {
            event,
            tool,
            input,
            result: (event == Event::PostToolUse).then_some(result),
            session_id: ids[0].clone(),
            turn_id: ids[1].clone(),
            tool_call_id: ids[2].clone(),
            cwd: ids[3].clone(),
        })
}

fn serve_request() -> impl Strategy<Value = toolgate::serve::Request> {
    use toolgate::serve::{Context, Evaluate, Mode, Op, Request, VERSION};
    let mode = prop::sample::select(Mode::all().collect::<Vec<_>>());
    let path = || prop::option::of(hostile_string().prop_map(std::path::PathBuf::from));
    let evaluate = (
        (mode, hostile_string(), hostile_string()),
        (
            prop::option::of(hostile_string()),
            prop::option::of(hostile_string()),
            prop::option::of(any::<u64>()),
        ),
        (path(), path(), prop::option::of(hostile_string()), path()),
    )
        .prop_map(
            |(
                (mode, workspace, input),
                (event, tool, deadline_ms),
                (global, trust, path, decision_log),
            )| {
                Op::Evaluate(Evaluate {
                    mode,
                    workspace: workspace.into(),
                    input,
                    event,
                    tool,
                    deadline_ms,
                    context: Context {
                        global,
                        trust,
                        path,
                        decision_log,
                    },
                })
            },
        );
    (
        exact_value(),
        prop_oneof![1 => Just(Op::Status), 6 => evaluate],
    )
        .prop_map(|(id, op)| Request {
            id,
            version: VERSION,
            op,
        })
}

fn manifest() -> impl Strategy<Value = toolgate::trust::Manifest> {
    use toolgate::trust::{FilePin, HookPin, Manifest, Role};
    let role = prop::sample::select(vec![
        Role::Program,
        Role::Script,
        Role::Declared,
        Role::Component,
        Role::Tree,
    ]);
    let path = || prop::option::of(hostile_string().prop_map(std::path::PathBuf::from));
    let file = (
        role,
        hostile_string(),
        path(),
        path(),
        prop::option::of(hostile_string()),
        any::<bool>(),
    )
        .prop_map(
            |(role, written, path, target, digest, executable)| FilePin {
                role,
                written,
                path,
                target,
                digest,
                executable,
            },
        );
    let hook = (
        hostile_string(),
        prop::sample::select(vec!["subprocess", "wasm"]),
        prop::option::of(prop::collection::vec(hostile_string(), 0..4)),
        prop::collection::vec(file, 0..3),
    )
        .prop_map(|(name, binding, argv, files)| HookPin {
            name,
            binding: binding.into(),
            argv,
            files,
        });
    (hostile_string(), prop::collection::vec(hook, 0..3)).prop_map(|(config, hooks)| Manifest {
        workspace: root().to_owned(),
        config,
        hooks,
    })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn a_wire_v1_answer_reads_back_as_the_verdict_it_encodes(verdict in verdict(), event in events()) {
        let bytes = fuzzing::wire_answer(&verdict);
        let (read, _) = fuzzing::subprocess_answer(Inward::Toolgate, event, Some(0), &bytes, b"");
        prop_assert_eq!(read.ok(), Some(verdict));
    }

    #[test]
    fn a_wire_v1_request_reads_back_as_the_request_it_encodes(
        request in request(),
        hook in hostile_string(),
        config in prop::option::of(exact_value()),
    ) {
        let hook_request = HookRequest {
            event: request.event,
            hook: &hook,
            tool: &request.tool,
            input: &request.input,
            result: request.result.as_ref(),
            session_id: request.session_id.as_deref(),
            turn_id: request.turn_id.as_deref(),
            tool_call_id: request.tool_call_id.as_deref(),
            cwd: request.cwd.as_deref(),
            config: config.as_ref(),
            state: Default::default(),
        };
        let text = serde_json::to_vec(&toolgate::wire::request_json(&hook_request))
            .expect("a request serialises");
        let read = toolgate::wire::read_request(&text, None, None).map_err(|e| chain(&e));
        prop_assert_eq!(read, Ok(request));
    }

    #[test]
    fn a_serve_request_line_reads_back_as_the_request_it_encodes(request in serve_request()) {
        // As the client writes it (crates/toolgate-hook/src/client.rs): one serde line.
        let line = serde_json::to_string(&request).expect("a request serialises");
        let read = toolgate::serve::read_request(line.as_bytes()).map_err(|(_, e)| chain(&e));
        prop_assert_eq!(read, Ok(request));
    }

    #[test]
    fn a_trust_record_reads_back_as_the_record_written(
        manifest in manifest(),
        trusted_at in any::<u64>(),
    ) {
        // As the store writes it (TrustStore::write): schema 2, the
        // manifest's digest, pretty JSON.
        // With a kept text (hashing to its digest, so it is read back).
        let script = "#!/bin/sh\necho ok\n";
        let kept = std::collections::BTreeMap::from([(
            format!("blake3:{}", blake3::hash(script.as_bytes()).to_hex()),
            toolgate::trust::Kept { size: script.len() as u64, text: Some(script.into()) },
        )]);
        let record = toolgate::trust::Record {
            schema: 2,
            digest: manifest.digest(),
            trusted_at,
            manifest,
            kept,
        };
        let text = serde_json::to_vec_pretty(&record).expect("a record serialises");
        let read = fuzzing::trust_record(&text, root()).map_err(|e| chain(&e));
        prop_assert!(read.is_ok(), "{read:?}");
        let read = read.unwrap_or_else(|_| unreachable!());
        prop_assert_eq!(
            (read.schema, &read.digest, read.trusted_at, &read.manifest, &read.kept),
            (record.schema, &record.digest, record.trusted_at, &record.manifest, &record.kept)
        );
    }

    #[test]
    fn a_claude_code_answer_reads_back_by_the_claude_code_protocol_as_its_decision(
        outcome in outcome(),
    ) {
        let rendered = render_outcome(&outcome, Outward::ClaudeCode, toolgate::agent::event_name(outcome.event));
        let bytes = rendered.map(|v| v.to_string()).unwrap_or_default();
        let (read, _) = fuzzing::subprocess_answer(Inward::ClaudeCode, outcome.event, Some(0), bytes.as_bytes(), b"");
        let context = outcome.context.clone();
        match (outcome.event, &outcome.decision) {
            // Before the call the shapes line up: what was decided reads back.
            (Event::PreToolUse, Decision::Allow) => {
                prop_assert_eq!(read.ok(), Some(Verdict { decision: Decision::Allow, context }));
            }
            (Event::PreToolUse, Decision::Deny { reason }) if !reason.trim().is_empty() => {
                prop_assert_eq!(read.ok(), Some(Verdict { decision: outcome.decision.clone(), context }));
            }
            (Event::PreToolUse, Decision::Modify { input }) if input.is_object() => {
                prop_assert_eq!(read.ok(), Some(Verdict { decision: outcome.decision.clone(), context }));
            }
            // A pre replace refuses the call; a modify to a non-object is
            // not an input Claude Code takes (read back: a failure).
            (Event::PreToolUse, Decision::Replace { .. } | Decision::Deny { .. }) => {
                prop_assert!(read.as_ref().is_ok_and(is_deny), "{bytes} read as {read:?}");
            }
            (Event::PreToolUse, Decision::Modify { .. }) => prop_assert!(read.is_err()),
            // Claude Code's own `ask`: a hook answering it inside toolgate's
            // chain is read back as toolgate's `ask`, with its reason.
            // (A rendering with a field the inward reader refuses, such as
            // `updatedInput: null`, is a malformed answer: a denial.)
            (Event::PreToolUse, Decision::Ask { reason, .. }) => {
                let back = read.as_ref().ok().map(|v| &v.decision);
                prop_assert!(
                    matches!(back, Some(Decision::Ask { reason: r, input: None })
                        if r == reason || reason.trim().is_empty())
                        || read.as_ref().is_ok_and(is_deny),
                    "{bytes} read as {read:?}"
                );
            }
            // After the call a denial withholds the output (a replacement
            // that says so, or a stop) and a replacement is shaped to the
            // tool's output: never read back as an allow.
            // (`ask` never comes after the call: a failure in the chain.)
            (Event::PostToolUse, Decision::Allow | Decision::Modify { .. } | Decision::Ask { .. }) => {
                prop_assert_eq!(read.ok(), Some(Verdict { decision: Decision::Allow, context }));
            }
            (Event::PostToolUse, Decision::Deny { .. } | Decision::Replace { .. }) => {
                prop_assert!(
                    read.as_ref().is_ok_and(|v| !matches!(v.decision, Decision::Allow)),
                    "{bytes} read as {read:?}"
                );
            }
            // No agent is asked about a tool list (`events()` yields none).
            (Event::ListTools, _) => {}
        }
    }
}

// ---------------------------------------------------------------------------
// What the properties found, each kept as it shrank
// ---------------------------------------------------------------------------

/// Gemini CLI's `JSON.parse` keeps the last of a repeated key, and so did
/// toolgate: `continue: false` then `continue: "allow"` was an allow.
#[test]
fn a_gemini_answer_repeating_a_key_after_its_deny_signal_still_denies() {
    for text in [
        r#"{"continue":false,"continue":"allow"}"#,
        r#"{"decision":"deny","decision":"allow"}"#,
        r#"{"decision":"allow","decision":"block"}"#,
        r#"{"x":{"a":1,"a":2},"continue":false}"#,
    ] {
        for event in [Event::PreToolUse, Event::PostToolUse] {
            let (read, _) =
                fuzzing::subprocess_answer(Inward::Gemini, event, Some(0), text.as_bytes(), b"");
            assert!(read.as_ref().is_ok_and(is_deny), "{text}: {read:?}");
        }
    }
    // Any other repeat is not guessed at.
    let text = br#"{"decision":"allow","decision":"approve"}"#;
    let (read, _) =
        fuzzing::subprocess_answer(Inward::Gemini, Event::PreToolUse, Some(0), text, b"");
    assert!(read.is_err(), "{read:?}");
}

/// `request_json` writes `"input": null` for a call without an input;
/// `read_request` took it for a missing input.
#[test]
fn a_wire_v1_request_with_a_null_input_reads_back() {
    let request = toolgate::Request::pre("", Value::Null);
    let text = json!({"schema": 1, "event": "pre_tool_use", "hook": "", "tool": "", "input": null});
    let read = toolgate::wire::read_request(text.to_string().as_bytes(), None, None);
    assert_eq!(read.ok(), Some(request));
    let missing = br#"{"event": "pre_tool_use", "tool": "t"}"#;
    assert!(toolgate::wire::read_request(missing, None, None).is_err());
}

/// serde's messages quote the value of the wrong type.
#[test]
fn shape_errors_in_trust_records_wire_requests_and_serve_lines_never_quote_the_value() {
    let value = format!("x{MARKER}x");
    let trust = json!({"trusted_at": value}).to_string();
    let err = fuzzing::trust_record(trust.as_bytes(), root()).expect_err("not a record");
    let said = chain(&err);
    assert!(!quotes(&said) && said.contains("line 1"), "{said}");

    let wire = json!({"event": "pre_tool_use", "tool": "t", "input": {}, "result": value});
    let err = toolgate::wire::read_request(wire.to_string().as_bytes(), None, None)
        .expect_err("not a request");
    let said = chain(&err);
    assert!(!quotes(&said) && said.contains("wrong type"), "{said}");

    let line = json!({"id": 1, "version": 1, "op": "evaluate", "mode": "check",
                      "workspace": "/w", "input": "{}", "deadline_ms": value});
    let (_, err) = toolgate::serve::read_request(line.to_string().as_bytes()).expect_err("refused");
    let said = chain(&err);
    assert!(!quotes(&said) && said.contains("wrong type"), "{said}");
}

/// `"schema": <anything>` was quoted whole in the problem; a `version` that
/// is an object or an array was quoted in the server's refusal.
#[test]
fn a_schema_or_version_that_is_not_a_number_is_named_by_its_kind_only() {
    let text = json!({"schema": {"k": MARKER}, "hooks": []}).to_string();
    let err = fuzzing::hooks_json(text.as_bytes(), root()).expect_err("not a config");
    let said = err.to_string();
    assert!(
        !quotes(&said) && said.contains("expected the number 1"),
        "{said}"
    );

    for version in [json!([MARKER]), json!({MARKER: 1})] {
        let line = json!({"id": 1, "version": version, "op": "status"}).to_string();
        let (_, err) = toolgate::serve::read_request(line.as_bytes()).expect_err("refused");
        let said = chain(&err);
        assert!(!quotes(&said) && said.contains("given as an"), "{said}");
    }
}

// ---------------------------------------------------------------------------
// (e) An agent event toolgate does not know, carrying a tool call, is never
//     let through: reading it is a refusal naming it (which every path answers
//     in the agent's blocking form), never a call to judge nor silence.
// ---------------------------------------------------------------------------

/// An event name no agent uses: a digit-bearing variant of a real one (no
/// agent's event has a digit), or a real one in the wrong case for
/// `dialect` (`preToolUse` is Copilot's and Cursor's, not Claude Code's).
fn unknown_name(dialect: Outward) -> BoxedStrategy<String> {
    let own: &'static [&'static str] = match dialect {
        Outward::ClaudeCode | Outward::Codex | Outward::QwenCode => &["PreToolUse", "PostToolUse"],
        Outward::Gemini => &["BeforeTool", "AfterTool"],
        Outward::Cursor | Outward::Copilot => &["preToolUse", "postToolUse"],
        Outward::OpenCode => &["tool.execute.before", "tool.execute.after"],
    };
    let real = prop::sample::select(vec![
        "PreToolUse",
        "PermissionRequest",
        "BeforeTool",
        "preToolUse",
        "tool.execute.before",
        "Stop",
        "SessionStart",
        "",
    ]);
    prop_oneof![
        (real, "[0-9][A-Za-z0-9._]{0,8}").prop_map(|(real, tail)| format!("{real}{tail}")),
        prop::sample::select(own).prop_map(|name| {
            let mut chars = name.chars();
            match chars.next() {
                Some(c) if c.is_uppercase() => c.to_lowercase().chain(chars).collect(),
                Some(c) => c.to_uppercase().chain(chars).collect(),
                None => String::new(),
            }
        }),
    ]
    .boxed()
}

/// `dialect`'s envelope for event `name` carrying a call of `tool` with
/// `input`, plus `extra` fields an agent may send.
fn carrying_a_call(
    dialect: Outward,
    name: &str,
    tool: &str,
    input: Value,
    extra: &[(String, Value)],
) -> Value {
    let mut envelope = match dialect {
        Outward::ClaudeCode
        | Outward::Codex
        | Outward::QwenCode
        | Outward::Gemini
        | Outward::Cursor => json!({"hook_event_name": name, "tool_name": tool,
            "tool_input": input, "cwd": "/tmp"}),
        // Copilot names no event: a tool field in none of its shapes.
        Outward::Copilot => json!({"toolName": tool, format!("tool{name}"): input, "cwd": "/tmp"}),
        Outward::OpenCode => json!({"event": name, "tool": tool, "args": input,
            "directory": "/tmp"}),
    };
    let known = [
        "toolArgs",
        "toolResult",
        "error",
        "hook_event_name",
        "event",
    ];
    if let Some(obj) = envelope.as_object_mut() {
        for (k, v) in extra {
            if !known.contains(&k.as_str()) && !obj.contains_key(k) {
                obj.insert(k.clone(), v.clone());
            }
        }
    }
    envelope
}

fn refuses_unknown_events(dialect: Outward) -> impl Strategy<Value = (String, Value)> {
    (
        unknown_name(dialect),
        "\\PC{1,12}",
        prop_oneof![
            Just(json!({"command": "rm -rf ~"})),
            scalar().prop_map(|v| json!({"x": v}))
        ],
        prop::collection::vec(("[a-z_]{1,10}", scalar()), 0..3),
    )
        .prop_map(move |(name, tool, input, extra)| {
            let envelope = carrying_a_call(dialect, &name, &tool, input, &extra);
            (name, envelope)
        })
}

/// Reading `envelope` in `dialect` is a refusal that says so (and, where
/// the agent names its events, names this one).
fn never_judged_nor_silent(
    dialect: Outward,
    name: &str,
    envelope: &Value,
) -> Result<(), TestCaseError> {
    let read = read_agent_input(envelope.to_string().as_bytes(), dialect);
    let Err(e) = read else {
        return Err(TestCaseError::fail(format!(
            "{dialect}: `{name}` was read as {read:?}"
        )));
    };
    let said = e.to_string();
    prop_assert!(
        said.contains("does not know the agent event"),
        "{dialect}: {said}"
    );
    if dialect != Outward::Copilot {
        prop_assert!(
            said.contains(&toolgate::text::excerpt(name, 80)),
            "{dialect}: {said}"
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn claude_code_never_lets_an_unknown_event_with_a_call_through((name, envelope) in refuses_unknown_events(Outward::ClaudeCode)) {
        never_judged_nor_silent(Outward::ClaudeCode, &name, &envelope)?;
    }

    #[test]
    fn codex_never_lets_an_unknown_event_with_a_call_through((name, envelope) in refuses_unknown_events(Outward::Codex)) {
        never_judged_nor_silent(Outward::Codex, &name, &envelope)?;
    }

    #[test]
    fn qwen_code_never_lets_an_unknown_event_with_a_call_through((name, envelope) in refuses_unknown_events(Outward::QwenCode)) {
        never_judged_nor_silent(Outward::QwenCode, &name, &envelope)?;
    }

    #[test]
    fn gemini_never_lets_an_unknown_event_with_a_call_through((name, envelope) in refuses_unknown_events(Outward::Gemini)) {
        never_judged_nor_silent(Outward::Gemini, &name, &envelope)?;
    }

    #[test]
    fn copilot_never_lets_an_unknown_event_with_a_call_through((name, envelope) in refuses_unknown_events(Outward::Copilot)) {
        never_judged_nor_silent(Outward::Copilot, &name, &envelope)?;
    }

    #[test]
    fn cursor_never_lets_an_unknown_event_with_a_call_through((name, envelope) in refuses_unknown_events(Outward::Cursor)) {
        never_judged_nor_silent(Outward::Cursor, &name, &envelope)?;
    }

    #[test]
    fn opencode_never_lets_an_unknown_event_with_a_call_through((name, envelope) in refuses_unknown_events(Outward::OpenCode)) {
        never_judged_nor_silent(Outward::OpenCode, &name, &envelope)?;
    }
}

// ---------------------------------------------------------------------------
// A serve answer reads as exactly one kind, or not at all
// ---------------------------------------------------------------------------

/// Each kind of serve answer's own fields, with values a server could send.
fn serve_answer_kinds() -> Vec<Vec<(&'static str, Value)>> {
    vec![
        vec![("ack", json!(true))],
        vec![("exit", json!(0)), ("stdout", json!(null))],
        vec![("exit", json!(0)), ("stdout", json!({}))],
        vec![("error", json!("x"))],
        vec![("busy", json!({"in_flight": 1, "limit": 1}))],
        vec![("metrics", json!(""))],
    ]
}

/// A line with the fields of two or more kinds (the first two never the
/// same kind), or of none (only `warning`, or a field no kind has).
fn ambiguous_serve_answer() -> impl Strategy<Value = Value> {
    let kinds = serve_answer_kinds();
    let several = prop::sample::subsequence((0..kinds.len()).collect::<Vec<_>>(), 2..=4)
        .prop_filter("two kinds, not the two spellings of evaluated", |picked| {
            !(picked.len() == 2 && picked == &[1, 2])
        })
        .prop_map(move |picked| {
            let mut fields = serde_json::Map::new();
            for kind in picked {
                for (key, value) in &kinds[kind] {
                    fields.insert((*key).to_owned(), value.clone());
                }
            }
            fields
        });
    let none = prop_oneof![
        Just(serde_json::Map::new()),
        hostile_string().prop_map(|w| [("warning".to_owned(), json!(w))].into_iter().collect()),
        (hostile_string(), exact_value())
            .prop_filter("a field no kind has", |(key, _)| {
                ![
                    "id", "ack", "exit", "stdout", "error", "busy", "status", "metrics",
                ]
                .contains(&key.as_str())
            })
            .prop_map(|(key, value)| [(key, value)].into_iter().collect()),
    ];
    (prop_oneof![4 => several, 1 => none], any::<bool>()).prop_map(|(mut fields, warning)| {
        fields.insert("id".to_owned(), json!(1));
        if warning {
            fields.insert("warning".to_owned(), json!("stale"));
        }
        Value::Object(fields)
    })
}

proptest! {
    #![proptest_config(config())]

    /// Read as serde's untagged enum, `{"exit": 0, "stdout": null, "error":
    /// "x"}` was an allow (the first kind whose fields were there won). No
    /// answer with the fields of several kinds, or of none, reads at all —
    /// neither as an `Answer` nor by the clients' strict reader, whatever
    /// the mode — so the call it answers is blocked.
    #[test]
    fn a_serve_answer_with_the_fields_of_several_kinds_or_none_never_reads(answer in ambiguous_serve_answer()) {
        use toolgate::agent::Outward;
        use toolgate::serve::{Answer, Mode};
        prop_assert!(serde_json::from_value::<Answer>(answer.clone()).is_err(), "{}", answer);
        let line = format!("{answer}\n");
        for mode in [Mode::Check, Mode::Agent(Outward::ClaudeCode)] {
            let read = toolgate_hook::client::read_taken(line.as_bytes(), &json!(1), mode);
            prop_assert!(read.is_err(), "{:?} read {} as {:?}", mode, answer, read);
        }
    }
}
