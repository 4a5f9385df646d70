//! `toolgate replay`: run a recorded session through the chain.

use super::runtime;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use toolgate::replay::{Recording, Row};
use toolgate::{HookRunner, replay};

/// Replay a recorded session (wire-v1 requests or a Claude Code transcript,
/// JSONL) through the chain and show what it would have decided.
///
/// Prints a table (call, tool, input, decision, deciding hook, latency) and
/// totals by decision. Lines that cannot be used are reported with their line
/// number and skipped.
#[derive(clap::Args)]
#[command(after_help = "Examples:\n  \
    toolgate replay examples/demo/session.jsonl --workspace examples/demo\n  \
    # a Claude Code session of this project, as JSON:\n  \
    toolgate replay ~/.claude/projects/<project>/<session>.jsonl --json")]
pub(crate) struct Args {
    /// The recording (JSONL).
    file: PathBuf,
    /// The workspace whose .toolgate/hooks.json applies [default: the
    /// nearest ancestor of the working directory with a .toolgate/].
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(&args.file)
        .map_err(|e| anyhow::anyhow!("{}: cannot read: {e}", args.file.display()))?;
    let workspace = super::workspace(args.workspace)?;
    let recording = replay::parse(&text);
    let runner = HookRunner::builder()
        .config(super::env::load(&workspace.root, false)?)
        .build();
    let rows = runtime()?.block_on(replay::run(&runner, &recording));
    let mut totals: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &rows {
        *totals.entry(r.decision).or_default() += 1;
    }
    if args.json {
        let out = serde_json::json!({
            "file": args.file,
            "calls": recording.calls.len(),
            "rows": rows,
            "totals": totals,
            "skipped": recording.skipped,
        });
        outln!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(ExitCode::SUCCESS);
    }
    outln!("{}", rows_table(&rows));
    print_totals(&recording, &rows, &totals);
    for s in &recording.skipped {
        eprintln!(
            "{}:{}: skipped: {}",
            args.file.display(),
            s.line,
            toolgate::text::one_line(&s.reason)
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// One row per evaluated event; its own step because every cell is made
/// printable here, the one place the recording's text reaches the terminal.
fn rows_table(rows: &[Row]) -> comfy_table::Table {
    let mut table = super::table(&[
        "#", "line", "event", "tool", "input", "decision", "by", "latency",
    ]);
    for r in rows {
        let latency = if r.latency_us >= 1000 {
            format!("{:.1} ms", r.latency_us as f64 / 1000.0)
        } else {
            format!("{} µs", r.latency_us)
        };
        // The recording and the hooks' answers are someone else's text.
        table.add_row(
            [
                r.call.to_string(),
                r.line.to_string(),
                match r.event {
                    toolgate::Event::PreToolUse => "pre".to_owned(),
                    _ => "post".to_owned(),
                },
                r.tool.clone(),
                r.input.clone(),
                r.decision.to_owned(),
                r.decided_by.clone().unwrap_or_else(|| "-".into()),
                latency,
            ]
            .map(|cell| toolgate::text::one_line(&cell)),
        );
    }
    table
}

/// The totals by decision, then each denial with its reason: what a reader
/// of the table wants to know first, kept apart from the table itself.
fn print_totals(recording: &Recording, rows: &[Row], totals: &BTreeMap<&str, usize>) {
    let summary: Vec<String> = totals
        .iter()
        .map(|(d, n)| super::colour::decision(d, &format!("{n} {d}")))
        .collect();
    outln!(
        "{} calls, {} events: {}",
        recording.calls.len(),
        rows.len(),
        summary.join(", ")
    );
    let clean = toolgate::text::one_line;
    for r in rows.iter().filter(|r| r.reason.is_some()) {
        outln!(
            "  #{} {} {} {}: {}",
            r.call,
            clean(&r.tool),
            super::colour::decision("deny", "denied by"),
            clean(r.decided_by.as_deref().unwrap_or("?")),
            clean(r.reason.as_deref().unwrap_or(""))
        );
    }
}
