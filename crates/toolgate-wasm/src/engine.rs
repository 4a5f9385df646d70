//! One wasmtime `Engine` per process, its `Linker`, and the epoch ticker.
//!
//! # Why these settings
//!
//! - **Fuel** is the primary limit: deterministic, instruction-counted, and
//!   reported per call, so a guard's cost is the same on a busy laptop and an
//!   idle server (the model Shopify Functions use).
//! - **Epoch interruption** is the wall-clock backstop, ticked every
//!   millisecond from a dedicated thread that sleeps when no guest is running.
//!   At each tick a running guest yields to the async executor, so a guest
//!   never holds a runtime worker thread for more than a tick; once its
//!   deadline passes it traps.
//! - **Pooling allocator with copy-on-write memory images** makes a fresh
//!   instance per call cheap (slots are reused; initial memory is mapped, not
//!   copied; up to 1 MiB of memory is kept resident between uses instead of
//!   being returned to the kernel, and where Linux offers `PAGEMAP_SCAN` only
//!   the pages a call dirtied are reset). If the machine refuses the pool's virtual
//!   reservation, the engine falls back to on-demand allocation and says why
//!   ([`Allocator::OnDemand`] forces that). A process that evaluates one
//!   call asks for [`Allocator::OneShot`] instead: on-demand, because
//!   setting up the pool (hundreds of guard-page `mprotect`s) costs more
//!   than it saves for a call or two; its memory images are still
//!   copy-on-write, mapped from the cache entry the component was mapped
//!   from, so a large initialised heap is never copied.
//!
//! The choice is an option of each load, not a process-wide switch: each
//! allocator has its own shared engine, created on first use.
//! - **The pool's memory slots are sized from the guests**, not from the
//!   largest budget a hook may ask for: each slot holds the largest
//!   `memory_mb` any hook configuration the process has read asks for
//!   (at least the default 128 MiB) when the pool is made. The alternative,
//!   a slot of [`MAX_MEMORY_MB`] (4 GiB) for every one of the pool's 512
//!   memories, reserved 2 TiB of address space: nothing resident, but a
//!   process under an address-space limit (`ulimit -v`, a container's)
//!   could not make the pool at all and fell back to on-demand for every
//!   guest. A hook read later that asks for more than the slot is loaded
//!   with the on-demand engine, and says so ([`Runtime::pool_slot_mb`]).
//! - **An explicit max wasm stack** so unbounded recursion is a clean
//!   `stack_overflow`, not a crash; fiber stacks are sized above it.
//! - **No component-model concurrency**: the hook world is synchronous, and
//!   turning it off keeps per-call overhead down.
//! - **Only the wasm proposals listed in [`ALLOWED_PROPOSALS`], whatever
//!   wasmtime's defaults.** The engine turns every proposal off, then turns
//!   on that list: the WebAssembly 2.0 core, tail calls, extended constant
//!   expressions, multi-memory, relaxed SIMD, memory64 and the component
//!   model, which is what Rust, C, Go, JavaScript and Python guests are
//!   built with. The alternative, wasmtime's default set with a deny-list
//!   taken out, is what failed: wasmtime is built here without its `gc`
//!   and `threads` features (a guard needs neither, and each is more code a
//!   guest can reach), yet its defaults still let a module *declare* what
//!   only those parts can run. In wasmtime 48.0.8 a guest that made a
//!   `call_indirect` need a function-subtype check (the GC proposal's `sub`
//!   types) reached a stub that panics where it cannot unwind, and
//!   **aborted the whole process** (GHSA-rc4p-x33f-vpr2, fixed upstream in
//!   48.0.9: no trust needed, since wasm hooks run from a repository
//!   untrusted; a dead `toolgate` is a call the agent lets through). A
//!   deny-list also admits, silently, whatever proposal a later wasmtime
//!   turns on by default; the allow-list refuses it until it is added here
//!   on purpose. A module that uses anything else fails validation at load,
//!   and the hook fails closed, naming the proposal.

