//! What a guest's store holds: a WASI context that grants nothing, bounded
//! log buffers, and the limiter that enforces the hook's memory budget.
//!
//! # No ambient authority
//!
//! WASI preview 2 is linked only so components built by real toolchains
//! (componentize-js, componentize-py, Go with an adapter) instantiate. The
//! context built here has no preopened directories, no environment variables,
//! no arguments, stdin closed, TCP/UDP and name lookup disabled. A guest that
//! asks for `/etc/passwd` gets "no such directory"; a guest that opens a
//! socket gets "access denied". Clocks and random numbers are provided (they
//! grant no access to anything).
//!
//! The context is built lazily, on the guest's first WASI call: a zero-import
//! component (the recommended build) never pays for it.
//!
//! # A guest's last words
//!
//! The hook world's one import, `about-to-fail`, lets a guest that is about
//! to trap say why (a Rust panic under `panic = "abort"`, a C `assert`): the
//! store keeps the first message, bounded to [`MAX_MESSAGE`] bytes, and the
//! binding reports the trap that follows as the guest's own error with that
//! message. It grants nothing: the text goes only into the hook's failure
//! record, as `err(message)` would.
//!
//! # Guest output
//!
//! stdout and stderr go to one bounded buffer per call, shown to the operator
//! in the run record (sanitised of terminal control sequences), never to the
//! model. Past the bound, output is counted and dropped — not a trap, so a
//! chatty guest still decides.

use crate::text::MAX_MESSAGE;
use bytes::Bytes;
use std::sync::{Arc, Mutex};
use toolgate_contract::session::{self, Kept, SessionState, StateChanges};
use wasmtime::component::ResourceTable;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamError};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// Guest stdout+stderr kept per call.
pub(crate) const LOG_CAP: usize = 16 * 1024;

/// The data of one call's store.
pub(crate) struct HostState {
    wasi: Option<WasiCtx>,
    table: ResourceTable,
    pub(crate) log: GuestLog,
    pub(crate) limiter: MemoryLimiter,
    /// When the call must end, checked at every epoch tick.
    pub(crate) deadline: std::time::Instant,
    /// What the guest said through `about-to-fail`, if it did (the first
    /// message, bounded).
    pub(crate) about_to_fail: Option<String>,
    /// This hook's session state as the call began (`session-get`).
    kept: KeptState,
    /// What the guest wrote through `session-put`, each write within the
    /// bounds; handed to the chain, which keeps it if the guest decided.
    pub(crate) state_writes: StateChanges,
}

/// An owned copy of what the chain found of the hook's session state (a
/// store's data must own what it holds).
enum KeptState {
    NoSession,
    Unavailable(String),
    State(SessionState),
}

impl KeptState {
    fn view(&self) -> Kept<'_> {
        match self {
            KeptState::NoSession => Kept::NoSession,
            KeptState::Unavailable(why) => Kept::Unavailable(why),
            KeptState::State(state) => Kept::State(state),
        }
    }
}

impl HostState {
    pub(crate) fn new(memory_limit: usize, deadline: std::time::Instant, kept: Kept<'_>) -> Self {
        HostState {
            wasi: None,
            table: ResourceTable::new(),
            log: GuestLog::default(),
            limiter: MemoryLimiter {
                limit: memory_limit,
                total: 0,
                tables: 0,
                hit: false,
            },
            deadline,
            about_to_fail: None,
            kept: match kept {
                Kept::NoSession => KeptState::NoSession,
                Kept::Unavailable(why) => KeptState::Unavailable(why.to_owned()),
                Kept::State(state) => KeptState::State(state.clone()),
            },
            state_writes: StateChanges::new(),
        }
    }
}

impl crate::wit::bindings::HookImports for HostState {
    fn about_to_fail(&mut self, message: String) {
        // The first reason is the one that explains the trap; a guest that
        // fails again while reporting (a panic inside its panic hook) does
        // not overwrite it.
        if self.about_to_fail.is_none() {
            self.about_to_fail = Some(crate::text::bound(message, MAX_MESSAGE, "message"));
        }
    }

    fn session_get(&mut self, key: String) -> Result<Option<String>, String> {
        session::read(self.kept.view(), &self.state_writes, &key).map_err(|e| e.to_string())
    }

    fn session_put(&mut self, key: String, value: Option<String>) -> Result<(), String> {
        // Checked as it is written, so the guest hears of a refused write
        // while it can still decide what that means; a refused write is
        // not recorded.
        session::check_write(self.kept.view(), &self.state_writes, &key, value.as_deref())
            .map_err(|e| e.to_string())?;
        self.state_writes.insert(key, value);
        Ok(())
    }
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        let log = &self.log;
        let ctx = self.wasi.get_or_insert_with(|| deny_all_ctx(log));
        WasiCtxView {
            ctx,
            table: &mut self.table,
        }
    }
}

