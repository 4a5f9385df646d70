//! What `toolgate serve status` counts: requests, errors, refusals, loads,
//! evictions, and the latency of the last requests of each mode.
//!
//! # Why counters and a window, not a metrics crate
//!
//! A server left running for weeks must say whether it is healthy without
//! a scrape endpoint or a dependency: plain atomic counters cost one
//! uncontended add per request, and the latency of the last
//! [`WINDOW`] requests of each mode (a ring of microsecond samples behind
//! an uncontended lock) gives p50/p99 of *recent* behaviour, which is what
//! someone asking "is it slow now?" wants. An all-time histogram would
//! bury a slow hour under weeks of fast ones.
//!
//! These stay on in every server. A fleet that wants all-time series by
//! hook, decision and failure kind starts the server with `--metrics`
//! (`metrics.rs`: Prometheus, counted beside these, not instead of them).

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};
use toolgate::serve::{Heard, Mode, ModeLatency};

/// How many of the most recent requests of a mode the percentiles cover.
pub(super) const WINDOW: usize = 1024;

/// How many sessions `heard` remembers (the least recently heard is
/// forgotten first): a session id is whatever the agent sent, so the list
/// is bounded however many sessions come and go.
pub(super) const SESSIONS: usize = 256;

/// An agent (mode) heard from: its name, calls, the last one's time.
type AgentHeard = (String, u64, SystemTime);
/// A session heard from: agent, session id, calls, the last one's time.
type SessionHeard = (String, String, u64, SystemTime);

/// The server's counters since it started.
#[derive(Default)]
pub(super) struct Stats {
    /// Evaluations asked of it.
    pub(super) requests: AtomicU64,
    /// Evaluations answered with an error (the caller blocks the call).
    pub(super) errors: AtomicU64,
    /// Lines refused before they were acknowledged (unreadable, another
    /// protocol version, a mode this build does not answer, another user):
    /// the caller evaluates those itself.
    pub(super) refused: AtomicU64,
    /// Configs loaded (first loads, reloads, loads after an eviction).
    pub(super) loads: AtomicU64,
    /// Of those, loads of a config whose files changed.
    pub(super) reloads: AtomicU64,
    /// Loaded configs dropped to stay within the bound.
    pub(super) evictions: AtomicU64,
    /// Loaded configs dropped after going unused for `unload_idle`.
    pub(super) unloaded_idle: AtomicU64,
    /// Calls whose deadline passed while their config was still loading.
    pub(super) load_timeouts: AtomicU64,
    /// Calls not taken because every `--max-in-flight` slot was: answered
    /// `busy` over the socket (the caller evaluated them), or blocked over
    /// HTTP after waiting out their deadline.
    pub(super) busy: AtomicU64,
    latency: Mutex<Vec<(Mode, Window)>>,
    /// Per agent, then per session (most recent last): calls and when the
    /// last was heard.
    heard: Mutex<(Vec<AgentHeard>, Vec<SessionHeard>)>,
}

