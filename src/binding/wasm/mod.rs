//! The WebAssembly component binding: portable guards that run in
//! microseconds, in a fresh sandbox per call, with no ambient authority.
//!
//! # Why components, and why a fresh instance per call
//!
//! A hook compiled to a component (`wit/hook.wit`, world `toolgate:hook/hook`)
//! runs without fork/exec, on any machine, in any language that targets the
//! component model — and it can do nothing but decide, which (with the
//! runner's re-judgement of rewrites) is the sense in which it is safe to take
//! from a repository; SECURITY.md says exactly what it can and cannot do. Each call gets a new `Store` and a new instance from
//! the hook's `InstancePre`, so no state (a counter, a cache, a secret seen in
//! an earlier call) survives from one call to the next; the pooling allocator
//! with copy-on-write memory images keeps that cheap.
//!
//! # Limits and the threat each answers
//!
//! | limit | default | answers |
//! |---|---|---|
//! | `fuel` (instructions, roughly) | [`DEFAULT_FUEL`] | a guest that loops forever or computes too long: `out_of_fuel`, deterministic on any machine |
//! | `timeout_ms` (wall clock) | [`DEFAULT_TIMEOUT_MS`] | a guest blocked in a host call, or with a huge fuel budget: epoch deadline → `timed_out` |
//! | `memory_mb` (linear memory) | [`DEFAULT_MEMORY_MB`] | a `memory.grow` bomb exhausting the host: `memory_limit`; the sum over all the call's memories |
//! | tables, instances, memories | see `host.rs` | table bombs, instance floods: `memory_limit` |
//! | text handed back | deny reason 4 KiB, error 4 KiB (the runner), rewrite 4 MiB | a 100 MiB reason filling the model's context |
//! | max wasm stack | 512 KiB | unbounded recursion: `stack_overflow` |
//! | guest stdout/stderr | 16 KiB kept | log floods: truncated, shown to the operator only |
//! | WASI | grants nothing | reading files, env, network: not available |
//!
//! Fuel consumed is reported in every run record.
//!
//! # Results
//!
//! The guest's `result<verdict, string>` maps onto the contract: `ok` is an
//! answer; `err(message)` is a `guest_error` failure (the hook could not
//! decide) and goes through `on_failure`. A `modify` whose input is not JSON,
//! or a `replace` whose output is not JSON, is an `unusable_rewrite`.

mod cache;
mod engine;
mod host;
mod spec;

pub use cache::{CacheOutcome, wasmtime_version};
pub use engine::{Allocator, AllocatorInfo, EPOCH_TICK, MAX_MEMORY_MB, MAX_WASM_STACK};
pub(crate) use spec::CONFIG;
pub use spec::WasmSpec;

use crate::binding::{Decider, Metrics, Reply};
use crate::contract::{Decision, Event, HookRequest, ToolResult, Verdict};
use crate::failure::HookFailure;
use engine::Runtime;
use host::HostState;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmtime::Store;

/// Default fuel per call: about 0.1 s of compute, far more than any decision
/// needs, far less than a runaway loop would take.
pub const DEFAULT_FUEL: u64 = 100_000_000;
/// Largest `fuel` a hook may ask for.
pub const MAX_FUEL: u64 = 100_000_000_000;
/// Default linear-memory limit per call, in MiB: room for a JS or Python
/// runtime's heap.
pub const DEFAULT_MEMORY_MB: u64 = 128;
/// Default wall-clock backstop for wasm hooks, in ms.
pub const DEFAULT_TIMEOUT_MS: u64 = 1_000;

pub(crate) mod bindings {
    wasmtime::component::bindgen!({
        path: "wit",
        world: "hook",
        exports: { default: async },
    });
}

use bindings::{Decision as WitDecision, Event as WitEvent, Hook, HookPre, Request as WitRequest};

/// Why a component could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadComponentError {
    /// The file could not be read (missing, not a regular file, too large).
    #[error("{}", path.display())]
    Read {
        /// The path.
        path: PathBuf,
        /// Why, without any of the file's content.
        #[source]
        source: crate::safe_fs::ReadFileError,
    },
    /// The wasm engine could not be created.
    #[error("the WebAssembly engine is unavailable: {0}")]
    Engine(String),
    /// Not a valid component, or compilation failed.
    #[error("not a loadable WebAssembly component: {0}")]
    Compile(String),
    /// It imports something toolgate does not provide, or does not export
    /// `decide` with toolgate's types.
    #[error("{0}")]
    Link(String),
}

