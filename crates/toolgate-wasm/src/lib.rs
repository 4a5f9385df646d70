//! The WebAssembly component binding: portable guards that run in
//! microseconds, in a fresh sandbox per call, with no ambient authority.
//!
//! # Why a crate of its own
//!
//! wasmtime, Cranelift, the compile cache and the OCI client are most of
//! what toolgate compiles. An embedder who runs only in-process and
//! subprocess hooks builds none of it: the library (`toolgate`) takes this
//! crate only with its `wasm` feature. This crate knows the seam
//! (`toolgate-seam`) and the contract, never the chain.
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
//! | a workspace's share of the pool | a quarter; the operator keeps a quarter (`share.rs`) | one repository's guest, called in parallel, taking every pool slot from other workspaces and the operator's guards: waits for its share, then `trap` saying why |
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
//! or a `replace` whose output is not JSON, is an `unusable_rewrite`. That
//! translation is [`wit`]'s, a pure mapping like wire v1's, which the
//! library's round-trip test checks against every other encoding.
//!
//! A failed call is named from what wasmtime hands back (a typed
//! [`wasmtime::Trap`], the limiter's record, the phase it failed in), never
//! from the text of its message: see `classify`.

mod builtin;
mod cache;
mod compile;
mod engine;
mod host;
mod lane;
/// Only the bench (the toolgate-bench crate) measures.
mod measure;
pub mod oci;
mod share;
mod spec;
mod wat;
pub mod wit;

// The layers below, under the names the modules were written against.
use toolgate_contract::{contract, failure, outcome, text};
use toolgate_fs as safe_fs;
use toolgate_seam::signing;

pub use builtin::USE_CONFIG;
pub use cache::{CacheOutcome, wasmtime_version};
pub use engine::{
    Allocator, AllocatorInfo, EPOCH_TICK, MAX_MEMORY_MB, MAX_WASM_STACK, StartEngineError,
};
pub use measure::{MeasureMemoryError, resident_bytes_per_instance};
pub use spec::CONFIG;
pub use spec::WasmSpec;
// The bench's agent section builds its guard from WAT.
pub use wat::{BuildComponentError, component_from_wat, reference_guest};

use crate::contract::HookRequest;
use crate::failure::HookFailure;
use engine::Runtime;
use host::HostState;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolgate_contract::session::StateChanges;
use toolgate_seam::{Decider, Metrics, Reply};
use wasmtime::Store;

/// The hook world's own imports, which every linker defines and which grant
/// nothing beyond the hook's own session state (see `host.rs`): not counted
/// among a component's imports.
const WORLD_IMPORTS: [&str; 3] = ["about-to-fail", "session-get", "session-put"];

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

use crate::wit::{
    Speaks, bindings, request_v0_1, request_v0_2, v0_1, v0_2, verdict_from_v0_1, verdict_from_v0_2,
};
use crate::wit::{from_wit, to_wit};

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
    /// The wasm engine could not be started.
    #[error("the WebAssembly engine is unavailable")]
    Engine(#[source] StartEngineError),
    /// The file is not a component (a core module, another binary version,
    /// not WebAssembly at all).
    #[error("not a loadable WebAssembly component")]
    Format(#[source] NotAComponent),
    /// A `.wat` that does not build into a hook component.
    #[error("not a loadable WebAssembly component")]
    Wat(#[source] BuildComponentError),
    /// wasmtime could not compile the component.
    #[error("not a loadable WebAssembly component")]
    Compile(#[source] wasmtime::Error),
    /// It imports something toolgate does not provide.
    #[error(
        "the component imports something toolgate does not provide (hooks get only WASI \
         preview 2, with nothing granted)"
    )]
    Link(#[source] wasmtime::Error),
    /// Its signature was refused (signing is required, or the hook gives
    /// `signed`): checked before anything is compiled or looked up in the
    /// compile cache.
    #[error("signature refused")]
    Signature(#[source] crate::signing::VerifySignatureError),
    /// A pulled component's stored bytes are not the ones the manifest it
    /// was pulled by names: the cache was changed after the pull.
    #[error(
        "{} is sha256:{actual}, not the sha256:{expected} its manifest names: it was changed \
         after it was pulled (remove its directory to pull it again)",
        path.display()
    )]
    Tampered {
        /// The stored component.
        path: PathBuf,
        /// The manifest's digest for it.
        expected: String,
        /// What the bytes hash to.
        actual: String,
    },
    /// It does not export `decide` with toolgate's types: built against
    /// another world, or another version of the WIT (see `wit/hook.wit`).
    #[error(
        "the component does not export toolgate:hook@0.3.0's `decide` (nor that of 0.2.0 or \
         0.1.0, the earlier versions toolgate still loads)"
    )]
    Export(#[source] wasmtime::Error),
}

