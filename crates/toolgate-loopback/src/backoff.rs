//! Pausing between failed accepts, so a server out of descriptors neither
//! spins a core nor starves the connections that would free one.

use std::time::Duration;

/// Pauses between failed accepts.
///
/// An accept that fails for want of a resource (EMFILE, ENFILE, ENOBUFS,
/// ENOMEM) leaves the connection queued, so the listener is ready again at
/// once: retrying at once spins a core at 100% until something else frees a
/// descriptor, and starves the connections that would free one. So the
/// server waits [`Backoff::FIRST`], doubling to [`Backoff::MOST`], and
/// starts again from the first pause after an accept succeeds. It says so on
/// stderr once per episode (the first failure, and the recovery), not once
/// per retry.
#[derive(Debug, Default)]
pub struct Backoff {
    /// The pause after the next failure; `None` outside an episode.
    next: Option<Duration>,
    /// Failures in this episode.
    failures: u64,
}

impl Backoff {
    const FIRST: Duration = Duration::from_millis(10);
    const MOST: Duration = Duration::from_secs(1);

    /// How long to wait after this failure.
    pub fn failed(&mut self, error: &std::io::Error) -> Duration {
        let pause = match self.next {
            None => {
                eprintln!(
                    "toolgate serve: cannot accept connections ({error}); retrying with a \
                     pause of {} ms, growing to {} s, until one succeeds",
                    Self::FIRST.as_millis(),
                    Self::MOST.as_secs()
                );
                Self::FIRST
            }
            Some(pause) => pause,
        };
        self.failures += 1;
        self.next = Some((pause * 2).min(Self::MOST));
        pause
    }

    /// An accept succeeded: the episode, if any, is over.
    pub fn succeeded(&mut self) {
        if self.next.take().is_some() {
            eprintln!(
                "toolgate serve: accepting connections again (after {} failed accepts)",
                self.failures
            );
        }
        self.failures = 0;
    }
}