/// What loading a component found, for listings and benchmarks.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ComponentInfo {
    /// Size of the component file.
    pub bytes: u64,
    /// How the compiled code was obtained.
    pub cache: CacheOutcome,
    /// Why the compile cache was not used, when it was not trusted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_warning: Option<String>,
    /// How long loading took (read, hash, compile or deserialize, link; not
    /// the one-time engine start).
    #[serde(rename = "load_us", serialize_with = "crate::runner::micros")]
    pub load_time: Duration,
    /// What the component imports (empty for a zero-import build).
    pub imports: Vec<String>,
    /// The identity of the file whose bytes were loaded (taken before they
    /// were read and checked after; see [`crate::config::FileIdentity`]),
    /// for a program that reloads when the file changes.
    #[serde(skip)]
    pub identity: Option<crate::config::FileIdentity>,
}

/// A loaded, pre-instantiated component hook. Opaque: it is run by the chain.
pub struct WasmHook {
    runtime: Arc<Runtime>,
    pre: HookPre<HostState>,
    fuel: u64,
    memory_bytes: usize,
    timeout: Duration,
    config_json: Option<String>,
    /// Whether the guest imports anything it could block in.
    may_block: bool,
    /// Something the operator should see on every call (an untrusted cache).
    load_warning: Option<String>,
}

impl std::fmt::Debug for WasmHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WasmHook")
            .field("fuel", &self.fuel)
            .field("memory_bytes", &self.memory_bytes)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// Where compiled components are cached and which engine runs them: the
/// embedding program's choice (the `toolgate` binary reads
/// `TOOLGATE_CACHE_DIR` and `TOOLGATE_WASM_ALLOCATOR`; the library reads no
/// environment).
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct WasmOptions {
    /// The compile cache's directory; `None` compiles in memory every load.
    pub cache_dir: Option<PathBuf>,
    /// The instance allocator.
    pub allocator: Allocator,
    /// Told a line before and after a component is compiled (not when it
    /// comes from the cache), for a person watching; `None` says nothing.
    pub progress: Option<fn(&str)>,
    /// Debug builds only, for the tests that race a swap against a load:
    /// called with a component's path after its bytes were read and before
    /// their identity is recorded (in the stat index, in a server's stamps).
    #[cfg(debug_assertions)]
    #[doc(hidden)]
    pub after_read: Option<fn(&Path)>,
}

impl WasmOptions {
    /// No cache, the pooling allocator.
    pub fn new() -> Self {
        WasmOptions::default()
    }

    /// Caches compiled components in `dir` (checked as SECURITY.md says).
    pub fn cache_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cache_dir = Some(dir.into());
        self
    }

    /// Uses `allocator`.
    pub fn allocator(mut self, allocator: Allocator) -> Self {
        self.allocator = allocator;
        self
    }

    /// Tells `progress` when a component is being compiled.
    pub fn progress(mut self, progress: fn(&str)) -> Self {
        self.progress = Some(progress);
        self
    }

    /// Debug builds only: calls `pause` between reading a component and
    /// recording its identity (see the field).
    #[cfg(debug_assertions)]
    #[doc(hidden)]
    pub fn after_read(mut self, pause: fn(&Path)) -> Self {
        self.after_read = Some(pause);
        self
    }
}

/// A component hook's per-call limits.
pub(crate) struct Limits {
    pub(crate) fuel: u64,
    pub(crate) memory_mb: u64,
    pub(crate) timeout_ms: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            fuel: DEFAULT_FUEL,
            memory_mb: DEFAULT_MEMORY_MB,
            timeout_ms: DEFAULT_TIMEOUT_MS,
        }
    }
}