use super::host::HostState;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::Duration;
use wasmtime::component::Linker;
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, WasmFeatures};

/// The wasm proposals a guest may use; every other one is off (see the
/// module docs). Adding one here is a security decision: it must be one
/// whose runtime this build compiles in.
pub(crate) const ALLOWED_PROPOSALS: WasmFeatures = WasmFeatures::WASM2
    // `externref` and the other GC types need the `gc` runtime.
    .difference(WasmFeatures::GC_TYPES)
    .union(WasmFeatures::TAIL_CALL)
    .union(WasmFeatures::EXTENDED_CONST)
    .union(WasmFeatures::MULTI_MEMORY)
    .union(WasmFeatures::RELAXED_SIMD)
    .union(WasmFeatures::MEMORY64)
    .union(WasmFeatures::COMPONENT_MODEL);

/// Max wasm stack per call.
pub const MAX_WASM_STACK: usize = 512 * 1024;
/// Largest `memory_mb` a hook may ask for.
pub const MAX_MEMORY_MB: u64 = 4096;
/// How often the epoch advances while guests run.
pub const EPOCH_TICK: Duration = Duration::from_millis(1);
/// Ticks the epoch ticker keeps ticking with no guest running before it
/// parks: waking a parked ticker is a futex call and a thread to schedule
/// on every guest call, which on a 2-core machine busy with an agent, a
/// proxy and a server showed as a tenth of the MCP proxy's samples
/// (`perf`); lingering costs `LINGER_TICKS` wake-ups of its own after each
/// burst of calls, then nothing.
const LINGER_TICKS: u32 = 20;
/// Concurrent component instances the pool holds.
const POOL_INSTANCES: u32 = 256;

/// The largest `memory_mb` a hook configuration this process has read asks
/// for (at least the default): the pool's memory slot when it is made.
static LARGEST_BUDGET_MB: AtomicU64 = AtomicU64::new(crate::DEFAULT_MEMORY_MB);

/// Notes that a hook may use `memory_mb` of linear memory, before any
/// component is loaded, so that a pool made afterwards has room for it.
pub(crate) fn note_budget(memory_mb: u64) {
    LARGEST_BUDGET_MB.fetch_max(memory_mb.min(MAX_MEMORY_MB), Ordering::Relaxed);
}

/// Which instance allocator the engine ended up with, and why.
#[derive(Clone, Debug, serde::Serialize)]
pub struct AllocatorInfo {
    /// `pooling` or `on_demand`.
    pub kind: &'static str,
    /// Why on-demand was used, when it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback_reason: Option<String>,
}

/// Why the WebAssembly engine could not be started. Cloned from the
/// process-wide engine slot, so the source is shared.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartEngineError {
    /// wasmtime refused the engine configuration.
    #[error("creating the wasm engine: {0:#}")]
    Create(Arc<wasmtime::Error>),
    /// WASI preview 2 could not be added to the linker.
    #[error("linking WASI: {0:#}")]
    LinkWasi(Arc<wasmtime::Error>),
    /// The hook world's own import could not be added to the linker.
    #[error("linking the hook world's imports: {0:#}")]
    LinkWorld(Arc<wasmtime::Error>),
}

/// The process-wide WebAssembly runtime.
pub(crate) struct Runtime {
    pub(crate) engine: Engine,
    /// Defines only the hook world's own import (`about-to-fail`): enough
    /// for components that import no WASI, and cheap to build.
    pub(crate) bare_linker: Linker<HostState>,
    /// WASI p2 (deny-all context) and the world's own import, built on first
    /// use by a component that imports WASI.
    wasi_linker: OnceLock<Result<Linker<HostState>, StartEngineError>>,
    pub(crate) allocator: AllocatorInfo,
    /// The pool's memory slot, in MiB; `None` for on-demand allocation.
    pub(crate) pool_slot_mb: Option<u64>,
    ticker: Arc<Ticker>,
}

