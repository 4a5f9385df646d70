//! Test guests: real components built at test time from WAT, with
//! toolgate's WIT embedded by `wit-component`, so `cargo test` needs no
//! external toolchain.
//!
//! Each guest is a core module implementing the canonical ABI of
//! `decide: func(request) -> result<verdict, string>` by hand. The request
//! (26 flat values) arrives as a pointer into guest memory; the result is
//! written to a fixed area and returned by pointer. Layout of the result
//! (offsets from `RET`):
//!
//! ```text
//! 0   result tag (0 ok, 1 err)      err: 4 ptr, 8 len
//! 4   decision tag (0 allow, 1 deny, 2 modify, 3 replace, 4 ask)
//! 8   string ptr | replace: output ptr
//! 12  string len | replace: output len
//! 16  replace: is-error
//! 20  context tag (0 none, 1 some)
//! 24  context ptr
//! 28  context len
//! ```
//!
//! Request layout (offsets from the argument pointer): event 0; hook 4/8;
//! tool 12/16; input 20/24; result tag 28, output 32/36, is-error 40;
//! session-id 44 tag, 48/52; turn-id 56; tool-call-id 68; cwd 80; config 92
//! tag, 96/100.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// `cabi_realloc` for test guests: a bump allocator from 64 KiB up that grows
/// memory as needed and frees nothing (each call gets a fresh instance).
const REALLOC: &str = r#"(global $bump (mut i32) (i32.const 65536))
  (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32)
    (local $at i32)
    (local.set $at (i32.and (i32.add (global.get $bump) (i32.sub (local.get 2) (i32.const 1)))
                            (i32.xor (i32.sub (local.get 2) (i32.const 1)) (i32.const -1))))
    (global.set $bump (i32.add (local.get $at) (local.get 3)))
    (block $ok
      (br_if $ok (i32.le_u (global.get $bump) (i32.mul (memory.size) (i32.const 65536))))
      (drop (memory.grow (i32.add (i32.div_u (i32.sub (global.get $bump) (i32.mul (memory.size) (i32.const 65536))) (i32.const 65536)) (i32.const 1)))))
    (local.get $at))"#;

/// Where the result area lives in guest memory.
const RET: u32 = 512;
/// Where string data segments start.
const DATA: u32 = 4096;

/// What a guest answers.
pub(crate) enum Verdict<'a> {
    Allow,
    Deny(&'a str),
    Modify(&'a str),
    Replace(&'a str, bool),
    Ask(&'a str),
    Err(&'a str),
}

/// A guest: what it does before answering, what it answers, and any context.
pub(crate) struct Guest<'a> {
    /// WAT instructions run first in `decide` (`$args` is the request pointer).
    pub(crate) prelude: &'a str,
    /// Extra module fields (functions, globals).
    pub(crate) fields: &'a str,
    pub(crate) answer: Verdict<'a>,
    pub(crate) context: Option<&'a str>,
}

impl<'a> Guest<'a> {
    pub(crate) fn answering(answer: Verdict<'a>) -> Self {
        Guest {
            prelude: "",
            fields: "",
            answer,
            context: None,
        }
    }

    pub(crate) fn wat(&self) -> String {
        let mut data = Vec::new();
        let mut next = DATA;
        let mut place = |s: &str| {
            let at = next;
            data.push(format!("(data (i32.const {at}) \"{}\")", escape(s)));
            next += s.len() as u32 + 8;
            (at, s.len())
        };
        let mut body = String::new();
        let store =
            |off: u32, val: String| format!("(i32.store (i32.const {}) {val})\n", RET + off);
        let store8 = |off: u32, val: u32| {
            format!("(i32.store8 (i32.const {}) (i32.const {val}))\n", RET + off)
        };
        match &self.answer {
            Verdict::Allow => body += &store8(4, 0),
            Verdict::Deny(s) | Verdict::Modify(s) | Verdict::Ask(s) => {
                let (at, len) = place(s);
                let tag = match self.answer {
                    Verdict::Deny(_) => 1,
                    Verdict::Modify(_) => 2,
                    _ => 4,
                };
                body += &store8(4, tag);
                body += &store(8, format!("(i32.const {at})"));
                body += &store(12, format!("(i32.const {len})"));
            }
            Verdict::Replace(s, is_error) => {
                let (at, len) = place(s);
                body += &store8(4, 3);
                body += &store(8, format!("(i32.const {at})"));
                body += &store(12, format!("(i32.const {len})"));
                body += &store8(16, u32::from(*is_error));
            }
            Verdict::Err(s) => {
                let (at, len) = place(s);
                body += &store8(0, 1);
                body += &store(4, format!("(i32.const {at})"));
                body += &store(8, format!("(i32.const {len})"));
            }
        }
        if let Some(context) = self.context {
            let (at, len) = place(context);
            body += &store8(20, 1);
            body += &store(24, format!("(i32.const {at})"));
            body += &store(28, format!("(i32.const {len})"));
        }
        format!(
            r#"(module
  (memory (export "memory") 1)
  {REALLOC}
  {fields}
  (func (export "decide") (param $args i32) (result i32)
    {prelude}
    {body}
    (i32.const {RET}))
  {data}
)"#,
            REALLOC = REALLOC,
            fields = self.fields,
            prelude = self.prelude,
            data = data.join("\n  "),
        )
    }

    /// Builds the component and writes it to `dir/name.wasm`.
    pub(crate) fn write(&self, dir: &Path, name: &str) -> PathBuf {
        self.write_for(dir, name, World::Hook)
    }

    /// [`Guest::write`], built against `world`.
    pub(crate) fn write_for(&self, dir: &Path, name: &str, world: World) -> PathBuf {
        let path = dir.join(format!("{name}.wasm"));
        std::fs::write(&path, component(&self.wat(), world)).unwrap();
        path
    }
}

fn escape(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'"' | b'\\' => format!("\\{}", b as char),
            0x20..=0x7e => (b as char).to_string(),
            _ => format!("\\{b:02x}"),
        })
        .collect()
}

