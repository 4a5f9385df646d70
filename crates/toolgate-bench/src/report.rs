//! The bench's report: typed, serialised as `--json`, printed as tables.

use serde::Serialize;
use std::fmt;

/// Everything one run measured.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The machine, as far as the bench can tell.
    pub machine: Machine,
    /// Load average before the measurements.
    pub load_before: String,
    /// Load average after them.
    pub load_after: String,
    /// The engine that ran the components.
    pub wasm_engine: serde_json::Value,
    /// Interleaved rounds.
    pub rounds: usize,
    /// The scenario ratios are taken against.
    pub reference: String,
    /// Per-call latency, one row per scenario.
    pub latency: Vec<Row>,
    /// Cold compile against cache hit, per guest.
    pub loads: Vec<Load>,
    /// Calls per second with one and two threads.
    pub throughput: Throughput,
    /// Resident memory per live instance of the reference guest.
    pub resident_bytes_per_instance: u64,
    /// The decision log's cost per decision.
    pub decision_log: LogCost,
    /// Each target, met or not.
    pub budget: Vec<Target>,
    /// Whether this binary was built without optimisations (its numbers are
    /// not the product's).
    pub debug_build: bool,
}

/// The machine.
#[derive(Clone, Debug, Serialize)]
pub struct Machine {
    /// CPU model.
    pub cpu: String,
    /// Cores available.
    pub cores: usize,
    /// Kernel release.
    pub kernel: String,
    /// Load average when the run started.
    pub loadavg: String,
}

/// One row of the latency table.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// What was measured.
    pub scenario: String,
    /// Calls timed.
    pub calls: usize,
    /// Median, µs.
    pub median_us: f64,
    /// 99th percentile, µs.
    pub p99_us: f64,
    /// Mean rate.
    pub calls_per_s: f64,
    /// Median over the reference row's median.
    pub ratio_to_reference: Option<f64>,
}

/// Loading one guest.
#[derive(Clone, Debug, Serialize)]
pub struct Load {
    /// The guest.
    pub guest: String,
    /// Its size.
    pub bytes: u64,
    /// Its compiled code: the compile cache's entry, which each load maps.
    pub compiled_bytes: u64,
    /// Resident memory each live instance adds (the pool slot's pages it
    /// touched), over instances alive at once.
    pub resident_bytes_per_instance: u64,
    /// Median cold compile, ms.
    pub cold_compile_ms: f64,
    /// Median cache hit, ms.
    pub cache_hit_ms: f64,
}

/// Calls per second on the reference guest.
#[derive(Clone, Debug, Serialize)]
pub struct Throughput {
    /// The guest.
    pub guest: String,
    /// With one task.
    pub one_thread_calls_per_s: f64,
    /// With two.
    pub two_threads_calls_per_s: f64,
    /// Two over one.
    pub ratio: f64,
}

/// Appending one record to the decision log (serialised, chained, written
/// under the file's lock), per decision.
#[derive(Clone, Debug, Serialize)]
pub struct LogCost {
    /// Records appended.
    pub records: usize,
    /// Median, µs.
    pub median_us: f64,
    /// 99th percentile, µs.
    pub p99_us: f64,
    /// The record's size.
    pub bytes_per_record: u64,
}

/// One budget line.
#[derive(Clone, Debug, Serialize)]
pub struct Target {
    /// The target in words.
    pub target: String,
    /// What was measured.
    pub value: f64,
    /// Its unit.
    pub unit: &'static str,
    /// Whether the target is met.
    pub met: bool,
    /// Whether this run measured it at all (when not, `met` is false and
    /// `value` NaN).
    pub measured: bool,
}

impl Target {
    /// A target that `value` must be at most (`at_most`) or at least `limit`.
    pub(crate) fn new(
        target: String,
        value: f64,
        limit: f64,
        unit: &'static str,
        at_most: bool,
    ) -> Self {
        let met = if at_most {
            value <= limit
        } else {
            value >= limit
        };
        Target {
            target,
            value,
            unit,
            met,
            measured: true,
        }
    }

    /// A target this run could not measure (its row was skipped).
    pub(crate) fn not_measured(target: String) -> Self {
        Target {
            target,
            value: f64::NAN,
            unit: "",
            met: false,
            measured: false,
        }
    }
}

impl Machine {
    /// The machine and the load around the run, and a warning when the
    /// binary is a debug build.
    fn write(
        &self,
        f: &mut fmt::Formatter<'_>,
        before: &str,
        after: &str,
        debug_build: bool,
    ) -> fmt::Result {
        writeln!(
            f,
            "machine: {} · {} cores · Linux {} · load {before} → {after}",
            self.cpu, self.cores, self.kernel,
        )?;
        if debug_build {
            writeln!(
                f,
                "note: this is a debug build of toolgate; its numbers are not the product's \
                 (build with `cargo build --release` and run target/release/toolgate bench)"
            )?;
        }
        Ok(())
    }
}