/// Compiles (or fetches from the cache) and pre-instantiates a component.
pub(crate) fn load(
    path: &Path,
    options: &WasmOptions,
    limits: Limits,
    config: Option<&serde_json::Value>,
) -> Result<(WasmHook, ComponentInfo), LoadComponentError> {
    let cache_dir = options.cache_dir.as_deref();
    let runtime = engine::runtime(options.allocator).map_err(LoadComponentError::Engine)?;
    let started = Instant::now();
    let is_wat = path.extension().is_some_and(|e| e == "wat");
    let limit = if is_wat {
        crate::safe_fs::MAX_WAT_BYTES
    } else {
        crate::safe_fs::MAX_COMPONENT_BYTES
    };
    // A one-shot process's common case: the stat index names the content
    // hash, the entry is intact, and nothing of the component is read.
    if !is_wat
        && let Some(dir) = cache_dir
        && let Some((hash, identity)) = cache::known_hash(dir, path)
        && let Some(component) = cache::load_hit(&runtime.engine, dir, &hash)
    {
        let loaded = cache::Loaded {
            component,
            outcome: CacheOutcome::Hit,
            warning: None,
        };
        let size = identity.size();
        return finish(runtime, loaded, (size, identity), started, (limits, config));
    }
    // The identity of exactly these bytes: whatever replaces the file from
    // here on (while it compiles) is not recorded under it.
    let (bytes, identity) = crate::safe_fs::read_identified(path, limit).map_err(|source| {
        LoadComponentError::Read {
            path: path.to_owned(),
            source,
        }
    })?;
    #[cfg(debug_assertions)]
    if let Some(pause) = options.after_read {
        pause(path);
    }
    let bytes = if is_wat {
        let text = std::str::from_utf8(&bytes).map_err(|e| {
            LoadComponentError::Compile(format!(
                "the .wat file is not UTF-8 text (invalid byte at offset {})",
                e.valid_up_to()
            ))
        })?;
        component_from_wat(text).map_err(|e| {
            LoadComponentError::Compile(format!("cannot build a component from the WAT: {e}"))
        })?
    } else {
        // Checked here so that wasmparser's message (which prints the
        // file's first bytes) is never reached for a file that is not wasm.
        check_component_header(&bytes)?;
        bytes
    };
    let loaded = cache::load(
        &runtime.engine,
        cache_dir,
        &bytes,
        options
            .progress
            .map(|say| (say, path.display().to_string()))
            .as_ref()
            .map(|(say, label)| (*say, label.as_str())),
    )
    .map_err(|e| LoadComponentError::Compile(format!("{e:#}")))?;
    if !is_wat
        && let Some(dir) = cache_dir
        && loaded.outcome != CacheOutcome::Uncached
    {
        cache::remember_hash(dir, path, &identity, &blake3::hash(&bytes));
    }
    let size = bytes.len() as u64;
    finish(runtime, loaded, (size, identity), started, (limits, config))
}

/// Links a loaded component and wraps it as a hook.
fn finish(
    runtime: Arc<Runtime>,
    loaded: cache::Loaded,
    (size, identity): (u64, crate::config::FileIdentity),
    started: Instant,
    (limits, config): (Limits, Option<&serde_json::Value>),
) -> Result<(WasmHook, ComponentInfo), LoadComponentError> {
    let Limits {
        fuel,
        memory_mb,
        timeout_ms,
    } = limits;
    let cache::Loaded {
        component,
        outcome,
        warning: cache_warning,
    } = loaded;
    let imports: Vec<String> = component
        .component_type()
        .imports(&runtime.engine)
        .map(|(name, _)| name.to_owned())
        .collect();
    let linker = if imports.is_empty() {
        &runtime.bare_linker
    } else {
        runtime.wasi_linker().map_err(LoadComponentError::Engine)?
    };
    let instance_pre = linker.instantiate_pre(&component).map_err(|e| {
        LoadComponentError::Link(format!(
            "the component imports something toolgate does not provide (hooks get \
                 only WASI preview 2, with nothing granted): {e:#}"
        ))
    })?;
    let pre = HookPre::new(instance_pre).map_err(|e| {
        LoadComponentError::Link(format!(
            "the component does not export toolgate:hook@0.1.0's `decide`: {e:#}"
        ))
    })?;
    let info = ComponentInfo {
        bytes: size,
        cache: outcome,
        cache_warning: cache_warning.clone(),
        load_time: started.elapsed(),
        imports,
        identity: Some(identity),
    };
    let hook = WasmHook {
        load_warning: cache_warning,
        may_block: !info.imports.is_empty(),
        runtime,
        pre,
        fuel,
        memory_bytes: usize::try_from(memory_mb << 20).unwrap_or(usize::MAX),
        timeout: Duration::from_millis(timeout_ms),
        config_json: config.map(|c| c.to_string()),
    };
    Ok((hook, info))
}

