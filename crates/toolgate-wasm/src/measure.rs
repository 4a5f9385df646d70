//! What a live component instance costs in resident memory, for `toolgate
//! bench` (the toolgate-bench crate): measured here because it needs the
//! hook's engine and store setup, which are not public API.

use super::host::HostState;
use super::{CallBudget, LoadComponentError, WasmOptions, load};
use crate::wit::bindings::{Event as WitEvent, Request as WitRequest};
use crate::wit::{Speaks, request_v0_1, request_v0_2};
use std::path::Path;
use std::time::Instant;
use wasmtime::Store;

/// Why the memory of live instances could not be measured.
#[derive(Debug, thiserror::Error)]
pub enum MeasureMemoryError {
    /// The component did not load.
    #[error("loading the component")]
    Load(#[source] LoadComponentError),
    /// The process's resident set could not be read.
    #[error("cannot read /proc/self/statm")]
    ResidentSet,
    /// An instance could not be given its fuel.
    #[error("giving an instance its fuel")]
    Fuel(#[source] wasmtime::Error),
    /// An instance could not be made.
    #[error("instantiating the component")]
    Instantiate(#[source] wasmtime::Error),
    /// An instance's `decide` failed.
    #[error("calling `decide`")]
    Call(#[source] wasmtime::Error),
}

/// Resident memory each live instance of a component costs, in bytes:
/// instantiates `count` at once (each having answered one call, so its
/// memory is touched as a real call touches it) and divides the growth of
/// this process's resident set by `count`.
pub async fn resident_bytes_per_instance(
    path: &Path,
    options: &WasmOptions,
    count: usize,
) -> Result<u64, MeasureMemoryError> {
    let (hook, _) = load(path, options, CallBudget::default(), None, None, None)
        .map_err(MeasureMemoryError::Load)?;
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
    let before = resident_bytes().ok_or(MeasureMemoryError::ResidentSet)?;
    let mut live = Vec::with_capacity(count);
    for _ in 0..count {
        let mut store = Store::new(
            &hook.runtime.engine,
            HostState::new(
                hook.memory_bytes,
                Instant::now() + hook.timeout,
                toolgate_contract::session::Kept::NoSession,
            ),
        );
        store.limiter(|state| &mut state.limiter);
        store
            .set_fuel(hook.fuel)
            .map_err(MeasureMemoryError::Fuel)?;
        store.set_epoch_deadline(u64::MAX / 2);
        match &hook.pre {
            Speaks::Current(pre) => {
                let instance = pre
                    .instantiate_async(&mut store)
                    .await
                    .map_err(MeasureMemoryError::Instantiate)?;
                let _ = instance
                    .call_decide(&mut store, &request)
                    .await
                    .map_err(MeasureMemoryError::Call)?;
            }
            Speaks::V0_2(pre) => {
                let asked = request_v0_2(request.clone()).map_err(not_spoken)?;
                let instance = pre
                    .instantiate_async(&mut store)
                    .await
                    .map_err(MeasureMemoryError::Instantiate)?;
                let _ = instance
                    .call_decide(&mut store, &asked)
                    .await
                    .map_err(MeasureMemoryError::Call)?;
            }
            Speaks::V0_1(pre) => {
                let asked = request_v0_1(request.clone()).map_err(not_spoken)?;
                let instance = pre
                    .instantiate_async(&mut store)
                    .await
                    .map_err(MeasureMemoryError::Instantiate)?;
                let _ = instance
                    .call_decide(&mut store, &asked)
                    .await
                    .map_err(MeasureMemoryError::Call)?;
            }
        }
        live.push(store);
    }
    let after = resident_bytes().ok_or(MeasureMemoryError::ResidentSet)?;
    drop(live);
    Ok(after.saturating_sub(before) / count.max(1) as u64)
}

fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

/// The measuring call is a `pre_tool_use`, which every version names; were
/// it not, the measurement fails as the call would.
fn not_spoken(failure: crate::failure::HookFailure) -> MeasureMemoryError {
    MeasureMemoryError::Call(wasmtime::Error::msg(failure.to_string()))
}