fn fmt_us(us: f64) -> String {
    if us >= 1e6 {
        format!("{:.2} s", us / 1e6)
    } else if us >= 1e3 {
        format!("{:.2} ms", us / 1e3)
    } else {
        format!("{us:.2} µs")
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write(f, None)
    }
}

impl Report {
    /// The tables and figures as text, tables fitted to `width` columns when
    /// given (cells wrap), whole otherwise (what `Display` gives).
    pub fn render(&self, width: Option<u16>) -> String {
        struct Fitted<'a>(&'a Report, Option<u16>);
        impl fmt::Display for Fitted<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.write(f, self.1)
            }
        }
        Fitted(self, width).to_string()
    }

    fn write(&self, f: &mut fmt::Formatter<'_>, width: Option<u16>) -> fmt::Result {
        self.write_setup(f)?;
        writeln!(
            f,
            "per-call latency (reference: {})\n{}\n",
            self.reference,
            self.latency_table(width)
        )?;
        writeln!(
            f,
            "loading a component, and what a loaded one holds\n{}\n\
             (compiled: mapped once per loaded guest, its pages shared through the page \
             cache; per live instance: while a call runs, in a pool slot that keeps at \
             most 1 MiB of each memory resident between calls)\n",
            self.loads_table(width)
        )?;
        self.write_figures(f)
    }

    /// What the numbers were measured on (machine, build, engine): its own
    /// step because a reader must weigh every figure below against it.
    fn write_setup(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.machine
            .write(f, &self.load_before, &self.load_after, self.debug_build)?;
        let e = &self.wasm_engine;
        writeln!(
            f,
            "wasmtime {} · {} allocator · fuel on · epoch tick {} ms · max wasm stack {} KiB · {} interleaved rounds\n",
            e["wasmtime"].as_str().unwrap_or("?"),
            e["allocator"]["kind"].as_str().unwrap_or("?"),
            e["epoch_tick_ms"],
            e["max_wasm_stack"].as_u64().unwrap_or(0) / 1024,
            self.rounds,
        )
    }

    /// Per-call latency, one row per scenario.
    fn latency_table(&self, width: Option<u16>) -> comfy_table::Table {
        let mut table = new_table(
            width,
            &[
                "scenario",
                "calls",
                "median",
                "p99",
                "calls/s",
                "× reference",
            ],
        );
        for r in &self.latency {
            table.add_row([
                r.scenario.clone(),
                r.calls.to_string(),
                fmt_us(r.median_us),
                fmt_us(r.p99_us),
                format!("{:.0}", r.calls_per_s),
                format!("{:.2}", r.ratio_to_reference.unwrap_or(f64::NAN)),
            ]);
        }
        table
    }

    /// Cold compile against cache hit, one row per guest.
    fn loads_table(&self, width: Option<u16>) -> comfy_table::Table {
        let mut table = new_table(
            width,
            &[
                "guest",
                "size",
                "compiled (cache entry)",
                "per live instance",
                "cold compile",
                "cache hit",
            ],
        );
        for l in &self.loads {
            table.add_row([
                l.guest.clone(),
                format!("{} KiB", l.bytes / 1024),
                format!("{} KiB", l.compiled_bytes / 1024),
                format!("{} KiB", l.resident_bytes_per_instance / 1024),
                format!("{:.2} ms", l.cold_compile_ms),
                format!("{:.3} ms", l.cache_hit_ms),
            ]);
        }
        table
    }

    /// Throughput, memory and the budget: single figures, not tables, so
    /// they are written as lines after the tables.
    fn write_figures(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = &self.throughput;
        writeln!(
            f,
            "throughput ({}): 1 thread {:.0} calls/s · 2 threads {:.0} calls/s · ×{:.2}",
            t.guest, t.one_thread_calls_per_s, t.two_threads_calls_per_s, t.ratio,
        )?;
        writeln!(
            f,
            "resident memory per live instance: {:.1} KiB",
            self.resident_bytes_per_instance as f64 / 1024.0
        )?;
        let l = &self.decision_log;
        writeln!(
            f,
            "decision log, per decision ({} records of {} bytes, chained): median {} · p99 {}\n",
            l.records,
            l.bytes_per_record,
            fmt_us(l.median_us),
            fmt_us(l.p99_us),
        )?;
        write_budget(f, &self.budget)
    }
}

