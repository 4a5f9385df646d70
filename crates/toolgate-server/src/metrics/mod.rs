//! `toolgate serve --metrics 127.0.0.1:PORT`: what the guards decide, as
//! Prometheus series a fleet can scrape.
//!
//! # Why derived from the outcome, after the chain
//!
//! Every series is counted from what an evaluation already produced: the
//! [`Outcome`] and its run records (decided by whom, with what, each run's
//! binding, duration and failure kind), plus the server's own events (a
//! load, a reload that failed, a request refused before it was taken). The
//! chain itself is not touched: nothing on its hot path waits on a metric,
//! and a metrics scrape never waits on the chain. Counting is a few
//! uncontended atomic adds and one short lock for the bounded hook names
//! per call; only a server started with `--metrics` counts at all.
//!
//! The crate is `prometheus-client`, the Prometheus project's own Rust
//! client (text exposition only, no protobuf): a hand-written exposition
//! would have to get escaping, `_total`/unit naming and histogram buckets
//! right by itself.
//!
//! # The series
//!
//! - `toolgate_decisions_total{hook, decision, source}`: one per evaluated
//!   event. `hook` is the run that decided (`none` when every hook allowed),
//!   `source` where it came from (`host`, `global`, `workspace`, and any
//!   later layer by [`toolgate::Source::as_str`]; `none` with `hook="none"`),
//!   `decision` is `allow`/`deny`/`modify`/`replace`, or `failed` when the
//!   call was blocked because a hook could not decide.
//! - `toolgate_hook_failures_total{hook, kind, source}`: each run that could
//!   not decide, by the run record's failure kind (`timed_out`,
//!   `exited_non_zero`, `not_trusted`, …), whatever its `on_failure` made of it.
//! - `toolgate_trust_refusals_total{hook, policy}`: workspace hooks not run
//!   for want of trust: `policy="deny"` blocked the call (`not_trusted`),
//!   `policy="skip"` was skipped under `untrusted_hooks: "skip"`.
//! - `toolgate_hook_duration_seconds{binding}`: a histogram of every hook run's
//!   duration by binding (`in_process`, `subprocess`, `wasm`: the run
//!   records' spelling); a hook not run for want of trust is not a run.
//! - `toolgate_evaluation_duration_seconds{mode}`: a histogram of each whole
//!   evaluation inside the server (load check, chain, answer), by mode
//!   (`check`, `claude-code`, …).
//! - `toolgate_config_loads_total{trigger, result}`: configs loaded,
//!   `trigger="first"` (a new or evicted workspace) or `"reload"` (its files
//!   changed), `result="ok"` or `"failed"`.
//! - `toolgate_fallbacks_total{reason}`: what the server sees of fallbacks.
//!   `reason="refused"`: a request refused before it was acknowledged
//!   (another protocol version, a mode this build does not answer, an
//!   unreadable line, another user), which the client then evaluates itself;
//!   `reason="last_good_config"`: a reload failed and the previous config
//!   answered the call; `reason="busy"`: every `--max-in-flight` slot was
//!   taken, so a socket call was answered `busy` (its caller evaluated it)
//!   or an HTTP call waited out its deadline (blocked).
//! - `toolgate_in_flight`: calls being evaluated when scraped.
//! - `toolgate_evaluation_errors_total` and `toolgate_load_timeouts_total`:
//!   calls the server answered with an error (the caller blocks them), and
//!   of those, calls whose deadline passed while their config was loading.
//!
//! # What the server cannot count
//!
//! A per-call `toolgate claude-code` that finds no server (none running, a
//! stale socket, no acknowledgement within the client's ack timeout)
//! evaluates the call itself (`client.rs`): that call never reaches the
//! server, so no series here counts it. A fleet reads client fallbacks as
//! the calls that are missing: the agents' own call counts against
//! `toolgate_decisions_total`, or the decision log each per-call process
//! writes (`TOOLGATE_DECISION_LOG`). Calls answered over `--http` are
//! counted like the socket's.
//!
//! # Bounded labels
//!
//! Hook names come from configs, and a workspace config is written by
//! whoever wrote the repository. At most [`MAX_HOOK_LABELS`] distinct names
//! become label values over the server's life, each at most
//! [`MAX_NAME_BYTES`] long; any other is counted as `hook="other"`. Every
//! other label has a fixed, small set of values. So the series stay bounded
//! by (hook names × kinds × sources), however many workspaces come and go.
//! A hook really named `none` or `other` shares those values.
//!
//! # Who can read them
//!
//! The metrics carry no call content: hook names, decisions, failure kinds,
//! counts and latencies. The endpoint therefore asks for no secret (unlike
//! `--http`, whose calls carry content and decide): a fleet's local agent
//! scrapes it without a secret to hand out. But a loopback TCP port is open
//! to every user on the machine, so **other users on the machine can read
//! them** (which hooks run, how often they deny). Where that matters, leave
//! `--metrics` off and read the same text over the socket, which only this
//! user can connect to: `toolgate serve metrics`. The rest is `--http`'s
//! discipline: loopback IP literals only, the `Host` header must be the
//! literal address (no DNS rebinding), any `Origin` header (a browser) is
//! refused, only `GET /metrics`, headers within a timeout, few connections.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};
use std::collections::HashSet;
use std::sync::Mutex;
use std::time::Duration;
use toolgate::FailureKind;

