//! Which workspaces stay loaded: a slot per workspace, made on its first
//! call; the least recently used dropped past `--max-workspaces`, and any
//! left without a call for `--unload-idle` (see the crate docs, "Bounded
//! for weeks").

use super::{Key, Server, Slot, Stats};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

impl Server {
    /// `key`'s slot, made when new; making one past the bound evicts the
    /// least recently used (preferring one that is not loading: a load in
    /// flight is some caller's wait).
    pub(super) fn slot(&self, key: &Key) -> Result<Arc<Slot>, String> {
        let now = self.tick.fetch_add(1, Ordering::Relaxed);
        let mut map = self
            .loaded
            .lock()
            .map_err(|_| "the server's state is poisoned".to_owned())?;
        let at = self.since_epoch_ms();
        if let Some(slot) = map.get(key) {
            slot.used.store(now, Ordering::Relaxed);
            slot.used_at.store(at, Ordering::Relaxed);
            return Ok(slot.clone());
        }
        while map.len() >= self.max_workspaces {
            let idle = |slot: &Slot| slot.loaded.try_lock().is_ok();
            let oldest = map
                .iter()
                .min_by_key(|(_, slot)| (!idle(slot), slot.used.load(Ordering::Relaxed)))
                .map(|(key, _)| key.clone());
            let Some(oldest) = oldest else { break };
            map.remove(&oldest);
            Stats::bump(&self.stats.evictions);
        }
        let slot = Arc::new(Slot {
            loaded: Arc::default(),
            used: AtomicU64::new(now),
            used_at: AtomicU64::new(at),
        });
        map.insert(key.clone(), slot.clone());
        Ok(slot)
    }

    fn since_epoch_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Drops every workspace not asked for in `unload_idle` whose chain is
    /// not in use (a call evaluating holds its slot; a load holds its
    /// lock): its runner, and with it the compiled code of its components,
    /// is freed; its next call loads it again, from the compile cache.
    /// How many.
    pub(crate) fn unload_idle(&self) -> usize {
        let Some(idle) = self.unload_idle else {
            return 0;
        };
        let idle_ms = u64::try_from(idle.as_millis()).unwrap_or(u64::MAX);
        let now = self.since_epoch_ms();
        let Ok(mut map) = self.loaded.lock() else {
            return 0;
        };
        let before = map.len();
        map.retain(|_, slot| {
            let unused = now.saturating_sub(slot.used_at.load(Ordering::Relaxed)) >= idle_ms;
            let quiet = Arc::strong_count(slot) == 1 && slot.loaded.try_lock().is_ok();
            !(unused && quiet)
        });
        let unloaded = before - map.len();
        for _ in 0..unloaded {
            Stats::bump(&self.stats.unloaded_idle);
        }
        unloaded
    }
}