/// Loads a component as `options` say and reports how: for measuring cold
/// compiles against cache hits. Only `bench` (behind `cli`) measures.
#[cfg(feature = "cli")]
pub(crate) fn load_component(
    path: &Path,
    options: &WasmOptions,
) -> Result<ComponentInfo, LoadComponentError> {
    load(path, options, Limits::default(), None).map(|(_, info)| info)
}

/// Resident memory each live instance of a component costs, in bytes:
/// instantiates `count` at once (each having answered one call, so its
/// memory is touched as a real call touches it) and divides the growth of
/// this process's resident set by `count`.
#[cfg(feature = "cli")]
pub(crate) async fn resident_bytes_per_instance(
    path: &Path,
    options: &WasmOptions,
    count: usize,
) -> Result<u64, String> {
    let (hook, _) = load(path, options, Limits::default(), None).map_err(|e| e.to_string())?;
    let request = WitRequest {
        event: WitEvent::PreToolUse,
        hook: "probe".into(),
        tool: "shell".into(),
        input: r#"{"command":"ls"}"#.into(),
        result: None,
        session_id: None,
        turn_id: None,
        tool_call_id: None,
        cwd: None,
        config: None,
    };
    let before = resident_bytes().ok_or("cannot read /proc/self/statm")?;
    let mut live = Vec::with_capacity(count);
    for _ in 0..count {
        let mut store = Store::new(
            &hook.runtime.engine,
            HostState::new(hook.memory_bytes, Instant::now() + hook.timeout),
        );
        store.limiter(|state| &mut state.limiter);
        store.set_fuel(hook.fuel).map_err(|e| e.to_string())?;
        store.set_epoch_deadline(u64::MAX / 2);
        let instance = hook
            .pre
            .instantiate_async(&mut store)
            .await
            .map_err(|e| format!("{e:#}"))?;
        let _ = instance
            .call_decide(&mut store, &request)
            .await
            .map_err(|e| format!("{e:#}"))?;
        live.push(store);
    }
    let after = resident_bytes().ok_or("cannot read /proc/self/statm")?;
    drop(live);
    Ok(after.saturating_sub(before) / count.max(1) as u64)
}

#[cfg(feature = "cli")]
fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

const REFERENCE_WAT: &str = r#"(module
  (memory (export "memory") 1)
  (global $bump (mut i32) (i32.const 1024))
  (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32)
    (local $at i32)
    (local.set $at (global.get $bump))
    (global.set $bump (i32.and (i32.add (i32.add (local.get $at) (local.get 3)) (i32.const 7)) (i32.const -8)))
    (local.get $at))
  (func (export "decide") (param i32) (result i32) (i32.const 512)))"#;

/// The smallest possible hook component: it answers `allow` without reading
/// its request. Built in-process from WAT with toolgate's WIT embedded, so
/// benchmarks and self-checks have a guest with no toolchain at all; what it
/// costs per call is the floor of what any wasm hook costs.
pub fn reference_guest() -> Vec<u8> {
    // The input is a constant of this crate: a failure here is a bug in
    // toolgate, caught by the test suite, not something a user controls.
    component_from_wat(REFERENCE_WAT)
        .unwrap_or_else(|e| panic!("toolgate's reference guest does not build: {e}"))
}

/// The 8-byte preamble of a component (`\0asm`, version 0x0d, layer 1) or a
/// core module (`\0asm`, version 1), told apart without quoting a byte.
fn check_component_header(bytes: &[u8]) -> Result<(), LoadComponentError> {
    const COMPONENT: [u8; 8] = [0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];
    const MODULE: [u8; 8] = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00];
    match bytes.get(..8) {
        Some(h) if h == COMPONENT => Ok(()),
        Some(h) if h == MODULE => Err(LoadComponentError::Compile(
            "this is a core WebAssembly module, not a component; wrap it with \
             `wasm-tools component new` (after `wasm-tools component embed wit/ --world hook`), \
             or give a `.wat` that implements the canonical ABI"
                .into(),
        )),
        Some(h) if h[..4] == COMPONENT[..4] => Err(LoadComponentError::Compile(
            "a WebAssembly binary of a version or layer this toolgate does not read".into(),
        )),
        _ => Err(LoadComponentError::Compile(
            "not a WebAssembly component (the file does not start with the `\\0asm` header)".into(),
        )),
    }
}