mod endpoint;
pub(crate) use endpoint::listen;
use toolgate::observe::{Ending, Observed, Observer, Tally};

/// The most distinct hook names that become label values.
pub(crate) const MAX_HOOK_LABELS: usize = 256;

/// The longest hook name that becomes a label value.
pub(crate) const MAX_NAME_BYTES: usize = 128;

/// The label value for a name past the bounds.
const OTHER: &str = "other";

/// The label value when no hook decided.
const NONE: &str = "none";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DecisionLabels {
    hook: String,
    decision: &'static str,
    source: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabels {
    server: String,
    tool: String,
    decision: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AgentLabels {
    agent: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ShadowLabels {
    hook: String,
    would: &'static str,
    source: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FailureLabels {
    hook: String,
    kind: &'static str,
    source: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TrustLabels {
    hook: String,
    policy: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BindingLabels {
    binding: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ModeLabels {
    mode: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LoadLabels {
    trigger: &'static str,
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TamperLabels {
    kind: &'static str,
}

type Histograms<L> = Family<L, Histogram, fn() -> Histogram>;

/// 100 µs to about 3.3 s, doubling: an in-process hook to a slow subprocess.
fn seconds() -> Histogram {
    Histogram::new(exponential_buckets(0.0001, 2.0, 16))
}

/// The server's series; counted only when `--metrics` is given.
pub struct Metrics {
    registry: Registry,
    decisions: Family<DecisionLabels, Counter>,
    last_call: Family<AgentLabels, Gauge>,
    shadow: Family<ShadowLabels, Counter>,
    failures: Family<FailureLabels, Counter>,
    trust_refusals: Family<TrustLabels, Counter>,
    hook_seconds: Histograms<BindingLabels>,
    evaluation_seconds: Histograms<ModeLabels>,
    loads: Family<LoadLabels, Counter>,
    fallbacks: Family<ReasonLabels, Counter>,
    errors: Counter,
    load_timeouts: Counter,
    in_flight: Gauge,
    tamper: Family<TamperLabels, Counter>,
    tools: Family<ToolLabels, Counter>,
    /// The hook names that are label values.
    names: Mutex<HashSet<String>>,
    /// The tool and MCP server names that are label values.
    tool_names: Mutex<HashSet<String>>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Metrics {
    /// Why one function: one registration per series, in the order they
    /// are exposed; apart, the list would read as several.
    pub(crate) fn new() -> Metrics {
        let decisions = Family::default();
        let shadow = Family::default();
        let last_call = Family::default();
        let failures = Family::default();
        let trust_refusals = Family::default();
        let hook_seconds: Histograms<BindingLabels> = Family::new_with_constructor(seconds);
        let evaluation_seconds: Histograms<ModeLabels> = Family::new_with_constructor(seconds);
        let loads = Family::default();
        let fallbacks = Family::default();
        let errors = Counter::default();
        let load_timeouts = Counter::default();
        let in_flight = Gauge::default();
        let tamper = Family::default();
        let tools = Family::default();
        let mut registry = Registry::with_prefix("toolgate");
        registry.register(
            "decisions",
            "Evaluated events, by the hook that decided (none: all allowed), its source, and \
             the decision (failed: blocked because a hook could not decide)",
            decisions.clone(),
        );
        registry.register(
            "tool_decisions",
            "Decided calls by tool and, for an MCP tool (mcp__server__tool), its server \
             (none: an agent's own tool), and the decision; toolgate mcp's calls are counted \
             here when a server with --metrics runs",
            tools.clone(),
        );
        registry.register(
            "last_call_timestamp_seconds",
            "When the server last heard from each agent (mode: check, or the agent's name), \
             seconds since the Unix epoch: alert on a machine whose agents stopped calling the \
             guard (deploy/prometheus/toolgate-alerts.yml)",
            last_call.clone(),
        );
        registry.register(
            "shadow_verdicts",
            "Shadow hooks' runs (\"mode\": \"shadow\": recorded, never applied), by hook, \
             source and what the hook would have made of the call had it enforced (allow: \
             nothing; deny, ask, replace, modify; failed: a failure that would have blocked)",
            shadow.clone(),
        );
        registry.register(
            "hook_failures",
            "Hook runs that could not decide, by failure kind",
            failures.clone(),
        );
        registry.register(
            "trust_refusals",
            "Workspace hooks not run for want of trust (policy deny: the call was blocked; \
             skip: untrusted_hooks skip)",
            trust_refusals.clone(),
        );
        registry.register_with_unit(
            "hook_duration",
            "Each hook run's duration, by binding",
            Unit::Seconds,
            hook_seconds.clone(),
        );
        registry.register_with_unit(
            "evaluation_duration",
            "Each evaluation's duration inside the server, by mode",
            Unit::Seconds,
            evaluation_seconds.clone(),
        );
        registry.register(
            "config_loads",
            "Configs loaded, first or reloaded after their files changed, ok or failed",
            loads.clone(),
        );
        registry.register(
            "fallbacks",
            "Requests refused before acknowledgement (the client evaluated them itself) and \
             calls answered by the last good config after a failed reload",
            fallbacks.clone(),
        );
        registry.register(
            "evaluation_errors",
            "Calls answered with an error (the caller blocked them)",
            errors.clone(),
        );
        registry.register(
            "load_timeouts",
            "Calls whose deadline passed while their config was still loading (blocked)",
            load_timeouts.clone(),
        );
        registry.register(
            "in_flight",
            "Calls being evaluated when scraped (at most --max-in-flight; past it the socket \
             answers busy and the caller evaluates the call itself)",
            in_flight.clone(),
        );
        registry.register(
            "tamper_evidence",
            "Results of calls that ran past toolgate (Claude Code: a call it denied \
             (ran_after_deny), or was never asked about (never_judged), reported after it ran), \
             each withheld from the model: something (a mod) answers around the guard \
             (deploy/prometheus/toolgate-alerts.yml)",
            tamper.clone(),
        );
        Metrics {
            registry,
            tamper,
            decisions,
            last_call,
            shadow,
            failures,
            trust_refusals,
            hook_seconds,
            evaluation_seconds,
            loads,
            fallbacks,
            errors,
            load_timeouts,
            in_flight,
            names: Mutex::new(HashSet::new()),
            tools,
            tool_names: Mutex::new(HashSet::new()),
        }
    }

    /// Counts a result withheld as tamper evidence (`kind`:
    /// [`toolgate_log::ledger::Before::tamper`]).
    pub(crate) fn tamper(&self, kind: Option<&'static str>) {
        if let Some(kind) = kind {
            self.tamper.get_or_create(&TamperLabels { kind }).inc();
        }
    }

    /// Counts what one decided call did, told as a [`Tally`]: by the
    /// server's own observer for the calls it decided, and over the socket
    /// for the ones `toolgate mcp` decided ([`toolgate::serve::Op::Tally`]).
    pub(crate) fn tally(&self, tally: &Tally) {
        let (hook, source) = match &tally.decided_by {
            Some(by) => (
                self.hook(&by.hook),
                by.source.map_or(NONE, toolgate::Source::as_str),
            ),
            None => (NONE.to_owned(), NONE),
        };
        for run in &tally.runs {
            if let Some(would) = run.shadow {
                self.shadow
                    .get_or_create(&ShadowLabels {
                        hook: self.hook(&run.hook),
                        would: would.as_str(),
                        source: run.source.as_str(),
                    })
                    .inc();
            }
            if run.skipped {
                self.trust_refusals
                    .get_or_create(&TrustLabels {
                        hook: self.hook(&run.hook),
                        policy: "skip",
                    })
                    .inc();
                continue;
            }
            // A hook toolgate would not run took no time of its own.
            if run.failure != Some(FailureKind::NotTrusted) {
                self.hook_seconds
                    .get_or_create(&BindingLabels {
                        binding: run.binding.as_str(),
                    })
                    .observe(Duration::from_micros(run.micros).as_secs_f64());
            }
            let Some(kind) = run.failure else {
                continue;
            };
            self.failures
                .get_or_create(&FailureLabels {
                    hook: self.hook(&run.hook),
                    kind: kind.as_str(),
                    source: run.source.as_str(),
                })
                .inc();
            if kind == FailureKind::NotTrusted {
                self.trust_refusals
                    .get_or_create(&TrustLabels {
                        hook: self.hook(&run.hook),
                        policy: "deny",
                    })
                    .inc();
            }
        }
        let (server, tool) = match tally
            .tool
            .strip_prefix("mcp__")
            .and_then(|rest| rest.split_once("__"))
        {
            Some((server, tool)) => (self.tool(server), self.tool(tool)),
            None => (NONE.to_owned(), self.tool(&tally.tool)),
        };
        self.tools
            .get_or_create(&ToolLabels {
                server,
                tool,
                decision: tally.decision.as_str(),
            })
            .inc();
        // Last: a scrape that counts the decision sees its runs too.
        self.decisions
            .get_or_create(&DecisionLabels {
                hook,
                decision: tally.decision.as_str(),
                source,
            })
            .inc();
    }

    /// Notes that `agent` (a mode's name, one of a fixed set) was heard now.
    pub(crate) fn heard(&self, agent: &'static str) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::SystemTime::UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
            .unwrap_or(0);
        self.last_call
            .get_or_create(&AgentLabels { agent })
            .set(now);
    }

    /// Counts one evaluation's time inside the server, and whether it was
    /// answered with an error.
    pub(crate) fn evaluation(&self, mode: &'static str, took: Duration, error: bool) {
        self.evaluation_seconds
            .get_or_create(&ModeLabels { mode })
            .observe(took.as_secs_f64());
        if error {
            self.errors.inc();
        }
    }

    /// Counts a config load: a first one (`reload` false) or after a change.
    pub(crate) fn load(&self, reload: bool, ok: bool) {
        self.loads
            .get_or_create(&LoadLabels {
                trigger: if reload { "reload" } else { "first" },
                result: if ok { "ok" } else { "failed" },
            })
            .inc();
    }

    /// Counts a request refused before it was acknowledged: its caller
    /// evaluates it itself.
    pub(crate) fn refused(&self) {
        self.fallback("refused");
    }

    /// Counts a call not taken because every in-flight slot was.
    pub(crate) fn busy(&self) {
        self.fallback("busy");
    }

    /// Sets the calls in flight (read at each scrape).
    pub(crate) fn in_flight(&self, now: usize) {
        self.in_flight.set(i64::try_from(now).unwrap_or(i64::MAX));
    }

    /// Counts a call answered by the last good config after a failed reload.
    pub(crate) fn last_good_config(&self) {
        self.fallback("last_good_config");
    }

    /// Counts a call whose deadline passed while its config loaded.
    pub(crate) fn load_timeout(&self) {
        self.load_timeouts.inc();
    }

    fn fallback(&self, reason: &'static str) {
        self.fallbacks.get_or_create(&ReasonLabels { reason }).inc();
    }

    /// A hook's `name` as a label value: itself while within the bounds,
    /// else `other`.
    fn hook(&self, name: &str) -> String {
        bounded(&self.names, name)
    }

    /// A tool's or an MCP server's `name` as a label value, bounded as
    /// hook names are (but apart: a flood of tool names, which a model or
    /// a server chooses, never takes the hooks' label values).
    fn tool(&self, name: &str) -> String {
        bounded(&self.tool_names, name)
    }

    /// The text exposition (Prometheus text format 0.0.4).
    pub(crate) fn text(&self) -> String {
        let mut text = String::new();
        // Writing to a String does not fail.
        let _ = prometheus_client::encoding::prometheus_text::encode(&mut text, &self.registry);
        text
    }
}

/// `name` as a label value in `names`: itself while within the bounds,
/// else `other`.
fn bounded(names: &Mutex<HashSet<String>>, name: &str) -> String {
    if name.len() > MAX_NAME_BYTES {
        return OTHER.to_owned();
    }
    // A poisoned lock only loses the name.
    let Ok(mut names) = names.lock() else {
        return OTHER.to_owned();
    };
    if names.contains(name) {
        return name.to_owned();
    }
    if names.len() >= MAX_HOOK_LABELS {
        return OTHER.to_owned();
    }
    names.insert(name.to_owned());
    name.to_owned()
}

impl Observer for Metrics {
    fn observe(&self, seen: &Observed<'_>) {
        match seen.ending {
            Ending::Decided(outcome) => {
                let tool = seen.request.map_or("", |r| r.tool.as_str());
                self.tally(&Tally::of(tool, outcome));
            }
            Ending::Tampered { evidence, .. } => self.tamper(evidence),
            // Counted by the host that refused it, which alone knows it
            // answered with an error (`toolgate_evaluation_errors_total`).
            Ending::Refused { .. } => {}
        }
    }
}

/// `metrics`, counted only when the server has them.
pub(crate) fn count(metrics: Option<&Metrics>, f: impl FnOnce(&Metrics)) {
    if let Some(metrics) = metrics {
        f(metrics);
    }
}