/// Which instance allocator a component's engine uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Allocator {
    /// The pooling allocator with copy-on-write memory images, falling back
    /// to on-demand where the machine refuses its reservation: for processes
    /// that make many calls.
    #[default]
    Pooling,
    /// On-demand allocation without memory images: for a process that
    /// evaluates one call.
    OneShot,
    /// On-demand allocation, as the operator asked.
    OnDemand,
}

static RUNTIMES: [OnceLock<Result<Arc<Runtime>, StartEngineError>>; 3] =
    [OnceLock::new(), OnceLock::new(), OnceLock::new()];

/// The shared runtime for a hook that may use `memory_mb`: `allocator`'s,
/// unless that is a pool whose slots are smaller, then the on-demand one.
pub(crate) fn runtime_for(
    allocator: Allocator,
    memory_mb: u64,
) -> Result<Arc<Runtime>, StartEngineError> {
    let runtime = runtime(allocator)?;
    match runtime.pool_slot_mb {
        Some(slot) if memory_mb > slot => {
            tracing::info!(
                "a hook asks for {memory_mb} MiB, more than the pool's {slot} MiB slots \
                 (sized from the hooks read before the pool was made): it is loaded with \
                 on-demand allocation"
            );
            self::runtime(Allocator::OnDemand)
        }
        _ => Ok(runtime),
    }
}

/// The shared runtime for `allocator`, created on first use.
pub(crate) fn runtime(allocator: Allocator) -> Result<Arc<Runtime>, StartEngineError> {
    let slot = match allocator {
        Allocator::Pooling => 0,
        Allocator::OneShot => 1,
        Allocator::OnDemand => 2,
    };
    RUNTIMES[slot]
        .get_or_init(|| Runtime::new(allocator).map(Arc::new))
        .clone()
}

fn base_config() -> Config {
    let mut config = Config::new();
    config
        .wasm_component_model(true)
        .consume_fuel(true)
        .epoch_interruption(true)
        .max_wasm_stack(MAX_WASM_STACK)
        .concurrency_support(false)
        // Closed world: nothing, then the list.
        .wasm_features(WasmFeatures::all(), false)
        .wasm_features(ALLOWED_PROPOSALS, true)
        .memory_init_cow(true)
        .signals_based_traps(false)
        .memory_guard_size(0)
        .cranelift_opt_level(wasmtime::OptLevel::Speed);
    config
}

/// The pool's totals (what `pooling` makes), for the shares
/// (`crate::share`).
pub(crate) const POOL_TOTALS: crate::share::Totals = crate::share::Totals {
    component_instances: POOL_INSTANCES,
    core_instances: POOL_INSTANCES * 8,
    memories: POOL_INSTANCES * 2,
    tables: POOL_INSTANCES * 4,
};

impl Runtime {
    /// The pool's totals, when this engine has a pool.
    pub(crate) fn pool_totals(&self) -> Option<crate::share::Totals> {
        self.pool_slot_mb.map(|_| POOL_TOTALS)
    }
}

fn pooling(slot_mb: u64) -> PoolingAllocationConfig {
    let mut pool = PoolingAllocationConfig::new();
    pool.total_component_instances(POOL_TOTALS.component_instances)
        .total_core_instances(POOL_TOTALS.core_instances)
        // The same per-call caps the store's limiter enforces on demand.
        .max_core_instances_per_component(super::host::MAX_INSTANCES as u32)
        .total_memories(POOL_TOTALS.memories)
        .max_memories_per_component(super::host::MAX_MEMORIES as u32)
        .max_memories_per_module(super::host::MAX_MEMORIES as u32)
        .total_tables(POOL_TOTALS.tables)
        .max_tables_per_component(super::host::MAX_TABLES as u32)
        .max_tables_per_module(super::host::MAX_TABLES as u32)
        .table_elements(100_000)
        .total_stacks(POOL_INSTANCES)
        .max_memory_size(usize::try_from(slot_mb << 20).unwrap_or(usize::MAX))
        .max_core_instance_size(4 << 20)
        .linear_memory_keep_resident(1 << 20)
        .table_keep_resident(64 << 10)
        // Linux ≥ 6.7: find the pages a call dirtied and reset only those,
        // keeping them resident. Measured here on the Rust example guest:
        // first call in a fresh instance 10 µs → 3.3 µs, returning the slot
        // 12 µs → 2.9 µs. Off where the kernel lacks the ioctl.
        .pagemap_scan(wasmtime::Enabled::Auto);
    pool
}

