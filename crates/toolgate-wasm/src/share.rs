//! Who may hold how much of the pooling allocator at once: a share per
//! workspace, and a reserve the operator's guards always keep.
//!
//! # Why
//!
//! `toolgate serve` runs every workspace's components on one engine, whose
//! pooling allocator holds a fixed number of instances, core instances,
//! memories and tables for all of them (`engine::pooling`). A repository's
//! guest that declares many tables (or memories, or core instances),
//! called in parallel, took every table slot: another workspace's
//! `toolgate:shell` call then failed to instantiate ("maximum concurrent
//! limit … for tables reached") and was blocked. One repository denied
//! service to every other, and to the operator's own guards.
//!
//! # The choice
//!
//! The pool is [`UNITS`] units. A call takes, for as long as its instance
//! lives, the units its component's footprint is worth: the largest share
//! of any one pool resource one instance of it holds (its memories and
//! tables from wasmtime's `resources_required`, its core instances
//! counted in its bytes, one component instance). A workspace's calls hold
//! at most a quarter of the pool ([`WORKSPACE_UNITS`]), and all workspaces'
//! calls together three quarters ([`WORKSPACES_UNITS`]): the operator's
//! (global and managed) hooks always find a quarter free, and no workspace
//! can take more than its quarter from another. A call that finds its
//! share in use waits for it, half its hook's timeout at most (so that a
//! call that runs still has at least half its time), then fails (closed)
//! saying why. Units are taken before the instance is made, so the pool
//! itself is never exhausted by workspaces.
//!
//! Alternatives, and why not: a share per hook (a repository names as many
//! hooks as it likes); a pool large enough for every instance's maximum
//! (64 tables, 16 memories and 64 core instances for each of 256
//! instances reserves tens of GiB of address space, which machines
//! refuse); a count of calls per workspace (a one-table guest and a
//! 64-table one are not the same load).
//!
//! Only the pooling allocator has a pool to share: under the on-demand
//! allocator (a one-shot process, a machine that refused the pool) no
//! units are taken.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The whole pool, in units.
pub(crate) const UNITS: u32 = 1024;
/// What one workspace's calls may hold at once.
pub(crate) const WORKSPACE_UNITS: u32 = UNITS / 4;
/// What all workspaces' calls may hold at once: the rest is the operator's.
pub(crate) const WORKSPACES_UNITS: u32 = UNITS / 4 * 3;

/// Whose calls a component's are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Owner {
    /// The operator's (global, managed, the host program's): no share
    /// taken.
    Operator,
    /// A workspace's, by its root.
    Workspace(PathBuf),
}

impl Owner {
    /// The owner of a hook from `source`, whose config's root is `root`.
    pub(crate) fn of(source: toolgate_contract::contract::Source, root: &Path) -> Owner {
        use toolgate_contract::contract::Source;
        match source {
            Source::Workspace => Owner::Workspace(root.to_owned()),
            Source::Global | Source::Managed | Source::Host => Owner::Operator,
        }
    }
}

/// The pool's totals, as `engine::pooling` makes it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Totals {
    pub(crate) component_instances: u32,
    pub(crate) core_instances: u32,
    pub(crate) memories: u32,
    pub(crate) tables: u32,
}

/// What one instance of a component holds of the pool.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Footprint {
    pub(crate) core_instances: u32,
    pub(crate) memories: u32,
    pub(crate) tables: u32,
}

impl Footprint {
    /// What one instance of `component` (made from `bytes`, when they
    /// were read) holds: unknown counts as the most a component may hold
    /// (closed world).
    pub(crate) fn of(component: &wasmtime::component::Component, bytes: Option<&[u8]>) -> Self {
        let required = component.resources_required();
        Footprint {
            core_instances: bytes
                .and_then(core_instances)
                .unwrap_or(crate::host::MAX_INSTANCES as u32),
            memories: required
                .as_ref()
                .map_or(crate::host::MAX_MEMORIES as u32, |r| r.num_memories),
            tables: required
                .as_ref()
                .map_or(crate::host::MAX_TABLES as u32, |r| r.num_tables),
        }
    }

    /// Its units: the largest share of any one resource it holds.
    pub(crate) fn units(self, totals: Totals) -> u32 {
        let share = |n: u32, total: u32| {
            (u64::from(n) * u64::from(UNITS))
                .div_ceil(u64::from(total.max(1)))
                .min(u64::from(WORKSPACE_UNITS))
        };
        [
            share(1, totals.component_instances),
            share(self.core_instances, totals.core_instances),
            share(self.memories, totals.memories),
            share(self.tables, totals.tables),
        ]
        .into_iter()
        .max()
        .map_or(1, |u| u32::try_from(u).unwrap_or(WORKSPACE_UNITS))
        .max(1)
    }
}

/// Core instances a component's bytes make (its core instance sections,
/// nested components' included); `None` when they do not parse.
pub(crate) fn core_instances(bytes: &[u8]) -> Option<u32> {
    let mut n = 0u32;
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        if let wasmparser::Payload::InstanceSection(section) = payload.ok()? {
            n = n.saturating_add(section.count());
        }
    }
    Some(n)
}

/// The units a call of one component takes, and from whom.
#[derive(Debug)]
pub(crate) struct Share {
    units: u32,
    /// `None`: the operator's, or no pool to share.
    workspace: Option<Arc<Semaphore>>,
}

/// The semaphore all workspaces' calls share.
fn workspaces() -> &'static Arc<Semaphore> {
    static ALL: OnceLock<Arc<Semaphore>> = OnceLock::new();
    ALL.get_or_init(|| Arc::new(Semaphore::new(WORKSPACES_UNITS as usize)))
}

