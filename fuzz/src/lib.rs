//! The fuzz targets' logic, in one place for two callers: the AFL++ binaries
//! (`src/bin/*.rs`, one line each) and the regression test
//! (`tests/all/fuzz_corpus.rs`, which includes this file with `#[path]` and
//! runs every committed corpus file and saved crash through it, without AFL).
//!
//! # Why a file both include, not functions in `toolgate::fuzzing`
//!
//! `toolgate::fuzzing` is the door to the parsers: one thin call each, the
//! code the CLI runs. What is here is the *checking* around those calls
//! (which parser a byte picks, the invariants, the fixtures built once), and
//! it belongs to the tests, not to the library every embedder compiles. The
//! test binary cannot depend on this package (it is outside the workspace,
//! built by `cargo afl` with its own flags and target dir), so it includes
//! the file as a module: one copy of the logic, compiled twice.
//!
//! # What a violation is
//!
//! Beyond a panic anywhere below, each target asserts invariants that must
//! hold for *every* input, and `assert!`s them: AFL's `fuzz!` turns the panic
//! into an abort (a crash it records), the regression test into a failure.
//! Each invariant is conservative and exact: it fires only when the input
//! provably carries what it names (a deny signal parsed out of the JSON, not
//! a substring), so a crash is always a real bug.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Value, json};
use toolgate::agent::{Outward, read_agent_input, render_outcome};
use toolgate::fuzzing::{self, GuestDecision};
use toolgate::{Decision, Event, Inward, Outcome, Request, ToolResult, Verdict};

/// A string planted in the fixtures (and in seeds) that no error may repeat
/// when the parser's contract is "never the content".
pub const MARKER: &str = "zq7MARKERq7z";

// ---------------------------------------------------------------------------
// protocol
// ---------------------------------------------------------------------------

/// How a subprocess ended, for [`Parser::Answer`]: 0, 1, 2, another code,
/// a signal.
const EXITS: [Option<i32>; 5] = [Some(0), Some(1), Some(2), Some(3), None];

/// One parser the `protocol` target's first byte can pick.
#[derive(Clone, Copy, Debug)]
pub enum Parser {
    /// A subprocess hook's answer in `inward`, the rest of the input on
    /// stdout (or on stderr, with stdout empty).
    Answer {
        /// The dialect the hook speaks.
        inward: Inward,
        /// The event it answered.
        event: Event,
        /// How it ended (`None`: a signal).
        code: Option<i32>,
        /// The bytes are its stderr, not its stdout.
        on_stderr: bool,
    },
    /// `toolgate check`'s wire v1 request.
    WireRequest,
    /// A request line to `toolgate serve`.
    ServeRequest,
    /// An agent's hook input, then a deny rendered in its dialect.
    Agent(Outward),
    /// A recorded session (JSONL), as `toolgate replay` reads it.
    Replay,
}

/// Every parser, in the order the first byte picks them
/// (`data[0] % parsers().len()`).
pub fn parsers() -> &'static [Parser] {
    static ALL: OnceLock<Vec<Parser>> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut all = Vec::new();
        for inward in [Inward::Toolgate, Inward::ClaudeCode, Inward::Gemini] {
            for event in [Event::PreToolUse, Event::PostToolUse] {
                for code in EXITS {
                    for on_stderr in [false, true] {
                        all.push(Parser::Answer {
                            inward,
                            event,
                            code,
                            on_stderr,
                        });
                    }
                }
            }
        }
        all.push(Parser::WireRequest);
        all.push(Parser::ServeRequest);
        all.extend(Outward::ALL.iter().copied().map(Parser::Agent));
        all.push(Parser::Replay);
        all
    })
}

/// The `protocol` target: `data[0]` picks a parser, the rest is its input.
pub fn protocol(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    match parsers()[usize::from(pick) % parsers().len()] {
        Parser::Answer {
            inward,
            event,
            code,
            on_stderr,
        } => answer(inward, event, code, on_stderr, rest),
        Parser::WireRequest => {
            if let Err(e) = toolgate::wire::read_request(rest, None, None) {
                // The one variant that names what it was given (which
                // event), on purpose; the others say what is wrong only.
                if !matches!(e, toolgate::wire::ReadRequestError::UnknownEvent(_)) {
                    no_marker(&e.to_string(), "a wire v1 request error");
                }
            }
        }
        Parser::ServeRequest => serve_request(rest),
        Parser::Agent(dialect) => agent(dialect, rest),
        Parser::Replay => replay(rest),
    }
}

