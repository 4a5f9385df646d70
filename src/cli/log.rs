//! `toolgate log`: the last calls in the decision log, as a table or JSON.
//!
//! The log's lines are data someone else may have shaped (a hook's stderr
//! is in them), so every cell is made printable here, the one place they
//! reach the terminal; `--json` re-serialises each line, so nothing in it
//! reaches the terminal unescaped either. A line that is not JSON (a file
//! cut by a full disk) is skipped and counted on stderr.

use serde_json::Value;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use toolgate_server::decision_log;

/// Show the last calls in the decision log ($TOOLGATE_DECISION_LOG): when,
/// which agent, which tool, what was decided, by which hook, and why a hook
/// failed.
///
/// The table's `why` is a denial's reason, or for each hook that could not
/// decide its failure kind and the last line it wrote on stderr; `--json`
/// has every field, each run record with its diagnostics (their last 4 KiB).
#[derive(clap::Args)]
#[command(after_help = "Examples:\n  \
    export TOOLGATE_DECISION_LOG=~/.local/state/toolgate/decisions.jsonl\n  \
    toolgate log -n 5\n  \
    toolgate log --json | jq '.[] | select(.decision == \"deny\") | .runs'")]
pub(crate) struct Args {
    /// Print JSON (an array, oldest first) instead of a table.
    #[arg(long)]
    json: bool,
    /// How many calls, the most recent last.
    #[arg(short = 'n', long, value_name = "N", default_value_t = 20)]
    lines: usize,
    /// The log to read [default: $TOOLGATE_DECISION_LOG].
    #[arg(long, value_name = "PATH")]
    file: Option<PathBuf>,
}

/// The most read from each file: the end of it (a log is rotated at 8 MiB,
/// so this is all of one unless it was written by something else).
const MAX_READ: u64 = 32 * 1024 * 1024;

pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let Some(path) = args.file.or_else(crate::cli::env::decision_log) else {
        anyhow::bail!(
            "no decision log: set TOOLGATE_DECISION_LOG to an absolute path (the agent \
             commands and the server then append each call to it), or give --file"
        );
    };
    let files = decision_log::files(&path);
    if files.is_empty() {
        anyhow::bail!(
            "{} does not exist yet: no call has been logged there",
            path.display()
        );
    }
    let (entries, skipped) = last_entries(&files, args.lines)?;
    if skipped > 0 {
        eprintln!(
            "toolgate: {skipped} line(s) of {} are not JSON and were skipped",
            path.display()
        );
    }
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&entries)?);
        return Ok(ExitCode::SUCCESS);
    }
    let mut table = crate::cli::table(&[
        "time (UTC)",
        "agent",
        "tool",
        "decision",
        "decided by",
        "why",
    ]);
    for e in &entries {
        let text = |key: &str| {
            e.get(key)
                .and_then(Value::as_str)
                .map(|s| toolgate::text::excerpt(s, 60))
                .unwrap_or_default()
        };
        let time = text("time").replacen('T', " ", 1);
        let time = time.split('.').next().unwrap_or_default().to_owned();
        let mut via = text("via");
        if e.get("served").and_then(Value::as_bool) == Some(true) {
            via.push_str(" (served)");
        }
        let decision = text("decision");
        table.add_row(vec![
            time,
            via,
            text("tool"),
            crate::cli::colour::decision(&decision, &decision),
            text("decided_by"),
            why(e),
        ]);
    }
    outln!("{table}");
    Ok(ExitCode::SUCCESS)
}

/// Why a call was decided as it was, in one cell: toolgate's error, else
/// each failed hook's kind and the last line of its stderr, else the
/// denial's reason.
fn why(entry: &Value) -> String {
    const WIDTH: usize = 160;
    if let Some(error) = entry.get("error").and_then(Value::as_str) {
        return toolgate::text::excerpt(error, WIDTH);
    }
    let failures: Vec<String> = entry
        .get("runs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|run| {
            let kind = run.get("failure")?.get("kind")?.as_str()?;
            let name = run.get("name").and_then(Value::as_str).unwrap_or("?");
            let last = run
                .get("diagnostics")
                .and_then(Value::as_str)
                .and_then(|d| d.lines().rev().find(|l| !l.trim().is_empty()))
                .map(|l| format!(": {}", l.trim()))
                .unwrap_or_default();
            Some(format!("{name}: {kind}{last}"))
        })
        .collect();
    if !failures.is_empty() {
        return toolgate::text::excerpt(&failures.join("; "), WIDTH);
    }
    entry
        .get("reason")
        .and_then(Value::as_str)
        .map(|r| toolgate::text::excerpt(r, WIDTH))
        .unwrap_or_default()
}

/// The last `n` lines of `files` (oldest file first) that are JSON
/// objects, oldest first; and how many lines were not.
fn last_entries(files: &[PathBuf], n: usize) -> anyhow::Result<(Vec<Value>, usize)> {
    let mut entries: Vec<Value> = Vec::new();
    let mut skipped = 0;
    for file in files.iter().rev() {
        if entries.len() >= n {
            break;
        }
        let text = tail(file)?;
        let mut older: Vec<Value> = Vec::new();
        for line in text.lines().rev().filter(|l| !l.trim().is_empty()) {
            if entries.len() + older.len() >= n {
                break;
            }
            match serde_json::from_str::<Value>(line) {
                Ok(v) if v.is_object() => older.push(v),
                _ => skipped += 1,
            }
        }
        older.reverse();
        older.append(&mut entries);
        entries = older;
    }
    Ok((entries, skipped))
}

/// The last [`MAX_READ`] bytes of `file`, from its first whole line.
fn tail(file: &Path) -> anyhow::Result<String> {
    let mut f =
        std::fs::File::open(file).map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
    let len = f.metadata()?.len();
    let start = len.saturating_sub(MAX_READ);
    f.seek(SeekFrom::Start(start))?;
    let mut bytes = Vec::new();
    f.take(MAX_READ).read_to_end(&mut bytes)?;
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    if start > 0 {
        // Cut in the middle of a line: drop its end.
        text = text
            .split_once('\n')
            .map(|(_, r)| r.to_owned())
            .unwrap_or_default();
    }
    Ok(text)
}