/// Which world a test guest is built against.
#[derive(Clone, Copy)]
pub(crate) enum World {
    /// `toolgate:hook/hook`: exports `decide`, imports nothing.
    Hook,
    /// The same world as `toolgate:hook@0.1.0` declared it (before `ask`),
    /// frozen beside the host (crates/toolgate-wasm/wit/0.1.0).
    HookV0_1,
    /// `toolgate:hook@0.2.0` (before `list-tools`), frozen beside the host.
    HookV0_2,
    /// `toolgate:probe/probe` (tests/guests/wit): the hook world plus WASI
    /// imports, to probe what a guest can reach.
    Probe,
    /// The hook world plus an import toolgate does not provide.
    Http,
    /// The hook world plus a monotonic clock to block on.
    Sleeper,
}

/// Turns a core module in WAT into a component for `world`.
pub(crate) fn component(wat: &str, world: World) -> Vec<u8> {
    let mut module = wat::parse_str(wat).unwrap_or_else(|e| panic!("bad WAT: {e}\n{wat}"));
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut resolve = wit_parser::Resolve::default();
    let hook_pkg = resolve.push_dir(root.join("wit")).expect("wit/ parses").0;
    let (pkg, name) = match world {
        World::Hook => (hook_pkg, "hook"),
        World::HookV0_1 => (
            resolve
                .push_dir(root.join("crates/toolgate-wasm/wit/0.1.0"))
                .expect("the frozen 0.1.0 wit parses")
                .0,
            "hook",
        ),
        World::HookV0_2 => (
            resolve
                .push_dir(root.join("crates/toolgate-wasm/wit/0.2.0"))
                .expect("the frozen 0.2.0 wit parses")
                .0,
            "hook",
        ),
        World::Probe => (
            resolve
                .push_dir(root.join("tests/guests/wit"))
                .expect("test wit parses")
                .0,
            "probe",
        ),
        World::Http => (
            resolve
                .push_dir(root.join("tests/guests/wit"))
                .expect("test wit parses")
                .0,
            "needs-http",
        ),
        World::Sleeper => (
            resolve
                .push_dir(root.join("tests/guests/wit"))
                .expect("test wit parses")
                .0,
            "sleeper",
        ),
    };
    let world = resolve
        .select_world(&[pkg], Some(name))
        .expect("world exists");
    wit_component::embed_component_metadata(
        &mut module,
        &resolve,
        world,
        wit_component::StringEncoding::UTF8,
    )
    .expect("metadata embeds");
    wit_component::ComponentEncoder::default()
        .module(&module)
        .expect("module accepted")
        .validate(true)
        .encode()
        .expect("component encodes")
}

/// A directory of the standard test guests, built once per test run.
pub(crate) fn dir() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        build_all(dir.path());
        write_import_guests(dir.path());
        dir
    })
    .path()
}