impl Runtime {
    fn new(allocator: Allocator) -> Result<Runtime, StartEngineError> {
        let slot_mb = LARGEST_BUDGET_MB.load(Ordering::Relaxed);
        let (engine, allocator, pool_slot_mb) = match allocator {
            Allocator::OnDemand => (
                on_demand()?,
                AllocatorInfo {
                    kind: "on_demand",
                    fallback_reason: Some("on-demand allocation was asked for".into()),
                },
                None,
            ),
            Allocator::OneShot => (
                // Memory images stay on: a cache hit maps the artifact, and
                // the image is then mapped copy-on-write from that file, not
                // copied (a wizer-initialised JS or Python heap is MBs).
                on_demand()?,
                AllocatorInfo {
                    kind: "on_demand",
                    fallback_reason: Some(
                        "a one-shot process: the pool would cost more to set up than it saves"
                            .into(),
                    ),
                },
                None,
            ),
            Allocator::Pooling => {
                let mut config = base_config();
                config.allocation_strategy(InstanceAllocationStrategy::Pooling(pooling(slot_mb)));
                match Engine::new(&config) {
                    Ok(engine) => (
                        engine,
                        AllocatorInfo {
                            kind: "pooling",
                            fallback_reason: None,
                        },
                        Some(slot_mb),
                    ),
                    Err(e) => {
                        let reason = format!("the pooling allocator is unavailable here: {e:#}");
                        tracing::warn!("{reason}; using on-demand allocation");
                        (
                            on_demand()?,
                            AllocatorInfo {
                                kind: "on_demand",
                                fallback_reason: Some(reason),
                            },
                            None,
                        )
                    }
                }
            }
        };
        let mut bare_linker = Linker::new(&engine);
        add_world_imports(&mut bare_linker)?;
        let ticker = Ticker::start(engine.clone());
        Ok(Runtime {
            engine,
            bare_linker,
            wasi_linker: OnceLock::new(),
            allocator,
            pool_slot_mb,
            ticker,
        })
    }

