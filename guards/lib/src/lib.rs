//! The standard guards' logic: what `toolgate:shell` and its siblings
//! decide, as plain Rust with no dependencies.
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

pub mod corpus;
pub mod paths;
pub mod shell;
pub mod shell_rules;
pub(crate) mod wrappers;

pub use shell_rules::{
    CLASSES as SHELL_CLASSES, Finding, OPTIONS as SHELL_OPTIONS, ShellOptions, check as check_shell,
};