/// The path of a standard test guest.
pub(crate) fn path(name: &str) -> PathBuf {
    let path = dir().join(format!("{name}.wasm"));
    assert!(path.exists(), "no test guest named {name}");
    path
}

fn build_all(dir: &Path) {
    use Verdict::*;
    Guest::answering(Allow).write(dir, "allow");
    Guest::answering(Deny("no force-pushing from a sandbox")).write(dir, "deny");
    Guest::answering(Modify(r#"{"command":"git push --dry-run"}"#)).write(dir, "modify");
    Guest::answering(Modify("this is not json")).write(dir, "modify-not-json");
    Guest::answering(Replace(r#"{"files":["a","b"]}"#, false)).write(dir, "replace");
    Guest::answering(Replace("<<not json>>", false)).write(dir, "replace-not-json");
    Guest::answering(Err("config lacks `allowed`")).write(dir, "guest-error");
    Guest::answering(Ask("deleting needs a person")).write(dir, "ask");
    // Built against the previous version of the world, before `ask`.
    Guest::answering(Deny("an old guard still guards")).write_for(
        dir,
        "deny-0.1.0",
        World::HookV0_1,
    );
    Guest::answering(Modify(r#"{"command":"git status"}"#)).write_for(
        dir,
        "modify-0.1.0",
        World::HookV0_1,
    );
    // Built against 0.2.0, before `list-tools`.
    Guest::answering(Allow).write_for(dir, "allow-0.2.0", World::HookV0_2);
    Guest {
        context: Some("this call was checked by a wasm guard"),
        ..Guest::answering(Allow)
    }
    .write(dir, "allow-with-context");
    let big = "c".repeat(20_000);
    Guest {
        context: Some(&big),
        ..Guest::answering(Allow)
    }
    .write(dir, "big-context");
    Guest {
        prelude: "(loop $forever (br $forever))",
        ..Guest::answering(Allow)
    }
    .write(dir, "infinite-loop");
    Guest {
        // Grows 1 MiB at a time until growth fails; then answers allow.
        prelude: "(loop $more (br_if $more (i32.ne (memory.grow (i32.const 16)) (i32.const -1))))",
        ..Guest::answering(Allow)
    }
    .write(dir, "memory-bomb");
    Guest {
        fields: "(func $down (param i32) (result i32) (call $down (i32.add (local.get 0) (i32.const 1))))",
        prelude: "(drop (call $down (i32.const 0)))",
        ..Guest::answering(Allow)
    }
    .write(dir, "recursion");
    Guest {
        // Counts a global down from 400,000: about 2.4 million fuel, past
        // the server's slow-lane line (1 million), then denies.
        fields: "(global $left (mut i32) (i32.const 400000))",
        prelude: "(loop $more
                    (global.set $left (i32.sub (global.get $left) (i32.const 1)))
                    (br_if $more (global.get $left)))",
        ..Guest::answering(Deny("slow guard"))
    }
    .write(dir, "slow-deny");
    Guest {
        prelude: "unreachable",
        ..Guest::answering(Allow)
    }
    .write(dir, "unreachable");
    Guest {
        // Counts calls in a global: a fresh instance per call always sees 1.
        fields: "(global $calls (mut i32) (i32.const 0))",
        prelude: "(global.set $calls (i32.add (global.get $calls) (i32.const 1)))
                  (if (i32.ne (global.get $calls) (i32.const 1))
                    (then (i32.store8 (i32.const 516) (i32.const 1))
                          (i32.store (i32.const 520) (i32.const 4096))
                          (i32.store (i32.const 524) (i32.const 12))
                          (return (i32.const 512))))",
        ..Guest::answering(Allow)
    }
    .write_with_data(dir, "counter", "state leaked");
    Guest {
        // Denies with the request's input as the reason and its config as
        // context, so tests can see exactly what crossed the boundary.
        prelude: "(i32.store8 (i32.const 516) (i32.const 1))
                  (i32.store (i32.const 520) (i32.load (i32.add (local.get $args) (i32.const 20))))
                  (i32.store (i32.const 524) (i32.load (i32.add (local.get $args) (i32.const 24))))
                  (i32.store8 (i32.const 532) (i32.load8_u (i32.add (local.get $args) (i32.const 92))))
                  (i32.store (i32.const 536) (i32.load (i32.add (local.get $args) (i32.const 96))))
                  (i32.store (i32.const 540) (i32.load (i32.add (local.get $args) (i32.const 100))))
                  (return (i32.const 512))",
        ..Guest::answering(Allow)
    }
    .write(dir, "echo");
    // The post-event view: denies with the result's output when there is one.
    Guest {
        prelude: "(if (i32.load8_u (i32.add (local.get $args) (i32.const 28)))
                    (then (i32.store8 (i32.const 516) (i32.const 1))
                          (i32.store (i32.const 520) (i32.load (i32.add (local.get $args) (i32.const 32))))
                          (i32.store (i32.const 524) (i32.load (i32.add (local.get $args) (i32.const 36))))
                          (return (i32.const 512))))",
        ..Guest::answering(Allow)
    }
    .write(dir, "echo-result");
    // Guests that say why they are about to fail (the world's only import),
    // as the Rust SDK's panic hook and the C SDK's assert do, and then trap,
    // answer after all, or run out of fuel.
    let say = format!(
        "(call $about_to_fail (i32.const {DATA}) (i32.const {}))",
        EXPLANATION.len()
    );
    for (name, then) in [
        ("explained-trap", "unreachable"),
        ("explained-then-allows", ""),
        ("explained-then-loops", "(loop $forever (br $forever))"),
    ] {
        Guest {
            prelude: &format!("{say}\n{then}"),
            ..Guest::answering(Allow)
        }
        .write_explaining(dir, name);
    }
}

/// What the `explained-*` guests tell toolgate before they fail.
pub(crate) const EXPLANATION: &str =
    "hook panicked at src/lib.rs:9:13: index out of bounds: the len is 2 but the index is 7";

impl Guest<'_> {
    /// Like `write`, with one extra string placed at `DATA` for the prelude.
    fn write_with_data(&self, dir: &Path, name: &str, text: &str) -> PathBuf {
        let wat = self.wat().replacen(
            "\n)",
            &format!("\n  (data (i32.const {DATA}) \"{}\")\n)", escape(text)),
            1,
        );
        let path = dir.join(format!("{name}.wasm"));
        std::fs::write(&path, component(&wat, World::Hook)).unwrap();
        path
    }

    /// Like `write`, importing the world's session state as `$session_get`
    /// (key ptr, len, return area) and `$session_put` (key ptr, len, value
    /// tag, ptr, len, return area), in the canonical ABI's lowering.
    pub(crate) fn write_keeping(&self, dir: &Path, name: &str) -> PathBuf {
        let wat = self.wat().replacen(
            "(module",
            "(module\n  (import \"$root\" \"session-get\" (func $session_get (param i32 i32 i32)))\n  \
             (import \"$root\" \"session-put\" (func $session_put (param i32 i32 i32 i32 i32 i32)))",
            1,
        );
        let path = dir.join(format!("{name}.wasm"));
        std::fs::write(&path, component(&wat, World::Hook)).unwrap();
        path
    }

    /// Like `write`, importing the world's `about-to-fail` as
    /// `$about_to_fail`, with [`EXPLANATION`] at `DATA`.
    fn write_explaining(&self, dir: &Path, name: &str) -> PathBuf {
        let wat = self
            .wat()
            .replacen(
                "(module",
                "(module\n  (import \"$root\" \"about-to-fail\" (func $about_to_fail (param i32 i32)))",
                1,
            )
            .replacen(
                "\n)",
                &format!("\n  (data (i32.const {DATA}) \"{}\")\n)", escape(EXPLANATION)),
                1,
            );
        let path = dir.join(format!("{name}.wasm"));
        std::fs::write(&path, component(&wat, World::Hook)).unwrap();
        path
    }
}

/// The reason template the probe fills in: each `?` becomes a digit.
pub(crate) const PROBE_TEMPLATE: &str = "preopens=? env=? args=? tcp=?? stdin=??";

/// A guest that tries everything a sandbox escape would need, through real
/// WASI imports, and reports what it got as its denial reason: the number of
/// preopened directories, environment variables and arguments; the result tag
/// and error code of creating a TCP socket; the result tag and stream-error
/// case of reading stdin. It also writes to stdout (with a terminal escape).
fn probe_wat() -> String {
    let digit = |n: usize| {
        let pos = PROBE_TEMPLATE.match_indices('?').nth(n).unwrap().0;
        DATA as usize + pos
    };
    let message = "probe: hello \u{1b}[31mred\u{1b}[0m\n";
    let msg_at = DATA + 256;
    format!(
        r#"(module
  (import "wasi:filesystem/preopens@0.2.12" "get-directories" (func $preopens (param i32)))
  (import "wasi:cli/environment@0.2.12" "get-environment" (func $env (param i32)))
  (import "wasi:cli/environment@0.2.12" "get-arguments" (func $args (param i32)))
  (import "wasi:sockets/tcp-create-socket@0.2.12" "create-tcp-socket" (func $tcp (param i32 i32)))
  (import "wasi:cli/stdin@0.2.12" "get-stdin" (func $stdin (result i32)))
  (import "wasi:io/streams@0.2.12" "[method]input-stream.blocking-read" (func $read (param i32 i64 i32)))
  (import "wasi:cli/stdout@0.2.12" "get-stdout" (func $stdout (result i32)))
  (import "wasi:io/streams@0.2.12" "[method]output-stream.blocking-write-and-flush" (func $write (param i32 i32 i32 i32)))
  (memory (export "memory") 1)
  {REALLOC}
  (func $digit (param $at i32) (param $n i32)
    (if (i32.gt_u (local.get $n) (i32.const 9)) (then (local.set $n (i32.const 9))))
    (i32.store8 (local.get $at) (i32.add (i32.const 48) (local.get $n))))
  (func (export "decide") (param $args i32) (result i32)
    (call $preopens (i32.const 1024))
    (call $digit (i32.const {d0}) (i32.load (i32.const 1028)))
    (call $env (i32.const 1032))
    (call $digit (i32.const {d1}) (i32.load (i32.const 1036)))
    (call $args (i32.const 1040))
    (call $digit (i32.const {d2}) (i32.load (i32.const 1044)))
    (call $tcp (i32.const 0) (i32.const 1048))
    (call $digit (i32.const {d3}) (i32.load8_u (i32.const 1048)))
    (call $digit (i32.const {d4}) (i32.load8_u (i32.const 1052)))
    (call $read (call $stdin) (i64.const 100) (i32.const 1064))
    (call $digit (i32.const {d5}) (i32.load8_u (i32.const 1064)))
    (call $digit (i32.const {d6}) (i32.load8_u (i32.const 1068)))
    (call $write (call $stdout) (i32.const {msg_at}) (i32.const {msg_len}) (i32.const 1088))
    (i32.store8 (i32.const 516) (i32.const 1))
    (i32.store (i32.const 520) (i32.const {DATA}))
    (i32.store (i32.const 524) (i32.const {tlen}))
    (i32.const 512))
  (data (i32.const {DATA}) "{template}")
  (data (i32.const {msg_at}) "{message}")
)"#,
        REALLOC = REALLOC,
        d0 = digit(0),
        d1 = digit(1),
        d2 = digit(2),
        d3 = digit(3),
        d4 = digit(4),
        d5 = digit(5),
        d6 = digit(6),
        msg_len = message.len(),
        tlen = PROBE_TEMPLATE.len(),
        template = escape(PROBE_TEMPLATE),
        message = escape(message),
    )
}

/// A guest that imports `wasi:http`, which toolgate does not provide.
fn http_wat() -> &'static str {
    r#"(module
  (import "wasi:http/outgoing-handler@0.2.0" "handle" (func (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32) (i32.const 8192))
  (func (export "decide") (param i32) (result i32) (i32.const 512))
)"#
}

/// Builds the guests whose worlds import WASI or more.
pub(crate) fn write_import_guests(dir: &Path) {
    std::fs::write(
        dir.join("probe.wasm"),
        component(&probe_wat(), World::Probe),
    )
    .unwrap();
    std::fs::write(
        dir.join("needs-http.wasm"),
        component(http_wat(), World::Http),
    )
    .unwrap();
    std::fs::write(
        dir.join("sleeper.wasm"),
        component(SLEEPER_WAT, World::Sleeper),
    )
    .unwrap();
}

/// A guest that blocks in a host call (a 30 s monotonic-clock wait), where
/// no epoch check can interrupt it.
const SLEEPER_WAT: &str = r#"(module
  (import "wasi:clocks/monotonic-clock@0.2.12" "subscribe-duration" (func $after (param i64) (result i32)))
  (import "wasi:io/poll@0.2.12" "[method]pollable.block" (func $block (param i32)))
  (memory (export "memory") 1)
  (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32) (i32.const 8192))
  (func (export "decide") (param i32) (result i32)
    (call $block (call $after (i64.const 30000000000)))
    (i32.const 512))
)"#;