    /// The linker with WASI p2, for components that import it.
    pub(crate) fn wasi_linker(&self) -> Result<&Linker<HostState>, StartEngineError> {
        self.wasi_linker
            .get_or_init(|| {
                let mut linker = Linker::new(&self.engine);
                wasmtime_wasi::p2::add_to_linker_async(&mut linker)
                    .map_err(|e| StartEngineError::LinkWasi(Arc::new(e)))?;
                add_world_imports(&mut linker)?;
                Ok(linker)
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Marks a guest as running until the guard drops: the epoch ticks only
    /// while at least one does.
    pub(crate) fn running(&self) -> RunningGuard {
        self.ticker.enter();
        RunningGuard(self.ticker.clone())
    }
}

/// The hook world's own import, `about-to-fail` (see `host.rs`).
fn add_world_imports(linker: &mut Linker<HostState>) -> Result<(), StartEngineError> {
    crate::wit::bindings::Hook::add_to_linker::<_, wasmtime::component::HasSelf<_>>(
        linker,
        |state| state,
    )
    .map_err(|e| StartEngineError::LinkWorld(Arc::new(e)))
}

fn on_demand() -> Result<Engine, StartEngineError> {
    Engine::new(&base_config()).map_err(|e| StartEngineError::Create(Arc::new(e)))
}

/// Advances the engine's epoch every [`EPOCH_TICK`] while guests run.
struct Ticker {
    running: AtomicUsize,
    parked: AtomicBool,
    lock: Mutex<()>,
    wake: Condvar,
}

impl Ticker {
    fn start(engine: Engine) -> Arc<Ticker> {
        let ticker = Arc::new(Ticker {
            running: AtomicUsize::new(0),
            parked: AtomicBool::new(false),
            lock: Mutex::new(()),
            wake: Condvar::new(),
        });
        let t = ticker.clone();
        let spawned = std::thread::Builder::new()
            .name("toolgate-epoch".into())
            .spawn(move || {
                let mut idle_ticks = 0;
                loop {
                    if t.running.load(Ordering::Acquire) == 0 && idle_ticks < LINGER_TICKS {
                        // Lingers a while before parking: calls that come
                        // in a burst (an agent's, a proxy's pre and post)
                        // then find it running, and none pays a wake-up.
                        idle_ticks += 1;
                    } else if t.running.load(Ordering::Acquire) == 0 {
                        idle_ticks = 0;
                        let guard = t.lock.lock().unwrap_or_else(|e| e.into_inner());
                        // Announce the park before re-checking (both SeqCst):
                        // either this load sees a new guest, or that guest's
                        // `enter` sees `parked` and notifies under the lock.
                        t.parked.store(true, Ordering::SeqCst);
                        if t.running.load(Ordering::SeqCst) == 0 {
                            let _unused = t.wake.wait(guard);
                        }
                        t.parked.store(false, Ordering::SeqCst);
                        continue;
                    } else {
                        idle_ticks = 0;
                    }
                    std::thread::sleep(EPOCH_TICK);
                    engine.increment_epoch();
                }
            });
        if let Err(e) = spawned {
            // Without a ticker the deadline is still enforced by the async
            // timeout around each call; only compute-bound guests lose the
            // per-tick yield.
            tracing::warn!("could not start the epoch ticker thread: {e}");
        }
        ticker
    }

    fn enter(&self) {
        // Only a parked ticker needs a wake-up (and its syscall).
        if self.running.fetch_add(1, Ordering::SeqCst) == 0 && self.parked.load(Ordering::SeqCst) {
            let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
            self.wake.notify_one();
        }
    }
}

/// Keeps the ticker running while a guest call is in flight.
pub(crate) struct RunningGuard(Arc<Ticker>);

impl Drop for RunningGuard {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The smallest core module that needs each proposal, by its wasmparser
    /// flag name, and whether a guest may use it.
    const PROBES: &[(&str, bool, &str)] = &[
        ("FLOATS", true, "(func (result f32) (f32.const 1))"),
        (
            "MUTABLE_GLOBAL",
            true,
            r#"(global (export "g") (mut i32) (i32.const 0))"#,
        ),
        (
            "SIGN_EXTENSION",
            true,
            "(func (param i32) (result i32) (i32.extend8_s (local.get 0)))",
        ),
        (
            "SATURATING_FLOAT_TO_INT",
            true,
            "(func (param f32) (result i32) (i32.trunc_sat_f32_s (local.get 0)))",
        ),
        (
            "MULTI_VALUE",
            true,
            "(func (result i32 i32) (i32.const 1) (i32.const 2))",
        ),
        (
            "BULK_MEMORY",
            true,
            "(memory 1) (func (memory.copy (i32.const 0) (i32.const 0) (i32.const 0)))",
        ),
        (
            "REFERENCE_TYPES",
            true,
            "(table 1 funcref) (table 1 funcref) (func (drop (table.get 1 (i32.const 0))))",
        ),
        (
            "SIMD",
            true,
            "(func (result v128) (v128.const i32x4 0 0 0 0))",
        ),
        (
            "RELAXED_SIMD",
            true,
            "(func (param v128) (result v128) \
             (f32x4.relaxed_madd (local.get 0) (local.get 0) (local.get 0)))",
        ),
        ("TAIL_CALL", true, "(func $f (return_call $f))"),
        (
            "EXTENDED_CONST",
            true,
            "(global i32 (i32.add (i32.const 1) (i32.const 2)))",
        ),
        ("MULTI_MEMORY", true, "(memory 1) (memory 1)"),
        ("MEMORY64", true, "(memory i64 1)"),
        // Off: each needs a runtime part this build leaves out, or is not
        // finished upstream.
        ("GC_TYPES", false, "(func (param externref))"),
        ("GC", false, "(type (struct (field i32)))"),
        ("GC", false, "(type $t (sub (func))) (type (sub $t (func)))"),
        ("FUNCTION_REFERENCES", false, "(func (param (ref func)))"),
        ("EXCEPTIONS", false, "(tag) (func (throw 0))"),
        ("LEGACY_EXCEPTIONS", false, "(tag) (func try catch 0 end)"),
        ("THREADS", false, "(memory 1 1 shared)"),
        (
            "THREADS",
            false,
            "(memory 1) (func (drop (memory.atomic.notify (i32.const 0) (i32.const 1))))",
        ),
        (
            "WIDE_ARITHMETIC",
            false,
            "(func (param i64 i64 i64 i64) (result i64 i64) \
             (i64.add128 (local.get 0) (local.get 1) (local.get 2) (local.get 3)))",
        ),
        ("CUSTOM_PAGE_SIZES", false, "(memory 1 (pagesize 1))"),
        (
            "MEMORY_CONTROL",
            false,
            "(memory 1) (func (memory.discard (i32.const 0) (i32.const 0)))",
        ),
        (
            "STACK_SWITCHING",
            false,
            "(type $f (func)) (type (cont $f))",
        ),
    ];

    /// Pins the closed world: each listed proposal validates, each other one
    /// is refused, on every engine this process can make; and no proposal
    /// is on the list without a probe that shows a guest reaching it.
    #[test]
    fn a_guest_may_use_the_listed_wasm_proposals_and_no_other() {
        for allocator in [Allocator::Pooling, Allocator::OneShot, Allocator::OnDemand] {
            let engine = &runtime(allocator).expect("an engine").engine;
            for (flag, allowed, body) in PROBES {
                let bytes = crate::wat::wat_to_module(&format!("(module {body})"))
                    .unwrap_or_else(|e| panic!("the {flag} probe assembles: {e}"));
                let verdict = wasmtime::Module::validate(engine, &bytes);
                assert_eq!(
                    verdict.is_ok(),
                    *allowed,
                    "{allocator:?}: {flag} ({body}): {verdict:?}"
                );
            }
        }
        for (name, flag) in ALLOWED_PROPOSALS.iter_names() {
            if flag == WasmFeatures::COMPONENT_MODEL {
                // Every hook is a component: the whole suite is its probe.
                continue;
            }
            assert!(
                PROBES
                    .iter()
                    .any(|(probe, allowed, _)| *probe == name && *allowed),
                "{name} is allowed without a probe"
            );
        }
    }

    /// A hook that may use more memory than the pool's slots hold is given
    /// the on-demand engine (its calls could not grow into a slot); one
    /// that fits keeps the pool.
    #[test]
    fn a_budget_larger_than_the_pools_slots_is_loaded_on_demand() {
        let pool = runtime(Allocator::Pooling).expect("an engine");
        let Some(slot) = pool.pool_slot_mb else {
            // No pool on this machine: everything is on-demand already.
            assert_eq!(pool.allocator.kind, "on_demand");
            return;
        };
        assert!(slot < MAX_MEMORY_MB || LARGEST_BUDGET_MB.load(Ordering::Relaxed) == MAX_MEMORY_MB);
        let fits = runtime_for(Allocator::Pooling, slot).expect("an engine");
        assert_eq!(fits.allocator.kind, "pooling");
        let larger = runtime_for(Allocator::Pooling, slot + 1).expect("an engine");
        assert_eq!(larger.allocator.kind, "on_demand");
        assert_eq!(larger.pool_slot_mb, None);
    }
}
