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
//! CI runs `PROPTEST_CASES` cases per property (2000 when unset); a failing
//! seed is saved in `proptest-regressions/props.txt` (committed) and replayed
//! first on every run. A long campaign, in release (about 100× faster than
//! the debug test binary):
//!
//! ```text
//! PROPTEST_CASES=200000 cargo test --release --test all props::
//! ```

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::FileFailurePersistence;
use serde_json::{Value, json};
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
/// bidirectional characters, quotes and backslashes, the marker, and now and
/// then a huge one.
fn hostile_string() -> BoxedStrategy<String> {
    prop_oneof![
        6 => "\\PC{0,12}",
        2 => any::<String>(),
        2 => "[\\x00-\\x1f\\x7f\u{80}-\u{9f}\u{200b}\u{202e}\u{2066}\u{feff}\"\\\\/{}\\[\\]:,]{0,8}",
        2 => "\\PC{0,4}".prop_map(|s| format!("{s}{MARKER}{s}")),
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
        "allow", "approve", "deny", "block", "ask", "defer", "modify", "replace", "PreToolUse",
        "BeforeTool", "no",
    ]);
    v.extend([json!(true), json!(false), json!({}), json!({"command": "ls"})]);
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

/// What each inward protocol read, for every exit a hook can have.
fn answers(inward: Inward, event: Event, code: Option<i32>, out: &[u8], err: &[u8]) -> Vec<String> {
    let (answer, note) = fuzzing::subprocess_answer(inward, event, code, out, err);
    let mut texts: Vec<String> = note.into_iter().collect();
    if let Err(e) = answer {
        texts.push(chain(&e));
    }
    texts
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
        (json_text, any::<bool>()).prop_map(|(output, is_error)| GuestDecision::Replace {
            output,
            is_error
        }),
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
