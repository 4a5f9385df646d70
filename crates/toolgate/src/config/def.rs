//! Hooks built in code ([`HookDef`]): a builder over the same fields a
//! hooks.json entry has, so a hook made in code passes exactly the checks
//! a file's does (there is no second, typed path that could drift).

use crate::contract::Event;
use crate::failure::OnFailure;
use crate::protocol::Inward;
use serde_json::{Map, Value, json};
use std::path::Path;

/// A hook built in code, with the fields a hooks.json entry has. It is
/// validated and loaded by exactly the rules a file is
/// ([`Config::from_hooks`](super::Config::from_hooks)), so a test or an embedding program gets a real
/// participant without writing a file.
///
/// ```no_run
/// # fn demo() -> Result<(), toolgate::ConfigError> {
/// use toolgate::config::{Config, HookDef};
/// use toolgate::wasm::WasmOptions;
/// let config = Config::from_hooks(
///     [
///         HookDef::command("guard", ["python3", "guard.py"]).tools(["Bash"]),
///         HookDef::wasm("redact", "hooks/redact.wasm").fuel(1_000_000),
///     ],
///     std::path::Path::new("."),
///     &WasmOptions::new(),
/// )?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct HookDef {
    pub(super) fields: Map<String, Value>,
}

impl HookDef {
    fn new(name: &str, key: &str, value: Value) -> Self {
        let mut fields = Map::new();
        fields.insert("name".into(), json!(name));
        fields.insert(key.into(), value);
        HookDef { fields }
    }

    fn with(mut self, key: &str, value: Value) -> Self {
        self.fields.insert(key.into(), value);
        self
    }

    /// A hook of the binding `key` selects (`"command"`, `"wasm"`), given
    /// as hooks.json would give it: a binding needs no method here to be
    /// built in code.
    pub fn of(name: &str, key: &str, value: Value) -> Self {
        HookDef::new(name, key, value)
    }

    /// Any field a hooks.json entry has (a binding's own, say), as JSON:
    /// checked exactly as a file's would be.
    pub fn field(self, key: &str, value: Value) -> Self {
        self.with(key, value)
    }

    /// A subprocess hook running `argv`.
    pub fn command<S: Into<String>>(name: &str, argv: impl IntoIterator<Item = S>) -> Self {
        let argv: Vec<String> = argv.into_iter().map(Into::into).collect();
        HookDef::new(name, "command", json!(argv))
    }

    /// A WebAssembly component hook (a `.wasm` component or a `.wat` file).
    pub fn wasm(name: &str, path: impl AsRef<Path>) -> Self {
        HookDef::new(name, "wasm", json!(path.as_ref().to_string_lossy()))
    }

    /// A guard toolgate ships, by the name `use` gives it (`"toolgate:shell"`).
    pub fn guard(name: &str, guard: &str) -> Self {
        HookDef::new(name, "use", json!(guard))
    }

    /// The events it is consulted for (default: before the call).
    pub fn events(self, events: &[Event]) -> Self {
        let names: Vec<&str> = events.iter().map(|e| e.as_str()).collect();
        self.with("event", json!(names))
    }

    /// Exact tool names it applies to.
    pub fn tools<S: Into<String>>(self, tools: impl IntoIterator<Item = S>) -> Self {
        let tools: Vec<String> = tools.into_iter().map(Into::into).collect();
        self.with("tools", json!(tools))
    }

    /// A whole-name regex of tools it applies to.
    pub fn matcher(self, pattern: &str) -> Self {
        self.with("matcher", json!(pattern))
    }

    /// Its deadline.
    pub fn timeout_ms(self, ms: u64) -> Self {
        self.with("timeout_ms", json!(ms))
    }

    /// What a failure becomes (default: deny).
    pub fn on_failure(self, policy: OnFailure) -> Self {
        self.with("on_failure", json!(policy.as_str()))
    }

    /// Its `config`, handed to it in every request.
    pub fn config(self, config: Value) -> Self {
        self.with("config", config)
    }

    /// A command hook's protocol (default: wire v1).
    pub fn protocol(self, protocol: Inward) -> Self {
        self.with("protocol", json!(protocol.to_string()))
    }

    /// A component's fuel per call.
    pub fn fuel(self, fuel: u64) -> Self {
        self.with("fuel", json!(fuel))
    }

    /// A component's linear-memory limit per call, in MiB.
    pub fn memory_mb(self, mb: u64) -> Self {
        self.with("memory_mb", json!(mb))
    }
}
