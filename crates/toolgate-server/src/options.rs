//! What the program that starts the server gives it: read from that
//! program's own environment, never from a request.

use std::path::PathBuf;
use std::sync::Arc;

/// How many workspaces a server keeps loaded unless told otherwise: far
/// more than one user has open, few enough that compiled components of
/// forgotten checkouts do not pile up over weeks.
pub const DEFAULT_MAX_WORKSPACES: u16 = 64;

/// How long a workspace may go without a call before its chain (and the
/// compiled code of its components) is dropped, unless told otherwise:
/// long enough that a developer's pause costs nothing, short enough that
/// a checkout left open for a day does not hold its code all day. Its next
/// call loads it again, from the compile cache (a mapping, not a compile).
pub const DEFAULT_UNLOAD_IDLE: std::time::Duration = std::time::Duration::from_secs(30 * 60);

/// What the server loads with and counts, given by the program that starts
/// it: read from that program's own environment, never from a request.
pub struct Options {
    /// The most workspaces kept loaded; past it the least recently used is
    /// dropped, and loaded again on its next request.
    pub max_workspaces: usize,
    /// Unload a workspace after this long without a call
    /// ([`DEFAULT_UNLOAD_IDLE`]); `None`: never.
    pub unload_idle: Option<std::time::Duration>,
    /// The most calls evaluated at once ([`crate::DEFAULT_MAX_IN_FLIGHT`]).
    pub max_in_flight: usize,
    /// Whether to count Prometheus series ([`crate::metrics`]).
    pub metrics: bool,
    /// The managed layer's directory, and a loader with it and the
    /// program's component options set, made afresh for each load: the
    /// server adds the workspace, its global config, trust store and
    /// `PATH`.
    pub base: Arc<Base>,
    /// Fills the compile cache for a workspace in another process before
    /// the server loads it, so the compiler's memory is never the server's
    /// (see the crate docs, "Memory"); `None`: the server compiles itself.
    pub warm: Option<Arc<Warm>>,
    /// Where what toolgate answered before each call ran is recorded
    /// ([`crate::ledger`]: tamper evidence, and a call judged once);
    /// `None`: nowhere (no evidence can be had).
    pub calls_dir: Option<std::path::PathBuf>,
}

/// What a load starts from: see [`Options::base`].
pub type Base = dyn Fn() -> (PathBuf, toolgate::config::Loader) + Send + Sync;

/// Compiles a workspace's components into the cache: see [`Options::warm`].
pub type Warm = dyn Fn(&std::path::Path) + Send + Sync;

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("max_workspaces", &self.max_workspaces)
            .field("unload_idle", &self.unload_idle)
            .field("max_in_flight", &self.max_in_flight)
            .field("metrics", &self.metrics)
            .finish_non_exhaustive()
    }
}