/// The budget lines, each met (✓), not (✗) or not measured (·).
fn write_budget(f: &mut fmt::Formatter<'_>, budget: &[Target]) -> fmt::Result {
    writeln!(f, "budget")?;
    for b in budget {
        if !b.measured {
            writeln!(f, "  · {:<60} not measured", b.target)?;
            continue;
        }
        writeln!(
            f,
            "  {} {:<60} {:.2} {}",
            if b.met { "✓" } else { "✗" },
            b.target,
            b.value,
            b.unit,
        )?;
    }
    Ok(())
}

impl fmt::Display for super::AgentReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write(f, None)
    }
}

impl super::AgentReport {
    /// The tables as text, fitted to `width` columns when given.
    pub fn render(&self, width: Option<u16>) -> String {
        struct Fitted<'a>(&'a super::AgentReport, Option<u16>);
        impl fmt::Display for Fitted<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.write(f, self.1)
            }
        }
        Fitted(self, width).to_string()
    }

    fn write(&self, f: &mut fmt::Formatter<'_>, width: Option<u16>) -> fmt::Result {
        self.machine
            .write(f, &self.load_before, &self.load_after, self.debug_build)?;
        for why in &self.skipped {
            writeln!(f, "skipped: {why}")?;
        }
        if self.releases.is_empty() {
            return Ok(());
        }
        writeln!(
            f,
            "per tool call inside Claude Code: from the mock model's `tool_use` ({}) to the \
             request carrying its result; hooks on PreToolUse, PostToolUse and \
             PostToolUseFailure; guard {}; {} sessions × {} calls each (first {} left out), \
             interleaved\n",
            self.tool, self.guard, self.sessions, self.calls_per_session, self.warmup,
        )?;
        for release in &self.releases {
            let first = format!("Claude Code {}", release.claude);
            let mut table = new_table(
                width,
                &[
                    &first,
                    "calls",
                    "median",
                    "p99",
                    "over no hook",
                    "probe denied",
                ],
            );
            for r in &release.rows {
                if let Some(why) = &r.skipped {
                    table.add_row([r.config.clone(), "–".into(), format!("skipped: {why}")]);
                    continue;
                }
                table.add_row([
                    r.config.clone(),
                    if r.errors > 0 {
                        format!("{} ({} errors)", r.calls, r.errors)
                    } else {
                        r.calls.to_string()
                    },
                    fmt_us(r.median_us),
                    fmt_us(r.p99_us),
                    r.over_no_hook_us
                        .map_or("–".into(), |us| format!("{:+.2} ms", us / 1e3)),
                    format!("{}/{}", r.probes_denied, r.sessions),
                ]);
            }
            writeln!(
                f,
                "{table}
"
            )?;
        }
        write_budget(f, &self.budget)
    }
}

/// A table in the report's style, fitted to `width` columns when given.
pub(super) fn new_table(width: Option<u16>, header: &[&str]) -> comfy_table::Table {
    use comfy_table::{ContentArrangement, Table, presets::UTF8_FULL_CONDENSED};
    let mut table = Table::new();
    if let Some(w) = width {
        table
            .set_content_arrangement(ContentArrangement::Dynamic)
            .set_width(w);
    }
    table
        .load_style(UTF8_FULL_CONDENSED)
        .set_header(header.to_vec());
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_debug_build_says_its_numbers_are_not_the_products() {
        let report = Report {
            machine: Machine {
                cpu: "cpu".into(),
                cores: 2,
                kernel: "6".into(),
                loadavg: "0".into(),
            },
            load_before: "0".into(),
            load_after: "0".into(),
            wasm_engine: serde_json::json!({}),
            rounds: 1,
            reference: "r".into(),
            latency: Vec::new(),
            loads: Vec::new(),
            throughput: Throughput {
                guest: "r".into(),
                one_thread_calls_per_s: 1.0,
                two_threads_calls_per_s: 2.0,
                ratio: 2.0,
            },
            resident_bytes_per_instance: 0,
            decision_log: LogCost {
                records: 1,
                median_us: 1.0,
                p99_us: 1.0,
                bytes_per_record: 1,
            },
            budget: vec![Target::new("t".into(), 1.0, 2.0, "µs", true)],
            debug_build: true,
        };
        let text = report.to_string();
        assert!(text.contains("debug build"), "{text}");
        assert!(text.contains("✓ t"), "{text}");
        let narrow = Report {
            latency: vec![Row {
                scenario: "a scenario with a long name that would not fit ".repeat(3),
                calls: 1,
                median_us: 1.0,
                p99_us: 1.0,
                calls_per_s: 1.0,
                ratio_to_reference: Some(1.0),
            }],
            ..report.clone()
        }
        .render(Some(80));
        for line in narrow
            .lines()
            .filter(|l| l.starts_with(['│', '┌', '└', '╞']))
        {
            assert!(line.chars().count() <= 80, "{line}");
        }
        let release = Report {
            debug_build: false,
            ..report
        };
        assert!(!release.to_string().contains("debug build"));
    }
}