/// Why a file is not a component, told from its 8-byte preamble without
/// quoting a byte of it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NotAComponent {
    /// A core module (`\0asm`, version 1).
    #[error(
        "this is a core WebAssembly module, not a component; wrap it with \
         `wasm-tools component new` (after `wasm-tools component embed wit/ --world hook`), \
         or give a `.wat` that implements the canonical ABI"
    )]
    CoreModule,
    /// A WebAssembly binary of another version or layer.
    #[error("a WebAssembly binary of a version or layer this toolgate does not read")]
    OtherVersion,
    /// No `\0asm` header.
    #[error("not a WebAssembly component (the file does not start with the `\\0asm` header)")]
    NotWasm,
}

/// What loading a component found, for listings and benchmarks.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ComponentInfo {
    /// Size of the component file.
    pub bytes: u64,
    /// How the compiled code was obtained.
    pub cache: CacheOutcome,
    /// Why the compile cache was not used, when it was not trusted; for an
    /// `oci://` component, also that its tag could not be resolved now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_warning: Option<String>,
    /// How long loading took (read, hash, compile or deserialize, link; not
    /// the one-time engine start).
    #[serde(rename = "load_us", serialize_with = "crate::outcome::micros")]
    pub load_time: Duration,
    /// What the component imports besides the hook world's own
    /// `about-to-fail` (empty for a build that imports no WASI).
    pub imports: Vec<String>,
    /// The instance allocator its calls use: `pooling`, or `on_demand`
    /// (asked for, a one-shot process, no pool on this machine, or a
    /// `memory_mb` larger than the pool's slots).
    pub allocator: &'static str,
    /// The identity of the file whose bytes were loaded (taken before they
    /// were read and checked after; see [`crate::safe_fs::FileIdentity`]),
    /// for a program that reloads when the file changes.
    #[serde(skip)]
    pub identity: Option<crate::safe_fs::FileIdentity>,
    /// The signature that verified, when one was checked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signature: Option<crate::signing::Verified>,
    /// The `.minisig` read, with the identity of its bytes, for a program
    /// that reloads when it changes.
    #[serde(skip)]
    pub signature_file: Option<(PathBuf, crate::safe_fs::FileIdentity)>,
}

/// A loaded, pre-instantiated component hook. Opaque: it is run by the chain.
pub struct WasmHook {
    runtime: Arc<Runtime>,
    pre: Speaks<HostState>,
    fuel: u64,
    memory_bytes: usize,
    timeout: Duration,
    config_json: Option<String>,
    /// Whether the guest imports anything it could block in.
    may_block: bool,
    /// Something the operator should see on every call (an untrusted cache).
    load_warning: Option<String>,
    /// Where its next call runs.
    lane: lane::Lane,
    /// Its calls' share of the pool (`share`).
    share: share::Share,
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
    /// How `oci://` components are pulled (stored under `cache_dir`).
    pub oci: oci::OciOptions,
    /// Whether guests that have proven slow run on low-priority threads of
    /// their own (see `lane.rs`): for a server answering many callers.
    pub slow_lane: bool,
    /// Debug builds only, for the tests that race a swap against a load:
    /// called with a component's path after its bytes were read and before
    /// their identity is recorded (in the stat index, in a server's stamps).
    #[cfg(debug_assertions)]
    #[doc(hidden)]
    pub after_read: Option<fn(&Path)>,
}