/// One workspace's semaphore (made on its first component).
fn of_workspace(root: &Path) -> Arc<Semaphore> {
    static EACH: OnceLock<Mutex<HashMap<PathBuf, Arc<Semaphore>>>> = OnceLock::new();
    let mut each = EACH
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    Arc::clone(
        each.entry(root.to_owned())
            .or_insert_with(|| Arc::new(Semaphore::new(WORKSPACE_UNITS as usize))),
    )
}

/// Units taken for one call, given back when dropped.
#[derive(Debug)]
pub(crate) struct Held {
    _workspace: Option<OwnedSemaphorePermit>,
    _all: Option<OwnedSemaphorePermit>,
}

impl Share {
    /// The share of a component owned by `owner`, with `footprint`, on an
    /// engine whose pool has `totals` (`None`: no pool).
    pub(crate) fn new(owner: &Owner, footprint: Footprint, totals: Option<Totals>) -> Share {
        match (owner, totals) {
            (Owner::Workspace(root), Some(totals)) => Share {
                units: footprint.units(totals),
                workspace: Some(of_workspace(root)),
            },
            (Owner::Operator, _) | (Owner::Workspace(_), None) => Share {
                units: 0,
                workspace: None,
            },
        }
    }

    /// The units one call takes (0: none).
    #[cfg(test)]
    pub(crate) fn units(&self) -> u32 {
        self.units
    }

    /// Takes this call's units, waiting until `deadline` at most; why not.
    pub(crate) async fn take(&self, deadline: tokio::time::Instant) -> Result<Held, String> {
        let Some(workspace) = &self.workspace else {
            return Ok(Held {
                _workspace: None,
                _all: None,
            });
        };
        // Free now (the common case): taken without a timer, which a
        // caller polling outside a tokio runtime (a guard's load-time
        // probe) does not have.
        if let Ok(mine) = Arc::clone(workspace).try_acquire_many_owned(self.units)
            && let Ok(all) = Arc::clone(workspaces()).try_acquire_many_owned(self.units)
        {
            return Ok(Held {
                _workspace: Some(mine),
                _all: Some(all),
            });
        }
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(format!(
                "this workspace's share of the wasm pool ({WORKSPACE_UNITS} of {UNITS} units) \
                 is in use, and this call cannot wait for it here"
            ));
        }
        let wait = async {
            let mine = Arc::clone(workspace).acquire_many_owned(self.units).await;
            let all = Arc::clone(workspaces())
                .acquire_many_owned(self.units)
                .await;
            (mine, all)
        };
        match tokio::time::timeout_at(deadline, wait).await {
            Ok((Ok(mine), Ok(all))) => Ok(Held {
                _workspace: Some(mine),
                _all: Some(all),
            }),
            // The semaphores are never closed.
            Ok(_) => Err("the wasm pool's share could not be taken".into()),
            Err(_) => Err(format!(
                "this workspace's share of the wasm pool ({} of {UNITS} units; a call of this \
                 component takes {}) stayed in use by its other calls for half the hook's \
                 timeout, so it was not run: one workspace cannot take the pool from others",
                WORKSPACE_UNITS, self.units
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOTALS: Totals = Totals {
        component_instances: 256,
        core_instances: 2048,
        memories: 512,
        tables: 1024,
    };

    #[test]
    fn a_footprint_is_worth_its_largest_share_of_any_one_resource() {
        let small = Footprint {
            core_instances: 1,
            memories: 1,
            tables: 1,
        };
        assert_eq!(small.units(TOTALS), 4, "one component instance of 256");
        let tables = Footprint {
            tables: 64,
            ..small
        };
        assert_eq!(tables.units(TOTALS), 64);
        // No workspace's calls can take more tables than its quarter holds.
        assert!(WORKSPACE_UNITS / tables.units(TOTALS) * 64 <= TOTALS.tables / 4);
    }

    #[test]
    fn a_share_that_is_free_is_taken_without_a_runtime() {
        let dir = tempfile::tempdir().unwrap();
        let heavy = Footprint {
            core_instances: 1,
            memories: 1,
            tables: 64,
        };
        let a = Share::new(&Owner::Workspace(dir.path().join("a")), heavy, Some(TOTALS));
        let soon = tokio::time::Instant::now() + std::time::Duration::from_millis(50);
        let held = futures_util::FutureExt::now_or_never(a.take(soon));
        assert!(matches!(held, Some(Ok(_))), "{held:?}");
    }

    #[tokio::test]
    async fn a_workspace_waits_for_its_own_share_and_the_operator_never_does() {
        let heavy = Footprint {
            core_instances: 1,
            memories: 1,
            tables: 64,
        };
        let dir = tempfile::tempdir().unwrap();
        let a = Share::new(&Owner::Workspace(dir.path().join("a")), heavy, Some(TOTALS));
        let soon = || tokio::time::Instant::now() + std::time::Duration::from_millis(50);
        let mut held = Vec::new();
        for _ in 0..WORKSPACE_UNITS / 64 {
            held.push(a.take(soon()).await.unwrap());
        }
        let refused = a.take(soon()).await.unwrap_err();
        assert!(refused.contains("share of the wasm pool"), "{refused}");
        let b = Share::new(&Owner::Workspace(dir.path().join("b")), heavy, Some(TOTALS));
        let _b = b.take(soon()).await.unwrap();
        let operator = Share::new(&Owner::Operator, heavy, Some(TOTALS));
        assert_eq!(operator.units(), 0);
        let _op = operator.take(soon()).await.unwrap();
        drop(held);
        assert!(a.take(soon()).await.is_ok());
    }
}