/// A hook's answer: never let through (allow, modify, replace; an `ask`
/// is not one) when the
/// protocol says it must not be: a non-zero exit that the dialect does not
/// read as an answer, or a deny signal in the JSON it printed.
fn answer(inward: Inward, event: Event, code: Option<i32>, on_stderr: bool, bytes: &[u8]) {
    let (stdout, stderr): (&[u8], &[u8]) = if on_stderr {
        (b"", bytes)
    } else {
        (bytes, b"")
    };
    let (read, _note) = fuzzing::subprocess_answer(inward, event, code, stdout, stderr);
    let Ok(verdict) = read else {
        return;
    };
    // An `ask` lets nothing through on its own: a person confirms it, or
    // the chain refuses it.
    let lets_through = !matches!(
        verdict.decision,
        Decision::Deny { .. } | Decision::Ask { .. }
    );
    if !lets_through {
        return;
    }
    let why = match inward {
        // wire v1 reads stdout only after exit 0; `decision: deny` anywhere
        // at the top (a repeated key included) denies.
        Inward::Toolgate => match code {
            Some(0) => top_entries(stdout)
                .filter(|top| said(top, "decision", &["deny"]))
                .map(|_| "`decision: deny`"),
            _ => Some("a non-zero exit"),
        },
        // Exit 2 denies; any other non-zero exit is a failure. On exit 0,
        // `continue: false`, `decision: block`, or (before the call)
        // `hookSpecificOutput.permissionDecision` deny/ask/defer denies.
        Inward::ClaudeCode => match code {
            Some(0) => top_entries(&String::from_utf8_lossy(stdout).into_owned().into_bytes())
                .and_then(|top| claude_signal(&top, event)),
            _ => Some("an exit other than 0"),
        },
        // Gemini CLI reads stdout, or stderr when stdout is empty, as JSON
        // (once unwrapped from a JSON string) whatever the exit code.
        Inward::Gemini => match code {
            Some(0) => gemini_text(stdout, stderr).and_then(|text| {
                gemini_entries(text.as_bytes()).and_then(|top| gemini_signal(&top))
            }),
            _ => Some("an exit other than 0"),
        },
    };
    if let Some(why) = why {
        panic!(
            "{inward:?} {event:?} {code:?}: the answer carries {why} but was read as \
             {verdict:?}\nstdout: {:?}\nstderr: {:?}",
            String::from_utf8_lossy(stdout),
            String::from_utf8_lossy(stderr)
        );
    }
}

/// Whether the top-level entries say `key` is one of `values` (a string),
/// in any of its repeats.
fn said(top: &[(String, Node)], key: &str, values: &[&str]) -> bool {
    top.iter().any(|(k, v)| {
        k == key && matches!(v, Node::Leaf(Value::String(s)) if values.contains(&s.as_str()))
    })
}

/// `key: false` among the top-level entries.
fn said_false(top: &[(String, Node)], key: &str) -> bool {
    top.iter()
        .any(|(k, v)| k == key && matches!(v, Node::Leaf(Value::Bool(false))))
}

fn claude_signal(top: &[(String, Node)], event: Event) -> Option<&'static str> {
    if said_false(top, "continue") {
        return Some("`continue: false`");
    }
    if said(top, "decision", &["block"]) {
        return Some("`decision: block`");
    }
    let permission = top.iter().any(|(k, v)| {
        k == "hookSpecificOutput"
            && matches!(v, Node::Object(specific)
                if said(specific, "permissionDecision", &["deny", "ask", "defer"]))
    });
    (event == Event::PreToolUse && permission).then_some("`permissionDecision` deny, ask or defer")
}

fn gemini_signal(top: &[(String, Node)]) -> Option<&'static str> {
    if said_false(top, "continue") {
        return Some("`continue: false`");
    }
    said(top, "decision", &["deny", "block", "ask"]).then_some("`decision` deny, block or ask")
}

/// The text Gemini CLI reads an answer from.
fn gemini_text(stdout: &[u8], stderr: &[u8]) -> Option<String> {
    let out = String::from_utf8_lossy(stdout);
    let text = match out.trim() {
        "" => String::from_utf8_lossy(stderr).trim().to_owned(),
        out => out.to_owned(),
    };
    (!text.is_empty()).then_some(text)
}