fn deny_all_ctx(log: &GuestLog) -> WasiCtx {
    WasiCtx::builder()
        .stdout(log.clone())
        .stderr(log.clone())
        .allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false)
        .build()
}

/// Enforces the hook's limits for one call and remembers that it did, so the
/// failure is reported as `memory_limit` rather than as whatever the guest
/// does when an allocation fails.
///
/// # Per call, not per object
///
/// wasmtime asks the limiter about each memory and table on its own. A
/// component may define several core instances, each with its own memories
/// and tables, so a per-memory check lets eight 127 MiB memories through a
/// 128 MiB limit. The limiter therefore keeps running totals for the store
/// (one store per call): `memory_mb` bounds the sum of all linear memories,
/// [`TABLE_ELEMENTS`] the sum of all table elements, and the number of core
/// instances, memories and tables a call may create is capped
/// ([`MAX_INSTANCES`], [`MAX_MEMORIES`], [`MAX_TABLES`]).
pub(crate) struct MemoryLimiter {
    limit: usize,
    /// Bytes of linear memory across every memory of the call.
    total: usize,
    /// Table elements across every table of the call.
    tables: usize,
    pub(crate) hit: bool,
}

/// Table elements per call, across every table (8 bytes each: 8 MiB).
pub(crate) const TABLE_ELEMENTS: usize = 1_000_000;
/// Core instances per call. The largest real guests here (componentize-py,
/// componentize-js) create under 20.
pub(crate) const MAX_INSTANCES: usize = 64;
/// Linear memories per call.
pub(crate) const MAX_MEMORIES: usize = 16;
/// Tables per call.
pub(crate) const MAX_TABLES: usize = 64;

impl wasmtime::ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let total = self.total.saturating_sub(current).saturating_add(desired);
        if total > self.limit {
            self.hit = true;
            return Err(wasmtime::format_err!(
                "memory limit: the guest asked for {desired} bytes in one linear memory, \
                 {total} bytes across all of them; its limit is {} for the whole call",
                self.limit
            ));
        }
        self.total = total;
        Ok(true)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let total = self.tables.saturating_sub(current).saturating_add(desired);
        if total > TABLE_ELEMENTS {
            self.hit = true;
            return Err(wasmtime::format_err!(
                "table limit: the guest asked for {total} table elements across all tables; \
                 the limit is {TABLE_ELEMENTS} per call"
            ));
        }
        self.tables = total;
        Ok(true)
    }

    fn instances(&self) -> usize {
        MAX_INSTANCES
    }

    fn tables(&self) -> usize {
        MAX_TABLES
    }

    fn memories(&self) -> usize {
        MAX_MEMORIES
    }
}

/// A bounded, shared buffer for guest stdout/stderr.
#[derive(Clone, Default)]
pub(crate) struct GuestLog(Arc<Mutex<LogBuf>>);

#[derive(Default)]
struct LogBuf {
    kept: Vec<u8>,
    dropped: usize,
}

impl GuestLog {
    fn append(&self, bytes: &[u8]) {
        // A poisoned lock only means another writer panicked mid-append; the
        // bytes are still a valid prefix.
        let mut buf = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let keep = bytes.len().min(LOG_CAP.saturating_sub(buf.kept.len()));
        buf.kept.extend_from_slice(&bytes[..keep]);
        buf.dropped += bytes.len() - keep;
    }

    /// The text for the run record, if the guest wrote anything.
    pub(crate) fn take(&self) -> Option<String> {
        let buf = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if buf.kept.is_empty() && buf.dropped == 0 {
            return None;
        }
        let mut text = crate::text::sanitize(&String::from_utf8_lossy(&buf.kept));
        if buf.dropped > 0 {
            text.push_str(&format!(
                "\n[toolgate: guest output truncated, {} more bytes dropped]",
                buf.dropped
            ));
        }
        Some(text)
    }
}

impl IsTerminal for GuestLog {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for GuestLog {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

#[async_trait::async_trait]
impl OutputStream for GuestLog {
    fn write(&mut self, bytes: Bytes) -> Result<(), StreamError> {
        self.append(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> Result<(), StreamError> {
        Ok(())
    }

    fn check_write(&mut self) -> Result<usize, StreamError> {
        // Always writable: past the cap, bytes are counted and dropped.
        Ok(64 * 1024)
    }
}

#[async_trait::async_trait]
impl Pollable for GuestLog {
    async fn ready(&mut self) {}
}

impl tokio::io::AsyncWrite for GuestLog {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        self.append(buf);
        std::task::Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}