/// The options a loader carries for the wasm binding, given alone
/// (`Config::from_hooks(hooks, root, &WasmOptions::new())`).
impl From<&WasmOptions> for toolgate_seam::parse::BindingOptions {
    fn from(options: &WasmOptions) -> Self {
        Self::new().with(options.clone())
    }
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

    /// Pulls `oci://` components as `oci` says.
    pub fn oci(mut self, oci: oci::OciOptions) -> Self {
        self.oci = oci;
        self
    }

    /// Runs guests that have proven slow on low-priority threads of their
    /// own, so that they never hold up a fast guest's call.
    pub fn slow_lane(mut self) -> Self {
        self.slow_lane = true;
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

/// What one call of a component hook may spend: instructions (fuel), linear
/// memory, and wall-clock time.
pub(crate) struct CallBudget {
    pub(crate) fuel: u64,
    pub(crate) memory_mb: u64,
    pub(crate) timeout_ms: u64,
    /// Whose share of the pool its calls take (`share`).
    pub(crate) owner: share::Owner,
}

impl Default for CallBudget {
    fn default() -> Self {
        CallBudget {
            fuel: DEFAULT_FUEL,
            memory_mb: DEFAULT_MEMORY_MB,
            timeout_ms: DEFAULT_TIMEOUT_MS,
            owner: share::Owner::Operator,
        }
    }
}

/// A signature a component must carry before it is compiled.
pub(crate) struct SignatureCheck<'a> {
    /// The keys whose signatures count.
    pub(crate) keys: &'a [crate::signing::PinnedKey],
    /// The name and least version it must be signed with.
    pub(crate) expect: crate::signing::Expect,
    /// A workspace's root: the signature must resolve beneath it.
    pub(crate) beneath: Option<&'a Path>,
}

/// Compiles (or fetches from the cache) and pre-instantiates a component,
/// after verifying its signature when `signed` asks.
pub(crate) fn load(
    path: &Path,
    options: &WasmOptions,
    limits: CallBudget,
    config: Option<&serde_json::Value>,
    signed: Option<SignatureCheck<'_>>,
    pulled_as: Option<&str>,
) -> Result<(WasmHook, ComponentInfo), LoadComponentError> {
    let cache_dir = options.cache_dir.as_deref();
    let runtime = engine::runtime_for(options.allocator, limits.memory_mb)
        .map_err(LoadComponentError::Engine)?;
    let started = Instant::now();
    let is_wat = path.extension().is_some_and(|e| e == "wat");
    let limit = if is_wat {
        crate::safe_fs::MAX_WAT_BYTES
    } else {
        crate::safe_fs::MAX_COMPONENT_BYTES
    };
    // A one-shot process's common case: the stat index names the content
    // hash, the entry is intact, and nothing of the component is read. Not
    // for a signed component: its bytes are verified first, every load.
    // Nor for a workspace's component on a pool: its share is counted in
    // its bytes (`share`), so they are read, and what runs is compiled
    // from (or found in the cache by the hash of) exactly those.
    let shared = limits.owner != share::Owner::Operator && runtime.pool_totals().is_some();
    if !is_wat
        && signed.is_none()
        && pulled_as.is_none()
        && !shared
        && let Some(dir) = cache_dir
        && let Some((hash, identity)) = cache::known_hash(dir, path)
        && let Some(component) = cache::load_hit(&runtime.engine, dir, &hash)
    {
        let loaded = cache::ObtainedComponent {
            component,
            outcome: CacheOutcome::Hit,
            warning: None,
        };
        let size = identity.size();
        return finish(
            (runtime, options.slow_lane),
            (loaded, None),
            (size, Some(identity)),
            started,
            (limits, config),
            None,
        );
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
    // These very bytes are checked against the manifest they were pulled
    // by (when asked), verified, then compiled and hashed for the cache:
    // nothing is read again in between.
    if let Some(expected) = pulled_as {
        let actual = oci::sha256_hex(&bytes).unwrap_or_default();
        if actual != expected {
            return Err(LoadComponentError::Tampered {
                path: path.to_owned(),
                expected: expected.to_owned(),
                actual,
            });
        }
    }
    let signature = signed
        .map(|check| verify_signature(path, &bytes, check))
        .transpose()?;
    let bytes = if is_wat {
        wat::component_from_wat_bytes(&bytes).map_err(LoadComponentError::Wat)?
    } else {
        // Checked here so that wasmparser's message (which prints the
        // file's first bytes) is never reached for a file that is not wasm.
        check_component_header(&bytes).map_err(LoadComponentError::Format)?;
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
    .map_err(LoadComponentError::Compile)?;
    if !is_wat
        && let Some(dir) = cache_dir
        && loaded.outcome != CacheOutcome::Uncached
    {
        cache::remember_hash(dir, path, &identity, &blake3::hash(&bytes));
    }
    let size = bytes.len() as u64;
    finish(
        (runtime, options.slow_lane),
        (loaded, Some(&bytes)),
        (size, Some(identity)),
        started,
        (limits, config),
        signature,
    )
}

/// Loads a guard built into toolgate (`use: "toolgate:NAME"`): its bytes
/// are the binary's own, so there is no file to read, verify or watch;
/// they are compiled (or found in the compile cache by their hash) like
/// any component's.
pub(crate) fn load_builtin(
    guard: &builtin::Guard,
    options: &WasmOptions,
    limits: CallBudget,
    config: Option<&serde_json::Value>,
) -> Result<(WasmHook, ComponentInfo), LoadComponentError> {
    let runtime = engine::runtime_for(options.allocator, limits.memory_mb)
        .map_err(LoadComponentError::Engine)?;
    let started = Instant::now();
    check_component_header(guard.bytes).map_err(LoadComponentError::Format)?;
    let label = format!("{}{}", builtin::SCHEME, guard.name);
    let loaded = cache::load(
        &runtime.engine,
        options.cache_dir.as_deref(),
        guard.bytes,
        options.progress.map(|say| (say, label.as_str())),
    )
    .map_err(LoadComponentError::Compile)?;
    finish(
        (runtime, options.slow_lane),
        (loaded, Some(guard.bytes)),
        (guard.bytes.len() as u64, None),
        started,
        (limits, config),
        None,
    )
}

/// A verified signature and the file it was read from.
type Signature = (
    crate::signing::Verified,
    (PathBuf, crate::safe_fs::FileIdentity),
);

/// Reads `<path>.minisig` and verifies it over `bytes`.
fn verify_signature(
    path: &Path,
    bytes: &[u8],
    check: SignatureCheck<'_>,
) -> Result<Signature, LoadComponentError> {
    let (text, sig_path, sig_identity) = crate::signing::read_signature(path, check.beneath)
        .map_err(LoadComponentError::Signature)?;
    let verified = crate::signing::verify(bytes, (&text, &sig_path), check.keys, &check.expect)
        .map_err(LoadComponentError::Signature)?;
    Ok((verified, (sig_path, sig_identity)))
}

/// Links a loaded component and wraps it as a hook.
fn finish(
    (runtime, slow_lane): (Arc<Runtime>, bool),
    (loaded, bytes): (cache::ObtainedComponent, Option<&[u8]>),
    (size, identity): (u64, Option<crate::safe_fs::FileIdentity>),
    started: Instant,
    (limits, config): (CallBudget, Option<&serde_json::Value>),
    signature: Option<Signature>,
) -> Result<(WasmHook, ComponentInfo), LoadComponentError> {
    let CallBudget {
        fuel,
        memory_mb,
        timeout_ms,
        owner,
    } = limits;
    let cache::ObtainedComponent {
        component,
        outcome,
        warning: cache_warning,
    } = loaded;
    let imports: Vec<String> = component
        .component_type()
        .imports(&runtime.engine)
        .map(|(name, _)| name.to_owned())
        .filter(|name| !WORLD_IMPORTS.contains(&name.as_str()))
        .collect();
    let linker = if imports.is_empty() {
        &runtime.bare_linker
    } else {
        runtime.wasi_linker().map_err(LoadComponentError::Engine)?
    };
    let instance_pre = linker
        .instantiate_pre(&component)
        .map_err(LoadComponentError::Link)?;
    // The current version first; an older one only when the current one's
    // types do not match, and the error names the current one's mismatch.
    let pre = match bindings::HookPre::new(instance_pre.clone()) {
        Ok(pre) => Speaks::Current(pre),
        Err(current) => match v0_2::HookPre::new(instance_pre.clone()) {
            Ok(pre) => Speaks::V0_2(pre),
            Err(_) => match v0_1::HookPre::new(instance_pre) {
                Ok(pre) => Speaks::V0_1(pre),
                Err(_) => return Err(LoadComponentError::Export(current)),
            },
        },
    };
    let info = ComponentInfo {
        bytes: size,
        cache: outcome,
        cache_warning: cache_warning.clone(),
        load_time: started.elapsed(),
        imports,
        allocator: runtime.allocator.kind,
        identity,
        signature: signature.as_ref().map(|(verified, _)| verified.clone()),
        signature_file: signature.map(|(_, file)| file),
    };
    let footprint = share::Footprint::of(&component, bytes);
    let share = share::Share::new(&owner, footprint, runtime.pool_totals());
    let hook = WasmHook {
        share,
        load_warning: cache_warning,
        may_block: !info.imports.is_empty(),
        runtime,
        pre,
        fuel,
        memory_bytes: usize::try_from(memory_mb << 20).unwrap_or(usize::MAX),
        timeout: Duration::from_millis(timeout_ms),
        config_json: config.map(|c| c.to_string()),
        lane: lane::Lane::new(slow_lane),
    };
    Ok((hook, info))
}

/// Loads a component as `options` say and reports how: for measuring cold
/// compiles against cache hits. Only the bench (toolgate-bench) measures.
pub fn load_component(
    path: &Path,
    options: &WasmOptions,
) -> Result<ComponentInfo, LoadComponentError> {
    load(path, options, CallBudget::default(), None, None, None).map(|(_, info)| info)
}

/// The 8-byte preamble of a component (`\0asm`, version 0x0d, layer 1) or a
/// core module (`\0asm`, version 1), told apart without quoting a byte.
fn check_component_header(bytes: &[u8]) -> Result<(), NotAComponent> {
    const COMPONENT: [u8; 8] = [0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];
    const MODULE: [u8; 8] = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00];
    match bytes.get(..8) {
        Some(h) if h == COMPONENT => Ok(()),
        Some(h) if h == MODULE => Err(NotAComponent::CoreModule),
        Some(h) if h[..4] == COMPONENT[..4] => Err(NotAComponent::OtherVersion),
        _ => Err(NotAComponent::NotWasm),
    }
}

/// Engine facts for reports: allocator, limits, versions.
pub fn engine_info(options: &WasmOptions) -> Result<serde_json::Value, StartEngineError> {
    let runtime = engine::runtime(options.allocator)?;
    Ok(serde_json::json!({
        "wasmtime": wasmtime_version(),
        "allocator": runtime.allocator,
        "pool_memory_slot_mb": runtime.pool_slot_mb,
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
        // Before the instance is made, and held until it is gone (the
        // store, dropped at the end of this call). Waited for half the
        // hook's timeout at most, so that a call that runs still has at
        // least half its time; the guest's deadline counts from when it
        // starts.
        let _share = match self
            .share
            .take(tokio::time::Instant::now() + self.timeout / 2)
            .await
        {
            Ok(held) => held,
            Err(message) => return Reply::from(Err(HookFailure::Trap { message })),
        };
        let deadline = Instant::now() + self.timeout;
        let mut store = Store::new(
            &self.runtime.engine,
            HostState::new(self.memory_bytes, deadline, request.state),
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

        let call = Call {
            store,
            request: to_wit(request, self.config_json.as_deref()),
            may_block: self.may_block,
            timeout: self.timeout,
            fuel: self.fuel,
        };
        let timeout = self.timeout;
        let done = if self.lane.slow() {
            // Only a call that leaves this thread needs its own handle on
            // the component.
            let pre = self.pre.clone();
            match lane::run(async move { call.run(&pre).await }).await {
                Ok(done) => done,
                Err(message) => return Reply::from(Err(HookFailure::Trap { message })),
            }
        } else {
            call.run(&self.pre).await
        };
        let answer = match done.result {
            Err(_elapsed) => Err(timed_out(timeout)),
            Ok(Ok(Ok(verdict))) => from_wit(verdict),
            Ok(Ok(Err(message))) => Err(HookFailure::GuestError { message }),
            Ok(Err(error)) => Err(explained(
                classify(error, done.memory_limit_hit, timeout),
                done.about_to_fail,
            )),
        };
        self.lane.record(done.fuel_used.unwrap_or(0));
        Reply {
            answer: answer.into(),
            diagnostics: done.log,
            warning: self.load_warning.clone(),
            state: done.state_writes,
            metrics: done
                .fuel_used
                .map(|used| ("fuel_used", used))
                .into_iter()
                .collect::<Metrics>(),
        }
    }
}

/// One guest call, owned, so that it can run on either lane.
struct Call {
    store: Store<HostState>,
    request: bindings::Request,
    may_block: bool,
    timeout: Duration,
    /// The fuel the store was given.
    fuel: u64,
}

/// What a finished call leaves, read out of its store before the store is
/// dropped on the thread it ran on: returning a large guest's memory slot
/// to the pool is part of its cost, and a slow guest's belongs on the slow
/// lane, not on the worker that awaits it.
struct Done {
    /// Timed out (the outer `Err`), failed, or answered.
    result:
        Result<Result<Result<bindings::Verdict, String>, GuestError>, tokio::time::error::Elapsed>,
    memory_limit_hit: bool,
    about_to_fail: Option<String>,
    log: Option<String>,
    state_writes: StateChanges,
    fuel_used: Option<u64>,
}

impl Call {
    /// Instantiates `pre` and calls the guest.
    async fn run(mut self, pre: &Speaks<HostState>) -> Done {
        let call = ask(pre, &mut self.store, self.request);
        // The epoch callback stops a computing guest; the async timeout stops
        // one blocked in a host call (a WASI poll), where no epoch check runs.
        // A zero-import guest has no host call to block in, so it skips the
        // timer.
        let result = if self.may_block {
            tokio::time::timeout(self.timeout + EPOCH_TICK * 2, call).await
        } else {
            Ok(call.await)
        };
        let fuel_used = self
            .store
            .get_fuel()
            .ok()
            .map(|left| self.fuel.saturating_sub(left));
        let state = self.store.data_mut();
        Done {
            result,
            memory_limit_hit: state.limiter.hit,
            about_to_fail: state.about_to_fail.take(),
            log: state.log.take(),
            state_writes: std::mem::take(&mut state.state_writes),
            fuel_used,
        }
    }
}

/// Instantiates the component and calls its `decide` in the types of the
/// version it speaks, reading its answer as today's.
async fn ask(
    pre: &Speaks<HostState>,
    store: &mut Store<HostState>,
    request: bindings::Request,
) -> Result<Result<bindings::Verdict, String>, GuestError> {
    match pre {
        Speaks::Current(pre) => {
            let hook = pre
                .instantiate_async(&mut *store)
                .await
                .map_err(GuestError::Instantiate)?;
            hook.call_decide(&mut *store, &request)
                .await
                .map_err(GuestError::Call)
        }
        Speaks::V0_2(pre) => {
            let asked = request_v0_2(request).map_err(GuestError::NotSpoken)?;
            let hook = pre
                .instantiate_async(&mut *store)
                .await
                .map_err(GuestError::Instantiate)?;
            let answer = hook
                .call_decide(&mut *store, &asked)
                .await
                .map_err(GuestError::Call)?;
            Ok(answer.map(verdict_from_v0_2))
        }
        Speaks::V0_1(pre) => {
            let asked = request_v0_1(request).map_err(GuestError::NotSpoken)?;
            let hook = pre
                .instantiate_async(&mut *store)
                .await
                .map_err(GuestError::Instantiate)?;
            let answer = hook
                .call_decide(&mut *store, &asked)
                .await
                .map_err(GuestError::Call)?;
            Ok(answer.map(verdict_from_v0_1))
        }
    }
}

fn timed_out(timeout: Duration) -> HookFailure {
    HookFailure::TimedOut {
        timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
        escalated: false,
    }
}

/// A trap the guest explained beforehand through `about-to-fail` (a Rust
/// panic, a C `assert`) is the guest's own error, with its message: the trap
/// itself (`unreachable`) says nothing an author can act on. Only a plain
/// trap is taken over; running out of fuel, time, memory or stack is the
/// host's limit, not something the guest chose, and keeps its own kind.
fn explained(failure: HookFailure, about_to_fail: Option<String>) -> HookFailure {
    match (failure, about_to_fail) {
        (HookFailure::Trap { .. }, Some(message)) => HookFailure::GuestError { message },
        (failure, _) => failure,
    }
}

/// Where a guest call failed: making its instance, or running `decide`.
enum GuestError {
    Instantiate(wasmtime::Error),
    Call(wasmtime::Error),
    /// Not called: its version has no name for the event.
    NotSpoken(HookFailure),
}

/// Names a failed guest call from what wasmtime hands back, never from its
/// message text:
///
/// - the store's limiter refused a memory or table (it records that it
///   did): `memory_limit`;
/// - a trap ([`wasmtime::Trap`]): out of fuel, stack overflow, the epoch
///   deadline (`Interrupt`: `timed_out`), or any other trap by its message;
/// - the pooling allocator had no free slot
///   ([`wasmtime::PoolConcurrencyLimitError`]): a `trap`, as any host
///   refusal that is not the guest's doing;
/// - any other failure to instantiate: the instance was refused for what
///   it asks of the store. A pre-linked component's instantiation fails
///   only on a trap in a start function (above) or on a resource bound:
///   wasmtime's per-store counts of instances, memories and tables (the
///   limiter's [`host::MAX_INSTANCES`] and the rest, which wasmtime checks
///   itself), the pooling allocator's per-slot bounds, or the host's own
///   memory: `memory_limit`.
fn classify(error: GuestError, memory_limit_hit: bool, timeout: Duration) -> HookFailure {
    let (error, instantiating) = match error {
        GuestError::Instantiate(e) => (e, true),
        GuestError::Call(e) => (e, false),
        GuestError::NotSpoken(failure) => return failure,
    };
    let message = format!("{error:#}");
    if memory_limit_hit {
        return HookFailure::MemoryLimit { message };
    }
    match error.downcast_ref::<wasmtime::Trap>() {
        Some(wasmtime::Trap::OutOfFuel) => HookFailure::OutOfFuel,
        Some(wasmtime::Trap::StackOverflow) => HookFailure::StackOverflow,
        Some(wasmtime::Trap::Interrupt) => timed_out(timeout),
        Some(_) => HookFailure::Trap { message },
        None if instantiating && !error.is::<wasmtime::PoolConcurrencyLimitError>() => {
            HookFailure::MemoryLimit { message }
        }
        None => HookFailure::Trap { message },
    }
}