/// Builds a hook component from a core module in WebAssembly text that
/// implements the canonical ABI of `decide` by hand, embedding toolgate's
/// WIT. This is what a `"wasm": "guard.wat"` hook is loaded through: small
/// guards need no toolchain at all.
///
/// A syntax error is reported by line and column only: the text may be a
/// file someone symlinked to a secret, and the error may reach the model.
pub(crate) fn component_from_wat(wat: &str) -> Result<Vec<u8>, String> {
    let mut module = wat_to_module(wat)?;
    let mut resolve = wit_parser::Resolve::default();
    let pkg = resolve
        .push_str("hook.wit", include_str!("../../../wit/hook.wit"))
        .map_err(|e| e.to_string())?;
    let world = resolve
        .select_world(&[pkg], Some("hook"))
        .map_err(|e| e.to_string())?;
    wit_component::embed_component_metadata(
        &mut module,
        &resolve,
        world,
        wit_component::StringEncoding::UTF8,
    )
    .map_err(|e| e.to_string())?;
    wit_component::ComponentEncoder::default()
        .module(&module)
        .map_err(|e| format!("{e:#}"))?
        .validate(true)
        .encode()
        .map_err(|e| format!("{e:#}"))
}

fn wat_to_module(text: &str) -> Result<Vec<u8>, String> {
    let at = |e: wast::Error| {
        let (line, col) = e.span().linecol_in(text);
        format!(
            "not valid WebAssembly text at line {}, column {} (`wasm-tools parse` on the \
             file gives the full message)",
            line + 1,
            col + 1
        )
    };
    let buf = wast::parser::ParseBuffer::new(text).map_err(at)?;
    let mut wat = wast::parser::parse::<wast::Wat<'_>>(&buf).map_err(at)?;
    wat.encode().map_err(at)
}

/// Engine facts for reports: allocator, limits, versions.
pub fn engine_info(options: &WasmOptions) -> Result<serde_json::Value, String> {
    let runtime = engine::runtime(options.allocator)?;
    Ok(serde_json::json!({
        "wasmtime": wasmtime_version(),
        "allocator": runtime.allocator,
        "fuel": true,
        "epoch_tick_ms": EPOCH_TICK.as_millis() as u64,
        "max_wasm_stack": MAX_WASM_STACK,
        "cache_dir": options.cache_dir,
    }))
}

#[async_trait::async_trait]
impl Decider for WasmHook {
    async fn decide(&self, request: &HookRequest<'_>) -> Reply {
        let _running = self.runtime.running();
        let deadline = Instant::now() + self.timeout;
        let mut store = Store::new(
            &self.runtime.engine,
            HostState::new(self.memory_bytes, deadline),
        );
        store.limiter(|state| &mut state.limiter);
        if let Err(e) = store.set_fuel(self.fuel) {
            return Reply::from(Err(HookFailure::Trap {
                message: format!("{e:#}"),
            }));
        }
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(|ctx| {
            if Instant::now() >= ctx.data().deadline {
                Ok(wasmtime::UpdateDeadline::Interrupt)
            } else {
                Ok(wasmtime::UpdateDeadline::Yield(1))
            }
        });

        let wit_request = to_wit(request, self.config_json.as_deref());
        let call = async {
            let hook: Hook = self.pre.instantiate_async(&mut store).await?;
            hook.call_decide(&mut store, &wit_request).await
        };
        // The epoch callback stops a computing guest; the async timeout stops
        // one blocked in a host call (a WASI poll), where no epoch check runs.
        // A zero-import guest has no host call to block in, so it skips the
        // timer.
        let result = if self.may_block {
            tokio::time::timeout(self.timeout + EPOCH_TICK * 2, call).await
        } else {
            Ok(call.await)
        };
        let answer = match result {
            Err(_elapsed) => Err(timed_out(self.timeout)),
            Ok(Ok(Ok(verdict))) => from_wit(verdict),
            Ok(Ok(Err(message))) => Err(HookFailure::GuestError { message }),
            Ok(Err(error)) => Err(classify(&error, store.data().limiter.hit, self.timeout)),
        };
        Reply {
            answer,
            diagnostics: store.data().log.take(),
            warning: self.load_warning.clone(),
            metrics: store
                .get_fuel()
                .ok()
                .map(|left| ("fuel_used", self.fuel.saturating_sub(left)))
                .into_iter()
                .collect::<Metrics>(),
        }
    }
}

