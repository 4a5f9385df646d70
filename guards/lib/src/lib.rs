//! The standard guards' logic: what `toolgate:shell` and its siblings
//! decide, as plain Rust whose one dependency is serde_json (a tool call's input is JSON).
//!
//! # Why a library apart from the components
//!
//! Each guard ships as a WebAssembly component (`guards/<name>/`), so it
//! runs sandboxed and fuel-limited like any hook and is the same artefact
//! on every machine. Its logic lives here, outside the component, for two
//! reasons: the rules are tested natively in the workspace's `cargo test`
//! (a wasm build is minutes; a unit test is milliseconds), and the
//! labeled corpora that measure them (`corpus`) are read by the same code
//! in `toolgate bench --guards`, which runs the built components. Nothing
//! here does I/O: a guard sees only its request.
//!
//! Each guard is a module with the same three things: `CLASSES` (what it
//! refuses or redacts, by name), `OPTIONS` (its hooks.json `config`, which
//! the published schema is made from) and `decide` (a [`guard::Call`] and
//! its config to a [`guard::Answer`]).

pub mod corpus;
pub mod egress;
pub mod file_rules;
pub mod guard;
pub mod paths;
pub mod secrets;
pub mod shell;
pub mod shell_rules;
pub mod taint;
pub mod tools;
pub(crate) mod wrappers;

pub use shell_rules::{
    CLASSES as SHELL_CLASSES, Finding, OPTIONS as SHELL_OPTIONS, ShellOptions, check as check_shell,
};

/// One standard guard, as hooks.json's `use` names it (`toolgate:NAME`).
#[derive(Debug)]
pub struct Guard {
    /// Its name after `toolgate:`.
    pub name: &'static str,
    /// What it guards, in one line.
    pub about: &'static str,
    /// Its options (each a list of strings), with what each means.
    pub options: &'static [(&'static str, &'static str)],
    /// The classes it refuses or redacts (what `allow_classes` takes).
    pub classes: &'static [&'static str],
    /// The events (wire names) it is consulted on when its hook gives no
    /// `event`: the ones it has something to say on.
    pub events: &'static [&'static str],
}

/// Every standard guard: the one list the binary's `use`, the published
/// schema and the book's tables are made from.
pub const GUARDS: &[Guard] = &[
    Guard {
        name: "shell",
        about: "destructive and dangerous shell commands",
        options: shell_rules::OPTIONS,
        classes: shell_rules::CLASSES,
        events: &["pre_tool_use"],
    },
    Guard {
        name: "paths",
        about: "reads and writes of secrets, writes outside the workspace",
        options: file_rules::OPTIONS,
        classes: file_rules::CLASSES,
        events: &["pre_tool_use"],
    },
    Guard {
        name: "secrets",
        about: "credentials redacted from what the model is shown, refused in what it writes",
        options: secrets::OPTIONS,
        classes: secrets::CLASSES,
        events: &["pre_tool_use", "post_tool_use"],
    },
    Guard {
        name: "egress",
        about: "network destinations against an allowlist of hosts",
        options: egress::OPTIONS,
        classes: egress::CLASSES,
        events: &["pre_tool_use"],
    },
    Guard {
        name: "taint",
        about: "after a secret is read, nothing leaves over the network for the rest of the session",
        options: taint::OPTIONS,
        classes: taint::CLASSES,
        events: &["pre_tool_use", "post_tool_use"],
    },
];
