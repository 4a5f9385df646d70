//! The slow lane: guests that have proven slow run on threads of their own,
//! at a lower priority than the server's workers.
//!
//! # Why
//!
//! A server answers many agents at once on a few async workers (one per
//! core). A wasm call runs on the worker that polls it, and a guest yields
//! only at an epoch tick (1 ms) — and not at all while it is instantiated.
//! The Python guest's ~1–3 ms, most of it its runtime starting up in a new
//! instance, holds a worker that long: with two cores, two such calls hold
//! every worker, and a Rust guard's 10 µs call waits behind them (its p99
//! rose 3.2× in the mix at 128 paced agents, `toolgate bench --load`).
//!
//! # The choice
//!
//! A hook whose last call burned more than [`SLOW_FUEL`] runs its next
//! call on a second tokio runtime whose threads are `nice` +10, and the
//! worker awaits it (it is free meanwhile). The kernel's scheduler then
//! does the rest: when a fast call arrives, its worker outweighs the slow
//! lane's threads about nine to one and runs first; when none does, the
//! slow lane has the whole machine. Limits, the deadline and the answer
//! are the same on either lane: only where the call runs changes.
//!
//! Alternatives, and why not:
//!
//! - *More workers* (twice the cores): tried, one run each; a fast call
//!   still waits behind a slow one on the same priority, and the ratio did
//!   not fall (docs/performance.md).
//! - *A queue per class inside toolgate*: a priority scheduler of our own
//!   on top of tokio's, which would still share its threads with the slow
//!   guests while they run; the kernel already preempts by priority.
//! - *Judged by wall time*: a fast guest measured on a busy machine would
//!   look slow and move. Fuel is counted in the guest's own instructions,
//!   the same on any load, so a hook's lane does not flap with the load.
//!   A hook starts on the fast lane (nothing is known of it yet); its first
//!   call decides.
//!
//! The lane is the embedding program's choice ([`crate::WasmOptions::slow_lane`]):
//! `toolgate serve` turns it on. A one-shot process makes one call and has
//! nothing to be fair to; an embedder may not want threads it did not ask
//! for. The runtime is started at the first slow call, never before.

use std::future::Future;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// Fuel above which a hook's next call goes to the slow lane: about
/// 100 µs of guest code on this project's 2-core VM. The Rust and C guest
/// examples burn 3–200 thousand; Go's runtime alone 1.7 million, the
/// JavaScript and Python guests 5–12 million.
pub(crate) const SLOW_FUEL: u64 = 1_000_000;

/// How much lower the slow lane's threads run: `nice` +10 weighs about a
/// ninth of a default thread in Linux's scheduler, so a slow guest still
/// progresses under any load (its deadline holds), but never first.
const NICENESS: i32 = 10;

/// One hook's lane: where its next call runs.
#[derive(Debug)]
pub(crate) struct Lane {
    /// Whether the embedding program asked for a slow lane at all.
    enabled: bool,
    /// Fuel the hook's last call burned.
    last_fuel: AtomicU64,
}

impl Lane {
    pub(crate) fn new(enabled: bool) -> Lane {
        Lane {
            enabled,
            last_fuel: AtomicU64::new(0),
        }
    }

    /// Whether the next call goes to the slow lane.
    pub(crate) fn slow(&self) -> bool {
        self.enabled && self.last_fuel.load(Ordering::Relaxed) > SLOW_FUEL
    }

    /// What the call just made burned.
    pub(crate) fn record(&self, fuel_used: u64) {
        self.last_fuel.store(fuel_used, Ordering::Relaxed);
    }
}

/// Runs `call` on the slow lane and waits for it there; an error if the
/// lane cannot be started or the call was lost (a panic inside it), which
/// the caller turns into a failed call (fails closed).
pub(crate) async fn run<F>(call: F) -> Result<F::Output, String>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    static SLOW: OnceLock<Result<SlowLane, String>> = OnceLock::new();
    let lane = SLOW
        .get_or_init(SlowLane::start)
        .as_ref()
        .map_err(Clone::clone)?;
    let running = lane.running.clone();
    lane.runtime
        .spawn(async move {
            // Closed only by dropping it, which never happens.
            let _permit = running.acquire_owned().await;
            call.await
        })
        .await
        .map_err(|e| format!("the call was lost on the slow lane: {e}"))
}

/// The slow lane's threads, and how many calls run on them at once.
struct SlowLane {
    runtime: tokio::runtime::Runtime,
    /// One call per thread: the others wait without an instance. A slow
    /// guest's live instance is 6–12 MiB (docs/performance.md); letting
    /// every waiting call instantiate and take turns at each epoch tick
    /// held 700 MiB at 128 agents, and each call then took as long as all
    /// of them together.
    running: std::sync::Arc<tokio::sync::Semaphore>,
}

impl SlowLane {
    fn start() -> Result<SlowLane, String> {
        let threads = std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .thread_name("toolgate-slow-lane")
            .on_thread_start(lower_priority)
            .enable_time()
            .build()
            .map_err(|e| format!("the slow lane could not start: {e}"))?;
        Ok(SlowLane {
            runtime,
            running: std::sync::Arc::new(tokio::sync::Semaphore::new(threads)),
        })
    }
}

/// Lowers the calling thread's priority by [`NICENESS`]. Raising one's
/// own niceness needs no privilege; a refusal (a seccomp policy, say)
/// leaves the thread at the default priority: still a thread apart from
/// the workers, only less fair.
#[allow(unsafe_code)]
fn lower_priority() {
    // SAFETY: setpriority takes plain integers; who = 0 with PRIO_PROCESS
    // is the calling thread on Linux (niceness is per thread there).
    let done = unsafe { nix::libc::setpriority(nix::libc::PRIO_PROCESS, 0, NICENESS) };
    if done != 0 {
        tracing::warn!(
            "the slow lane runs at the default priority: {}",
            std::io::Error::last_os_error()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hook_moves_to_the_slow_lane_only_when_enabled_and_its_last_call_burned_past_the_line() {
        let lane = Lane::new(true);
        assert!(!lane.slow(), "nothing is known of a new hook");
        lane.record(SLOW_FUEL);
        assert!(!lane.slow(), "the line itself is fast");
        lane.record(SLOW_FUEL + 1);
        assert!(lane.slow());
        lane.record(10_000);
        assert!(!lane.slow(), "a hook that got cheaper comes back");
        let off = Lane::new(false);
        off.record(u64::MAX);
        assert!(!off.slow(), "never without the embedder's say");
    }

    #[test]
    fn the_slow_lanes_threads_run_below_the_default_priority() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a runtime");
        let nice = runtime
            .block_on(run(async {
                std::fs::read_to_string("/proc/thread-self/stat").expect("own stat")
            }))
            .expect("the slow lane answers");
        // Field 19 of stat is the nice value; the command name (field 2)
        // is in parentheses and holds no ')' here.
        let after_name = nice.rsplit_once(')').expect("a stat line").1;
        let fields: Vec<&str> = after_name.split_whitespace().collect();
        assert_eq!(fields.get(16), Some(&"10"), "stat: {nice}");
        assert!(nice.contains("(toolgate-slow-l"), "stat: {nice}");
    }
}