fn timed_out(timeout: Duration) -> HookFailure {
    HookFailure::TimedOut {
        timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
        escalated: false,
    }
}

/// Names a trap or host error from a guest call.
fn classify(error: &wasmtime::Error, memory_limit_hit: bool, timeout: Duration) -> HookFailure {
    let message = format!("{error:#}");
    // The limiter's own refusals, wasmtime's per-store counts (instances,
    // memories, tables) and the pooling allocator's per-slot bounds.
    if memory_limit_hit
        || message.contains("resource limit exceeded")
        || message.contains("exceeds the limit of")
    {
        return HookFailure::MemoryLimit { message };
    }
    match error.downcast_ref::<wasmtime::Trap>() {
        Some(wasmtime::Trap::OutOfFuel) => HookFailure::OutOfFuel,
        Some(wasmtime::Trap::StackOverflow) => HookFailure::StackOverflow,
        Some(wasmtime::Trap::Interrupt) => timed_out(timeout),
        _ => HookFailure::Trap {
            message: format!("{error:#}"),
        },
    }
}

pub(crate) fn to_wit(request: &HookRequest<'_>, config: Option<&str>) -> WitRequest {
    WitRequest {
        event: match request.event {
            Event::PreToolUse => WitEvent::PreToolUse,
            Event::PostToolUse => WitEvent::PostToolUse,
        },
        hook: request.hook.to_owned(),
        tool: request.tool.to_owned(),
        input: request.input.to_string(),
        result: request.result.map(|r| bindings::ToolResult {
            output: r.output.to_string(),
            is_error: r.is_error,
        }),
        session_id: request.session_id.map(str::to_owned),
        turn_id: request.turn_id.map(str::to_owned),
        tool_call_id: request.tool_call_id.map(str::to_owned),
        cwd: request.cwd.map(str::to_owned),
        config: config.map(str::to_owned),
    }
}

/// Largest `modify` input or `replace` output a guest may hand back: the
/// same bound a subprocess hook's whole answer has.
const MAX_REWRITE_BYTES: usize = crate::binding::command::STDOUT_CAP;

pub(crate) fn from_wit(verdict: bindings::Verdict) -> Result<Verdict, HookFailure> {
    let unusable = |what: &str, e: serde_json::Error| HookFailure::UnusableRewrite {
        detail: format!("{what} is not JSON: {e}"),
    };
    let oversized = |what: &str, len: usize| HookFailure::UnusableRewrite {
        detail: format!(
            "{what} is {len} bytes, more than the {MAX_REWRITE_BYTES} a hook may hand back"
        ),
    };
    match &verdict.decision {
        WitDecision::Modify(input) if input.len() > MAX_REWRITE_BYTES => {
            return Err(oversized("the `modify` input", input.len()));
        }
        WitDecision::Replace(result) if result.output.len() > MAX_REWRITE_BYTES => {
            return Err(oversized("the `replace` output", result.output.len()));
        }
        _ => {}
    }
    let decision = match verdict.decision {
        WitDecision::Allow => Decision::Allow,
        WitDecision::Deny(reason) => Decision::Deny {
            reason: if reason.trim().is_empty() {
                "denied by a hook that gave no reason".to_owned()
            } else {
                reason
            },
        },
        WitDecision::Modify(input) => Decision::Modify {
            input: serde_json::from_str(&input).map_err(|e| unusable("the `modify` input", e))?,
        },
        WitDecision::Replace(result) => Decision::Replace {
            result: ToolResult {
                output: serde_json::from_str(&result.output)
                    .map_err(|e| unusable("the `replace` output", e))?,
                is_error: result.is_error,
            },
        },
    };
    Ok(Verdict {
        decision,
        context: verdict.context,
    })
}