/// The top-level entries of a Gemini answer, unwrapping one JSON string.
fn gemini_entries(bytes: &[u8]) -> Option<Vec<(String, Node)>> {
    match serde_json::from_slice::<Node>(bytes).ok()? {
        Node::Object(top) => Some(top),
        Node::Leaf(Value::String(inner)) => top_entries(inner.as_bytes()),
        _ => None,
    }
}

/// Every top-level entry of a JSON object, repeats kept, in order; `None`
/// when `bytes` is not one JSON object.
fn top_entries(bytes: &[u8]) -> Option<Vec<(String, Node)>> {
    match serde_json::from_slice::<Node>(bytes).ok()? {
        Node::Object(top) => Some(top),
        _ => None,
    }
}

/// JSON with every entry of every object kept (serde_json's `Value` keeps
/// the last of repeated keys, which is exactly what the invariants must not
/// rely on).
#[derive(Debug)]
enum Node {
    /// null, a boolean, a number or a string.
    Leaf(Value),
    Array(#[allow(dead_code)] Vec<Node>),
    Object(Vec<(String, Node)>),
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Node, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Node;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("JSON")
            }
            fn visit_bool<E>(self, v: bool) -> Result<Node, E> {
                Ok(Node::Leaf(Value::Bool(v)))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Node, E> {
                Ok(Node::Leaf(json!(v)))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Node, E> {
                Ok(Node::Leaf(json!(v)))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Node, E> {
                Ok(Node::Leaf(json!(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Node, E> {
                Ok(Node::Leaf(Value::String(v.to_owned())))
            }
            fn visit_unit<E>(self) -> Result<Node, E> {
                Ok(Node::Leaf(Value::Null))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(Node::Array(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = map.next_entry::<String, Node>()? {
                    entries.push(entry);
                }
                Ok(Node::Object(entries))
            }
        }
        d.deserialize_any(V)
    }
}

/// A request line to the server: what reads, reads back the same once
/// written (the client writes it with serde).
fn serve_request(line: &[u8]) {
    use toolgate::serve::{ReadRequestError, read_request};
    match read_request(line) {
        Ok(request) => {
            let again = serde_json::to_vec(&request).expect("a request serializes");
            match read_request(&again) {
                Ok(mut back) => {
                    // The `id` is any JSON, echoed. serde_json parses a
                    // number that is not a 64-bit integer with best-effort
                    // precision (its `float_roundtrip` feature is off), so
                    // such an id may come back a rounding step away: found
                    // by this target, kept in fuzz/crashes/protocol/. All
                    // else reads back exactly.
                    assert!(
                        same_json(&back.id, &request.id),
                        "the id {} read back as {}",
                        request.id,
                        back.id
                    );
                    back.id = request.id.clone();
                    assert_eq!(back, request, "a request did not read back as itself");
                }
                Err((_, e)) => panic!("a request did not read back: {e}\n{request:?}"),
            }
        }
        // `OtherVersion` names the version it was given, on purpose.
        Err((_, ReadRequestError::OtherVersion(_))) => {}
        Err((_, e)) => no_marker(&e.to_string(), "a serve request error"),
    }
}

/// Equal JSON, where a number that is not a 64-bit integer may differ by a
/// rounding step (a few units in the last place).
fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) if x.is_f64() || y.is_f64() => {
            match (x.as_f64(), y.as_f64()) {
                (Some(x), Some(y)) => (x - y).abs() <= x.abs().max(y.abs()) * 4.0 * f64::EPSILON,
                _ => false,
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_json(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        _ => a == b,
    }
}

/// An agent's hook input: a call toolgate evaluates always gets an answer
/// when the chain denies (printing nothing lets the call through in every
/// agent).
fn agent(dialect: Outward, bytes: &[u8]) {
    let call = match read_agent_input(bytes, dialect) {
        Ok(call) => call,
        Err(e) => return no_marker(&e.to_string(), "an agent input error"),
    };
    let Some(request) = call.request else {
        return;
    };
    let outcome = deny_outcome(&request);
    let rendered = render_outcome(&outcome, dialect, &call.hook_event_name);
    assert!(
        rendered.is_some(),
        "{dialect}: a deny for {:?} ({}) rendered as nothing",
        request.event,
        call.hook_event_name
    );
}

/// What the chain answers when a hook denies `request`.
fn deny_outcome(request: &Request) -> Outcome {
    let reason = "denied by the fuzz target".to_owned();
    Outcome {
        event: request.event,
        decision: Decision::Deny {
            reason: reason.clone(),
        },
        decided_by: Some("fuzz".into()),
        shown: (request.event == Event::PostToolUse).then(|| ToolResult::error(reason)),
        tool_result: request.result.clone(),
        context: None,
        runs: Vec::new(),
    }
}

/// A recording: every call and every skipped line names a line that exists,
/// calls in order.
fn replay(bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    let lines = text.lines().count();
    let recording = toolgate::replay::parse(&text);
    let mut last = 0;
    for call in &recording.calls {
        assert!(
            (1..=lines).contains(&call.line) && call.line >= last,
            "call at line {} of {lines} (after {last})",
            call.line
        );
        last = call.line;
    }
    for skipped in &recording.skipped {
        assert!(
            (1..=lines).contains(&skipped.line),
            "skipped line {} of {lines}",
            skipped.line
        );
    }
}

/// `text` (an error's Display) must not repeat the planted marker.
fn no_marker(text: &str, what: &str) {
    assert!(
        !text.contains(MARKER),
        "{what} repeats content it was given: {text}"
    );
}

// ---------------------------------------------------------------------------
// config
// ---------------------------------------------------------------------------

/// Where the trust-record seeds were recorded: a record names its workspace,
/// and only one for this root gets past the workspace check. It need not
/// exist (the parser compares paths).
pub const TRUST_ROOT: &str = "/toolgate-fuzz/workspace";

/// Files planted in the `config` target's workspace, each holding
/// [`MARKER`]: a hooks.json may name them (as a command, a wasm file, a
/// `.wat`), and no problem it reports may quote them.
const PLANTED: &[(&str, &str)] = &[
    ("secret.txt", "zq7MARKERq7z\n"),
    ("secret.wat", "(module zq7MARKERq7z)\n"),
    ("secret.wasm", "\0asm zq7MARKERq7z"),
    ("secret.json", "{\"zq7MARKERq7z\": \"zq7MARKERq7z\"}\n"),
    ("hooks/guard.sh", "#!/bin/sh\n# zq7MARKERq7z\n"),
];

/// The `config` target: a workspace made once, with [`PLANTED`] files.
#[derive(Debug)]
pub struct ConfigTarget {
    root: tempfile::TempDir,
}

impl ConfigTarget {
    /// Makes the workspace (a fresh temporary directory).
    pub fn new() -> ConfigTarget {
        let root = tempfile::Builder::new()
            .prefix("toolgate-fuzz-config.")
            .tempdir()
            .expect("a temporary directory");
        for (name, content) in PLANTED {
            let path = root.path().join(name);
            std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
            std::fs::write(&path, content).expect("a planted file");
        }
        std::fs::create_dir_all(root.path().join(".toolgate")).expect("mkdir .toolgate");
        ConfigTarget { root }
    }

    /// The workspace root.
    pub fn root(&self) -> &Path {
        self.root.path()
    }

    /// `data[0]` even: the rest is a hooks.json; odd: a trust record.
    pub fn run(&self, data: &[u8]) {
        let Some((&pick, rest)) = data.split_first() else {
            return;
        };
        if pick % 2 == 0 {
            // A hooks.json's problems name fields and echo short values of
            // its own; a file it names is never quoted.
            if let Err(e) = fuzzing::hooks_json(rest, self.root())
                && !contains(rest, MARKER.as_bytes())
            {
                no_marker(&e.to_string(), "a hooks.json problem");
            }
        } else if let Err(e) = fuzzing::trust_record(rest, Path::new(TRUST_ROOT)) {
            // "Errors name the file and what is wrong, never the text"
            // (src/trust/store.rs), except the workspace a record names,
            // shown on purpose.
            let text = e.to_string();
            if !text.contains(", not this workspace") {
                no_marker(&text, "a trust record error");
            }
        }
    }
}

impl Default for ConfigTarget {
    fn default() -> Self {
        ConfigTarget::new()
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

// ---------------------------------------------------------------------------
// guest
// ---------------------------------------------------------------------------

/// The hostile guest: a core module, wrapped as a hook component by
/// toolgate's own loader (a `"wasm": "….wat"` hook). `decide` decodes the
/// hex string its tool input is (the request record's `input` is at offset
/// 20 of the record: event, hook, tool, input) into memory at address 0, and
/// returns 0: whatever the fuzzer wrote *is* the canonical-ABI return area
/// of `result<verdict, string>` and the memory its pointers point into.
/// The host's allocations (the request's strings) start at 16 KiB, above the
/// most the harness decodes.
pub const GUEST_WAT: &str = r#"(module
  (memory (export "memory") 1)
  (global $bump (mut i32) (i32.const 16384))
  (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32)
    (local $at i32)
    (local.set $at (global.get $bump))
    (global.set $bump (i32.and (i32.add (i32.add (local.get $at) (local.get 3)) (i32.const 7)) (i32.const -8)))
    (local.get $at))
  (func $nibble (param $c i32) (result i32)
    (if (result i32) (i32.le_u (local.get $c) (i32.const 57))
      (then (i32.sub (local.get $c) (i32.const 48)))
      (else (i32.sub (i32.or (local.get $c) (i32.const 32)) (i32.const 87)))))
  (func (export "decide") (param $req i32) (result i32)
    (local $src i32) (local $end i32) (local $dst i32)
    ;; The input is JSON text: a string of hex digits, quotes included.
    (local.set $src (i32.add (i32.load offset=20 (local.get $req)) (i32.const 1)))
    (local.set $end (i32.sub
      (i32.add (i32.load offset=20 (local.get $req)) (i32.load offset=24 (local.get $req)))
      (i32.const 3)))
    (block $done
      (loop $next
        (br_if $done (i32.gt_s (local.get $src) (local.get $end)))
        (i32.store8 (local.get $dst)
          (i32.or
            (i32.shl (call $nibble (i32.load8_u (local.get $src))) (i32.const 4))
            (call $nibble (i32.load8_u offset=1 (local.get $src)))))
        (local.set $src (i32.add (local.get $src) (i32.const 2)))
        (local.set $dst (i32.add (local.get $dst) (i32.const 1)))
        (br $next)))
    (i32.const 0)))
"#;

/// The most of the input the guest is handed (it decodes below 16 KiB).
pub const GUEST_MAX: usize = 8 * 1024;

/// Canonical-ABI offsets in the return area of `result<verdict, string>`:
/// the result's case (0 ok, 1 err), the decision's case (0 allow, 1 deny,
/// 2 modify, 3 replace), the context option's case.
pub const RESULT_CASE: usize = 0;
/// See [`RESULT_CASE`].
pub const DECISION_CASE: usize = 4;
/// See [`RESULT_CASE`].
pub const CONTEXT_CASE: usize = 20;

/// The `guest` target: the component written once, the runner and its
/// tokio runtime built on first use (in the forked child: wasmtime's epoch
/// thread must not be created before AFL's fork server forks).
#[derive(Debug)]
pub struct GuestTarget {
    dir: tempfile::TempDir,
    chain: OnceLock<Chain>,
}

struct Chain {
    runtime: tokio::runtime::Runtime,
    runner: toolgate::HookRunner,
}

impl std::fmt::Debug for Chain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Chain")
    }
}

impl GuestTarget {
    /// Writes the guest.
    pub fn new() -> GuestTarget {
        let dir = tempfile::Builder::new()
            .prefix("toolgate-fuzz-guest.")
            .tempdir()
            .expect("a temporary directory");
        std::fs::write(dir.path().join("hostile.wat"), GUEST_WAT).expect("the guest's file");
        GuestTarget {
            dir,
            chain: OnceLock::new(),
        }
    }

    fn chain(&self) -> &Chain {
        self.chain.get_or_init(|| {
            let wat: PathBuf = self.dir.path().join("hostile.wat");
            let config = toolgate::Config::from_hooks(
                [toolgate::config::HookDef::wasm("hostile", &wat)],
                self.dir.path(),
                &toolgate::wasm::WasmOptions::new(),
            )
            .unwrap_or_else(|e| panic!("the hostile guest does not load: {e}"));
            Chain {
                runtime: current_thread(),
                runner: toolgate::HookRunner::builder().config(config).build(),
            }
        })
    }

    /// Hands `data` to the guest as its answer (the chain's decision is
    /// returned), and to `guest_verdict` as a decision.
    pub fn run(&self, data: &[u8]) -> Decision {
        let data = &data[..data.len().min(GUEST_MAX)];
        let chain = self.chain();
        let hex: String = data.iter().map(|b| format!("{b:02x}")).collect();
        let request = Request::pre("fuzz", Value::String(hex));
        let outcome = chain.runtime.block_on(chain.runner.pre_tool_use(&request));
        // Memory the guest did not write is zero (a fresh instance per call).
        let byte = |at: usize| data.get(at).copied().unwrap_or(0);
        let ok_case = |case: u8| byte(RESULT_CASE) == 0 && byte(DECISION_CASE) == case;
        let allowed = match &outcome.decision {
            Decision::Deny { .. } => true,
            // ok(verdict{allow, context: none | some(…)}) and nothing else.
            Decision::Allow => ok_case(0) && byte(CONTEXT_CASE) <= 1,
            Decision::Modify { .. } => ok_case(2),
            Decision::Replace { .. } => ok_case(3),
            Decision::Ask { .. } => ok_case(4),
        };
        assert!(
            allowed,
            "the guest's bytes {:02x?} became {:?}",
            &data[..data.len().min(32)],
            outcome.decision
        );
        guest_verdict(data);
        outcome.decision
    }
}

/// The runtime a target drives its chain on, made in the fuzzing child
/// (wasmtime's epoch thread does not survive a fork).
fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

impl Default for GuestTarget {
    fn default() -> Self {
        GuestTarget::new()
    }
}

/// `guest_verdict` on a decision made from the bytes: `data[0]` picks the
/// case, `data[1]` whether there is a context (bit 0) and `is_error`
/// (bit 1); the rest (lossy UTF-8) is the case's text, and the context.
fn guest_verdict(data: &[u8]) {
    let [case, flags, rest @ ..] = data else {
        return;
    };
    let text = String::from_utf8_lossy(rest).into_owned();
    let decision = match case % 5 {
        0 => GuestDecision::Allow,
        1 => GuestDecision::Deny(text.clone()),
        2 => GuestDecision::Modify(text.clone()),
        4 => GuestDecision::Ask(text.clone()),
        _ => GuestDecision::Replace {
            output: text.clone(),
            is_error: flags & 2 != 0,
        },
    };
    let context = (flags & 1 != 0).then(|| text.clone());
    let read = fuzzing::guest_verdict(decision.clone(), context.clone());
    match (&decision, &read) {
        (GuestDecision::Allow, Ok(v)) => assert_eq!(
            v,
            &Verdict {
                decision: Decision::Allow,
                context,
            }
        ),
        (
            GuestDecision::Deny(_),
            Ok(Verdict {
                decision: Decision::Deny { reason },
                ..
            }),
        ) => assert!(!reason.trim().is_empty(), "a deny without a reason"),
        (
            GuestDecision::Ask(_),
            Ok(Verdict {
                decision:
                    Decision::Ask {
                        reason,
                        input: None,
                    },
                ..
            }),
        ) => assert!(!reason.trim().is_empty(), "an ask without a reason"),
        (
            GuestDecision::Modify(_),
            Ok(Verdict {
                decision: Decision::Modify { .. },
                ..
            }),
        )
        | (
            GuestDecision::Replace { .. },
            Ok(Verdict {
                decision: Decision::Replace { .. },
                ..
            }),
        )
        | (GuestDecision::Modify(_) | GuestDecision::Replace { .. }, Err(_)) => {}
        _ => panic!("{decision:?} was read as {read:?}"),
    }
}

/// The `mcp` target: the MCP proxy's message handling (`toolgate mcp`), a
/// stream of lines from both sides (the first byte of each says which:
/// even, the client; odd, the server) through a chain that refuses every
/// call but `get` and judges every result. No refused call is forwarded,
/// nothing forwarded has duplicate keys, and no server result reaches the
/// client unjudged (`toolgate_mcp::fuzzing` says exactly).
pub fn mcp(data: &[u8]) {
    let broken = toolgate_mcp::fuzzing::exchange(data);
    assert!(broken.is_empty(), "{broken:#?}");
    let broken = toolgate_mcp::fuzzing::exchange_events(data);
    assert!(broken.is_empty(), "over HTTP: {broken:#?}");
}

// ---------------------------------------------------------------------------
// module
// ---------------------------------------------------------------------------

/// The exports the hook world's core module must have (as
/// `crates/toolgate-wasm/src/wat.rs` builds them): wasm-smith makes a
/// module with exactly these, and whatever else the bytes ask for.
const MODULE_EXPORTS: &str = r#"(module
  (memory (export "memory") 1)
  (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32) unreachable)
  (func (export "decide") (param i32) (result i32) unreachable))"#;

/// The proposals SECURITY.md says a guest may use (class 24), restated
/// here as the oracle rather than read from the engine: a module that
/// needs anything else must be refused at load.
const LISTED: wasmparser::WasmFeatures = wasmparser::WasmFeatures::WASM2
    .difference(wasmparser::WasmFeatures::GC_TYPES)
    .union(wasmparser::WasmFeatures::TAIL_CALL)
    .union(wasmparser::WasmFeatures::EXTENDED_CONST)
    .union(wasmparser::WasmFeatures::MULTI_MEMORY)
    .union(wasmparser::WasmFeatures::RELAXED_SIMD)
    .union(wasmparser::WasmFeatures::MEMORY64);

/// The `module` target: the bytes drive wasm-smith to make a core module
/// with the hook's exports and *every* proposal it knows (GC, exceptions,
/// threads, wide arithmetic, custom page sizes, …), printed as a `.wat`
/// hook and loaded as a repository's would be, through a `HookRunner`. A
/// module is a guest's whole body, so this reaches what the `guest`
/// target's fixed code cannot: validation, compilation and every runtime
/// path a module can make wasmtime take (the class of SECURITY.md 24, an
/// abort there, is a crash AFL records). Invariants: a module that needs a
/// proposal off the list never loads; one that loads is decided within
/// the limits, whatever it does.
#[derive(Debug)]
pub struct ModuleTarget {
    dir: tempfile::TempDir,
    exports: Vec<u8>,
    runtime: OnceLock<tokio::runtime::Runtime>,
}

impl ModuleTarget {
    /// Makes the folder the hook is written to.
    pub fn new() -> ModuleTarget {
        let dir = tempfile::Builder::new()
            .prefix("toolgate-fuzz-module.")
            .tempdir()
            .expect("a temporary directory");
        ModuleTarget {
            dir,
            exports: wat::parse_str(MODULE_EXPORTS).expect("the exports module"),
            runtime: OnceLock::new(),
        }
    }

    /// Makes the module `data` describes and runs it as a hook: `None`
    /// when the bytes make no module or the module is refused at load,
    /// else the chain's decision.
    ///
    /// The first byte's low six bits say what off the list wasm-smith may
    /// use (GC, exceptions, threads, custom page sizes, wide arithmetic,
    /// and reference types, with which it makes `externref`, a GC type):
    /// with none, it makes modules a guest may run, which wasm-smith would
    /// otherwise rarely make, since it reaches for GC types early.
    pub fn run(&self, data: &[u8]) -> Option<Decision> {
        let (&off_list, data) = data.split_first()?;
        let may = |bit: u8| off_list & (1 << bit) != 0;
        let config = wasm_smith::Config {
            exports: Some(self.exports.clone()),
            max_imports: 0,
            max_funcs: 20,
            max_instructions: 200,
            gc_enabled: may(0),
            exceptions_enabled: may(1),
            threads_enabled: may(2),
            custom_page_sizes_enabled: may(3),
            wide_arithmetic_enabled: may(4),
            reference_types_enabled: may(5),
            max_memory32_bytes: 1 << 26,
            max_memory64_bytes: 1 << 26,
            ..wasm_smith::Config::default()
        };
        let mut bytes = arbitrary::Unstructured::new(data);
        let module = wasm_smith::Module::new(config, &mut bytes).ok()?;
        let binary = module.to_bytes();
        let listed = wasmparser::Validator::new_with_features(LISTED)
            .validate_all(&binary)
            .is_ok();
        let text = wasmprinter::print_bytes(&binary).ok()?;
        let wat = self.dir.path().join("fuzzed.wat");
        std::fs::write(&wat, &text).expect("the hook's file");
        let config = toolgate::Config::from_hooks(
            [toolgate::config::HookDef::wasm("fuzzed", &wat)],
            self.dir.path(),
            &toolgate::wasm::WasmOptions::new(),
        )
        .ok()?;
        assert!(
            listed,
            "a module that needs a proposal off the list was loaded:\n{text}"
        );
        let runtime = self.runtime.get_or_init(current_thread);
        let runner = toolgate::HookRunner::builder().config(config).build();
        let request = Request::pre("fuzz", json!({"command": "ls"}));
        Some(runtime.block_on(runner.pre_tool_use(&request)).decision)
    }
}

impl Default for ModuleTarget {
    fn default() -> Self {
        ModuleTarget::new()
    }
}
