//! Back-pressure: how many calls the server evaluates at once, and what a
//! call past that is told.
//!
//! # Why `busy` and not a queue
//!
//! Every agent command that forwards a call to the server can evaluate it
//! itself, and does whenever no server answers (`toolgate-hook`'s
//! `client.rs`). So a server with all its slots taken has a better answer
//! than a queue: `busy`, sent instead of the acknowledgement, at once. The
//! caller decides the call in its own process with the same chain; the
//! server holds nothing for it. A queue would hold memory per waiting call
//! without bound, and its wait would be spent before the caller's 250 ms
//! acknowledgement timeout sent the call to the same fallback anyway, late.
//! Envoy's circuit breakers make the same choice (overflow answered at
//! once, counted), and so does a `SO_BACKLOG` that refuses rather than
//! stalls.
//!
//! HTTP is the exception: Claude Code's http hook has no fallback, and a
//! non-2xx answer lets the call through in older releases. A call over HTTP
//! waits for a slot until its own deadline, then is blocked with the
//! reason; such waits are bounded by the HTTP listener's connection limit.
//!
//! # Why a semaphore of permits held by the answer
//!
//! A slot is taken when the call is read and given back when its answer
//! is made, whichever task finishes it (the connection's own poll, or the
//! task a slow call moves to): the permit travels with the evaluation, so
//! no path can forget to give it back, and a connection that drops mid-call
//! gives it back when its task ends.

use crate::metrics::{Metrics, count};
use crate::server::Server;
use crate::stats::Stats;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use toolgate::serve::Busy;

/// How many calls a server evaluates at once unless told otherwise: past
/// it a call over the socket is answered `busy` and its caller evaluates
/// it itself; one over HTTP waits for a slot within its deadline. Far above
/// what one user's agents ask at once (the load bench's 128 clients stay
/// under it), and low enough that the hook processes it can have running
/// (each with three pipes) stay within a descriptor limit of a few
/// thousand.
pub const DEFAULT_MAX_IN_FLIGHT: u16 = 256;

/// The server's slots.
#[derive(Debug)]
pub(crate) struct Slots {
    permits: Arc<Semaphore>,
    max: usize,
}

/// One call's slot: given back when dropped (answered, or its task ended).
#[derive(Debug)]
pub(crate) struct InFlight(#[expect(dead_code, reason = "held for its drop")] OwnedSemaphorePermit);

impl Slots {
    /// `max` slots (at least one).
    pub(crate) fn new(max: usize) -> Slots {
        let max = max.clamp(1, Semaphore::MAX_PERMITS);
        Slots {
            permits: Arc::new(Semaphore::new(max)),
            max,
        }
    }

    /// Slots taken now.
    pub(crate) fn taken(&self) -> usize {
        self.max.saturating_sub(self.permits.available_permits())
    }

    /// Slots in all.
    pub(crate) fn max(&self) -> usize {
        self.max
    }

    fn busy(&self) -> Busy {
        Busy {
            in_flight: self.taken(),
            limit: self.max,
        }
    }

    fn try_take(&self) -> Result<InFlight, Busy> {
        self.permits
            .clone()
            .try_acquire_owned()
            .map(InFlight)
            .map_err(|_| self.busy())
    }

    async fn take_by(&self, deadline: Instant) -> Result<InFlight, Busy> {
        let wait = self.permits.clone().acquire_owned();
        match tokio::time::timeout_at(deadline.into(), wait).await {
            Ok(Ok(permit)) => Ok(InFlight(permit)),
            Ok(Err(_)) | Err(_) => Err(self.busy()),
        }
    }
}

impl Server {
    /// A slot for one call, held until it is answered; `Err` (counted) when
    /// every slot is taken: the socket answers `busy` and its caller
    /// evaluates the call itself.
    pub(crate) fn admit(&self) -> Result<InFlight, Busy> {
        self.try_take_counted(self.slots.try_take())
    }

    /// A slot for one call, waited for until `deadline`: for HTTP, whose
    /// caller has no fallback of its own.
    pub(crate) async fn admit_by(&self, deadline: Instant) -> Result<InFlight, Busy> {
        self.try_take_counted(self.slots.take_by(deadline).await)
    }

    fn try_take_counted(&self, taken: Result<InFlight, Busy>) -> Result<InFlight, Busy> {
        if taken.is_err() {
            Stats::bump(&self.stats.busy);
            count(self.metrics(), Metrics::busy);
        }
        taken
    }

    /// Its series as text, with the calls in flight now.
    pub(crate) fn metrics_text(&self) -> Option<String> {
        let metrics = self.metrics()?;
        metrics.in_flight(self.slots.taken());
        Some(metrics.text())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_slot_is_given_back_when_its_call_ends_and_a_wait_ends_at_its_deadline() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let slots = Slots::new(1);
        let held = slots.try_take().unwrap();
        assert_eq!(slots.taken(), 1);
        let busy = slots.try_take().unwrap_err();
        assert_eq!(
            busy,
            Busy {
                in_flight: 1,
                limit: 1
            }
        );
        let deadline = Instant::now() + Duration::from_millis(30);
        assert!(rt.block_on(slots.take_by(deadline)).is_err());
        assert!(Instant::now() >= deadline, "it waited until its deadline");
        drop(held);
        assert_eq!(slots.taken(), 0);
        let far = Instant::now() + Duration::from_secs(60);
        assert!(rt.block_on(slots.take_by(far)).is_ok());
        assert_eq!(Slots::new(0).max(), 1, "at least one slot");
    }
}