impl Stats {
    /// Counts one more.
    pub(super) fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }

    /// Records how long a request of `mode` took.
    pub(super) fn took(&self, mode: Mode, took: Duration) {
        let micros = u32::try_from(took.as_micros()).unwrap_or(u32::MAX);
        // A poisoned lock only loses a sample.
        let Ok(mut modes) = self.latency.lock() else {
            return;
        };
        match modes.iter_mut().find(|(m, _)| *m == mode) {
            Some((_, window)) => window.push(micros),
            None => {
                let mut window = Window::default();
                window.push(micros);
                modes.push((mode, window));
            }
        }
    }

    /// Records a call from `agent` (a mode's name) in `session`, now.
    pub(super) fn heard(&self, agent: &str, session: Option<&str>) {
        let now = SystemTime::now();
        let Ok(mut heard) = self.heard.lock() else {
            return;
        };
        let (agents, sessions) = &mut *heard;
        match agents.iter_mut().find(|(a, ..)| a == agent) {
            Some((_, calls, at)) => {
                *calls += 1;
                *at = now;
            }
            None => agents.push((agent.to_owned(), 1, now)),
        }
        let Some(session) = session else { return };
        let calls = match sessions
            .iter()
            .position(|(a, s, ..)| a == agent && s == session)
        {
            Some(i) => sessions.remove(i).2 + 1,
            None => 1,
        };
        if sessions.len() >= SESSIONS {
            sessions.remove(0);
        }
        let session = toolgate::text::excerpt(session, 128);
        sessions.push((agent.to_owned(), session, calls, now));
    }

    /// Every agent heard from, then the sessions, most recent first.
    pub(super) fn heard_list(&self) -> Vec<Heard> {
        let Ok(heard) = self.heard.lock() else {
            return Vec::new();
        };
        let (agents, sessions) = &*heard;
        let entry = |agent: &str, session: Option<&str>, calls: u64, at: SystemTime| Heard {
            agent: agent.to_owned(),
            session_id: session.map(str::to_owned),
            calls,
            last_unix_s: at
                .duration_since(SystemTime::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            last_s_ago: at.elapsed().map(|d| d.as_secs()).unwrap_or(0),
        };
        agents
            .iter()
            .map(|(a, c, at)| entry(a, None, *c, *at))
            .chain(
                sessions
                    .iter()
                    .rev()
                    .map(|(a, s, c, at)| entry(a, Some(s), *c, *at)),
            )
            .collect()
    }

    /// p50/p99 per mode, over each mode's window.
    pub(super) fn latency(&self) -> Vec<ModeLatency> {
        let Ok(modes) = self.latency.lock() else {
            return Vec::new();
        };
        modes
            .iter()
            .map(|(mode, window)| {
                let mut samples = window.samples.clone();
                samples.sort_unstable();
                ModeLatency {
                    mode: mode.name().to_owned(),
                    count: window.count,
                    window: samples.len(),
                    p50_us: percentile(&samples, 0.50),
                    p99_us: percentile(&samples, 0.99),
                }
            })
            .collect()
    }
}

/// The last [`WINDOW`] samples of one mode.
#[derive(Default)]
struct Window {
    samples: Vec<u32>,
    /// Where the next sample goes once full.
    next: usize,
    /// Every sample ever taken.
    count: u64,
}

impl Window {
    fn push(&mut self, micros: u32) {
        if self.samples.len() < WINDOW {
            self.samples.push(micros);
        } else {
            self.samples[self.next] = micros;
            self.next = (self.next + 1) % WINDOW;
        }
        self.count += 1;
    }
}

/// The nearest-rank percentile of sorted samples (0 when there are none).
fn percentile(sorted: &[u32], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    // Nearest rank: ceil(p·n), 1-based.
    let rank = (p * sorted.len() as f64).ceil() as usize;
    u64::from(sorted[rank.clamp(1, sorted.len()) - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_heard_stay_within_their_bound_most_recent_first() {
        let stats = Stats::default();
        for i in 0..SESSIONS + 10 {
            stats.heard("claude-code", Some(&format!("s{i}")));
        }
        stats.heard("claude-code", Some("s20"));
        stats.heard("codex", None);
        let heard = stats.heard_list();
        assert_eq!(heard[0].agent, "claude-code");
        assert_eq!(heard[0].calls, (SESSIONS + 11) as u64);
        assert_eq!(heard[1].agent, "codex");
        assert_eq!(heard[2].session_id.as_deref(), Some("s20"));
        assert_eq!(heard[2].calls, 2);
        assert_eq!(heard.len(), 2 + SESSIONS);
        assert!(!heard.iter().any(|h| h.session_id.as_deref() == Some("s0")));
    }

    #[test]
    fn percentiles_are_nearest_rank_over_the_last_window() {
        let stats = Stats::default();
        for us in 1..=100 {
            stats.took(Mode::Check, Duration::from_micros(us));
        }
        let l = &stats.latency()[0];
        assert_eq!((l.p50_us, l.p99_us, l.count), (50, 99, 100));
        // Past the window only the most recent samples count.
        for _ in 0..WINDOW {
            stats.took(Mode::Check, Duration::from_micros(7));
        }
        let l = &stats.latency()[0];
        assert_eq!((l.p50_us, l.p99_us, l.window), (7, 7, WINDOW));
    }
}
