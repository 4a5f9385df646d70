//! `toolgate log`: the last calls in the decision log, as a table or JSON
//! lines; `log verify` walks its hash chain, `log checkpoint` signs it.
//!
//! The log's lines are data someone else may have shaped (a hook's stderr
//! is in them), so every cell is made printable here, the one place they
//! reach the terminal; `--json` re-serialises each line, so nothing in it
//! reaches the terminal unescaped either. A line that is not JSON (a file
//! cut by a full disk) is skipped and counted on stderr.
//!
//! `--json` prints JSON lines, one record per line as written (checkpoints
//! included), not one array: a collector reads records as they come, and
//! `jq` reads either. Their schema is `docs/decision-log.schema.json`.

use serde_json::Value;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use toolgate_log as decision_log;

mod follow;

/// Show the last calls in the decision log ($TOOLGATE_DECISION_LOG): when,
/// which agent, which tool, what was decided, by which hook, and why a hook
/// failed.
///
/// The table's `why` is a denial's reason, or for each hook that could not
/// decide its failure kind and the last line it wrote on stderr; `--json`
/// has every field, each run record with its diagnostics (their last 4 KiB).
#[derive(clap::Args)]
#[command(
    args_conflicts_with_subcommands = true,
    after_help = "Examples:\n  \
    export TOOLGATE_DECISION_LOG=~/.local/state/toolgate/decisions.jsonl\n  \
    toolgate log -n 5\n  \
    toolgate log --json --all | jq 'select(.decision == \"deny\") | .runs'\n  \
    toolgate log verify --pubkey ~/.config/toolgate/log.pub"
)]
pub(crate) struct Args {
    #[command(subcommand)]
    action: Option<Action>,
    /// Print JSON lines (one record per line, oldest first; checkpoints
    /// too), schema docs/decision-log.schema.json, instead of a table.
    #[arg(long)]
    json: bool,
    /// How many records, the most recent last.
    #[arg(short = 'n', long, value_name = "N", default_value_t = 20)]
    lines: usize,
    /// Every record in the log and its rotations.
    #[arg(long, conflicts_with = "lines")]
    all: bool,
    /// What the shadow hooks ("mode": "shadow") would have done, per hook,
    /// over the records read (-n, --all): how many calls each saw and would
    /// have denied, asked about, rewritten or replaced, and how many of its
    /// runs failed in a way that would have blocked.
    #[arg(long)]
    shadow: bool,
    /// After the last records, keep printing each new one as it is written
    /// (across rotations), until stopped or stdout is closed: a stream of
    /// JSON lines for a log collector.
    #[arg(short = 'f', long, requires = "json", conflicts_with = "shadow")]
    follow: bool,
    /// The log to read [default: $TOOLGATE_DECISION_LOG].
    #[arg(long, value_name = "PATH")]
    file: Option<PathBuf>,
}

#[derive(clap::Subcommand)]
enum Action {
    Verify(VerifyArgs),
    Checkpoint(CheckpointArgs),
}

/// Walk the log's hash chain (and its rotations, oldest first) and report
/// the first record that was edited, removed, inserted or reordered, a
/// partial last record, and any checkpoint whose signature does not
/// verify.
///
/// Exit 0: the chain is whole (and with --pubkey, every checkpoint
/// verifies and one covers it); 2: it is broken, the first break printed;
/// 1: the log could not be read.
#[derive(clap::Args)]
#[command(after_help = "Examples:\n  \
    toolgate log verify\n  \
    toolgate log verify --pubkey ~/.config/toolgate/log.pub --json")]
struct VerifyArgs {
    /// A minisign public key (the base64 line, or a .pub file) the
    /// checkpoints must be signed with; repeatable. With one, a log no
    /// checkpoint covers is a break.
    #[arg(long, value_name = "KEY")]
    pubkey: Vec<String>,
    /// A witness file `log checkpoint --witness` appended to (one JSON
    /// line per checkpoint): each checkpoint it kept must be in the log,
    /// with its hash. What catches a log cut back to an earlier
    /// checkpoint, or rewritten and resealed with a later checkpoint
    /// dropped; worth it when the file is an account's the user cannot
    /// write (docs/decision-log.md).
    #[arg(long, value_name = "FILE")]
    witness: Option<PathBuf>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// The log [default: $TOOLGATE_DECISION_LOG].
    #[arg(long, value_name = "PATH")]
    file: Option<PathBuf>,
}

/// Append a checkpoint to the log: a record whose minisign signature
/// covers the last record's hash, so a rewrite of the whole chain is
/// caught by `log verify --pubkey`. Run it from a timer.
///
/// The key is a minisign secret key (`minisign -G -W` makes one without a
/// password), a regular file readable by its owner alone.
#[derive(clap::Args)]
#[command(after_help = "Examples:\n  \
    minisign -G -W -p ~/.config/toolgate/log.pub -s ~/.config/toolgate/log.key\n  \
    toolgate log checkpoint --key ~/.config/toolgate/log.key")]
struct CheckpointArgs {
    /// The minisign secret key file.
    #[arg(long, value_name = "FILE")]
    key: PathBuf,
    /// Append the checkpoint's number and hash to this file (created if
    /// absent, never through a symlink) for `log verify --witness`: run
    /// as an account the user cannot write as, it is what a rollback or
    /// a resealed rewrite cannot remove.
    #[arg(long, value_name = "FILE")]
    witness: Option<PathBuf>,
    /// The log [default: $TOOLGATE_DECISION_LOG].
    #[arg(long, value_name = "PATH")]
    file: Option<PathBuf>,
}

/// The most read from each file: the end of it (a log is rotated at 8 MiB,
/// so this is all of one unless it was written by something else).
const MAX_READ: u64 = 32 * 1024 * 1024;

/// The log named by `--file`, else `$TOOLGATE_DECISION_LOG`.
fn log_path(file: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    file.or_else(crate::cli::env::decision_log).ok_or_else(|| {
        anyhow::anyhow!(
            "no decision log: set TOOLGATE_DECISION_LOG to an absolute path (the agent \
             commands and the server then append each call to it), or give --file"
        )
    })
}

/// The log's files, oldest first; an error when there are none.
fn existing_files(path: &Path) -> anyhow::Result<Vec<PathBuf>> {
    // Another user may put a `<log>.1` beside the log in a shared sticky
    // folder: never read as the user's records, and said.
    for (file, why) in decision_log::foreign_files(path) {
        eprintln!(
            "toolgate: warning: {} is not yours ({why}): not read as part of the log",
            file.display()
        );
    }
    let files = decision_log::files(path);
    if files.is_empty() {
        anyhow::bail!(
            "{} does not exist yet: no call has been logged there",
            path.display()
        );
    }
    Ok(files)
}

pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.action {
        Some(Action::Verify(v)) => return verify(v),
        Some(Action::Checkpoint(c)) => return checkpoint(c),
        None => {}
    }
    let path = log_path(args.file)?;
    if args.follow {
        // A collector may start before the first call is logged.
        follow::wait_for(&path);
    }
    let files = existing_files(&path)?;
    let n = if args.all { usize::MAX } else { args.lines };
    // Following, the live file is read once, by the follower, so that each
    // record is printed once: the last ones now, the rest as they come.
    let (follower, newest) = match args.follow {
        true => follow::start(&path, MAX_READ).map(|(f, text)| (Some(f), Some(text)))?,
        false => (None, None),
    };
    let (entries, skipped) = last_entries(&files, n, newest.as_deref())?;
    if skipped > 0 {
        eprintln!(
            "toolgate: {skipped} line(s) of {} are not JSON and were skipped",
            path.display()
        );
    }
    if args.shadow {
        return shadow_summary(&entries, args.json);
    }
    if args.json {
        // As written: a record's hash is over its bytes, so a collector
        // (or `b3sum`) can check what it was handed.
        for (line, _) in &entries {
            outln!("{line}");
        }
        if let Some(follower) = follower {
            follower.follow(&path)?;
        }
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
    for (_, e) in entries
        .iter()
        .filter(|(_, e)| e.get("kind").and_then(Value::as_str) != Some("checkpoint"))
    {
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
    let reason = entry
        .get("reason")
        .and_then(Value::as_str)
        .unwrap_or_default();
    // What a shadow hook would have done, after what did happen.
    let shadow = entry.get("shadow").and_then(|s| {
        let would = s.get("would")?.as_str()?;
        let by = s.get("by")?.as_str()?;
        Some(format!("(shadow: {by} would {would})"))
    });
    let text = match shadow {
        Some(shadow) if reason.is_empty() => shadow,
        Some(shadow) => format!("{reason} {shadow}"),
        None => reason.to_owned(),
    };
    toolgate::text::excerpt(&text, WIDTH)
}

/// A line as written, and parsed.
type Entry = (String, Value);

/// The last `n` lines of `files` (oldest file first) that are JSON
/// objects, oldest first; and how many lines were not. `newest`, when
/// given, is the newest file's text, already read.
fn last_entries(
    files: &[PathBuf],
    n: usize,
    newest: Option<&str>,
) -> anyhow::Result<(Vec<Entry>, usize)> {
    let mut entries: Vec<Entry> = Vec::new();
    let mut skipped = 0;
    for (i, file) in files.iter().rev().enumerate() {
        if entries.len() >= n {
            break;
        }
        let text = match newest {
            Some(text) if i == 0 => text.to_owned(),
            _ => tail(file)?,
        };
        let mut older: Vec<Entry> = Vec::new();
        for line in text.lines().rev().filter(|l| !l.trim().is_empty()) {
            if entries.len() + older.len() >= n {
                break;
            }
            match serde_json::from_str::<Value>(line) {
                Ok(v) if v.is_object() => older.push((line.to_owned(), v)),
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

fn verify(args: VerifyArgs) -> anyhow::Result<ExitCode> {
    use decision_log::verify::{self, Report};
    let path = log_path(args.file)?;
    let files = existing_files(&path)?;
    let keys = args
        .pubkey
        .iter()
        .map(|k| verify::public_key(k))
        .collect::<Result<Vec<_>, _>>()?;
    let witnessed = match &args.witness {
        Some(file) => verify::read_witness(file)?,
        None => Vec::new(),
    };
    let report: Report = verify::verify(&files, &keys, &witnessed)?;
    let code = if report.problem.is_some() {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    };
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(code);
    }
    let mut lines = report_lines(&report, &path, !keys.is_empty())?;
    if args.witness.is_some() && report.problem.is_none() {
        let through = report
            .witnessed_through
            .map_or("none in the log's span".into(), |s| {
                format!("the newest, {s}")
            });
        lines.insert(
            lines.len().saturating_sub(1),
            format!(
                "{} witnessed checkpoint(s) found as kept ({through})",
                report.witnessed
            ),
        );
    }
    outln!("{}", lines.join("\n"));
    Ok(code)
}

/// The verify report in words, one finding a line.
fn report_lines(
    report: &decision_log::verify::Report,
    path: &Path,
    keys_given: bool,
) -> anyhow::Result<Vec<String>> {
    let mut lines = Vec::new();
    let before = if report.problem.is_some() {
        " whole before the break"
    } else {
        ""
    };
    let span = match (report.first_seq, report.last_seq) {
        (Some(a), Some(b)) => format!("records {a}..={b}{before}"),
        _ => "no chained record".into(),
    };
    let origin = if report.from_genesis || report.first_seq.is_none() {
        ""
    } else {
        " (older records were rotated away)"
    };
    lines.push(format!(
        "{}: {} file(s), {span}{origin}",
        path.display(),
        report.files.len()
    ));
    if report.unchained_before > 0 {
        lines.push(format!(
            "{} line(s) before the chain began are not chained (written before it)",
            report.unchained_before
        ));
    }
    for (seq, bytes) in &report.torn_repaired {
        lines.push(format!(
            "record {seq}: its writer cut {bytes} bytes of a partial record before it (a writer died mid-write)"
        ));
    }
    if !keys_given {
        lines.push(format!(
            "{} checkpoint(s), not checked (give --pubkey)",
            report.checkpoints
        ));
    } else {
        let through = report
            .signed_through
            .map_or("no record".into(), |s| format!("record {s}"));
        lines.push(format!(
            "{} of {} checkpoint(s) verified; signed through {through}, {} record(s) after it not yet signed",
            report.checkpoints_verified, report.checkpoints, report.unsigned_after
        ));
    }
    match &report.problem {
        None => lines.push(format!(
            "{} the chain is whole",
            crate::cli::colour::decision("allow", "ok:")
        )),
        Some(p) => {
            let kind = serde_json::to_value(p.kind)?;
            let at = match p.seq {
                Some(seq) => format!("{}:{} (record {seq})", p.file.display(), p.line),
                None if p.line > 0 => format!("{}:{}", p.file.display(), p.line),
                None => p.file.display().to_string(),
            };
            lines.push(format!(
                "{} {} at {at}: {}",
                crate::cli::colour::decision("deny", "broken:"),
                kind.as_str().unwrap_or("?"),
                toolgate::text::sanitize(&p.message)
            ));
        }
    }
    Ok(lines)
}

fn checkpoint(args: CheckpointArgs) -> anyhow::Result<ExitCode> {
    use decision_log::checkpoint;
    let path = log_path(args.file)?;
    let key = checkpoint::SigningKey::load(&args.key)?;
    let written = checkpoint::write(&path, &key)?;
    outln!(
        "checkpoint {} signed by key {} over record {} (hash {})",
        written.checkpoint.seq,
        key.id,
        written.covered.seq,
        written.covered.hash
    );
    if let Some(witness) = &args.witness {
        use anyhow::Context as _;
        use std::io::Write as _;
        use std::os::unix::fs::OpenOptionsExt as _;
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o644)
            .custom_flags(nix::libc::O_NOFOLLOW)
            .open(witness)
            .with_context(|| format!("the witness file {}", witness.display()))?;
        file.write_all(format!("{}\n", checkpoint::witness_line(&written)).as_bytes())
            .with_context(|| format!("the witness file {}", witness.display()))?;
        outln!("witnessed in {}", witness.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// One shadow hook's runs over the records read.
#[derive(Default, serde::Serialize)]
struct ShadowCount {
    hook: String,
    source: String,
    runs: u64,
    would_deny: u64,
    would_ask: u64,
    would_modify: u64,
    would_replace: u64,
    /// Failures that would have blocked (its `on_failure` is deny).
    would_fail: u64,
}

fn shadow_summary(entries: &[Entry], json: bool) -> anyhow::Result<ExitCode> {
    let counts = shadow_counts(entries);
    if json {
        outln!("{}", serde_json::to_string_pretty(&counts)?);
        return Ok(ExitCode::SUCCESS);
    }
    if counts.is_empty() {
        outln!(
            "no shadow hook ran in the {} record(s) read (a hook runs in shadow with \"mode\": \"shadow\")",
            entries.len()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let mut table = crate::cli::table(&[
        "shadow hook",
        "source",
        "runs",
        "would deny",
        "would ask",
        "would rewrite",
        "would replace",
        "would fail closed",
    ]);
    for c in &counts {
        let share = |n: u64| {
            if n == 0 {
                "0".to_owned()
            } else {
                format!("{n} ({:.1}%)", n as f64 * 100.0 / c.runs as f64)
            }
        };
        table.add_row(vec![
            toolgate::text::excerpt(&c.hook, 60),
            toolgate::text::excerpt(&c.source, 20),
            c.runs.to_string(),
            share(c.would_deny),
            share(c.would_ask),
            share(c.would_modify),
            share(c.would_replace),
            share(c.would_fail),
        ]);
    }
    outln!("{table}");
    Ok(ExitCode::SUCCESS)
}

/// Each shadow hook's runs over `entries`, by hook and source, in the order
/// first seen.
fn shadow_counts(entries: &[Entry]) -> Vec<ShadowCount> {
    let mut counts: Vec<ShadowCount> = Vec::new();
    let runs = entries
        .iter()
        .filter_map(|(_, e)| e.get("runs").and_then(Value::as_array))
        .flatten()
        .filter(|r| r.get("shadow").and_then(Value::as_bool) == Some(true));
    for run in runs {
        let text = |k: &str| run.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
        let (hook, source) = (text("name"), text("source"));
        let at = match counts
            .iter()
            .position(|c| c.hook == hook && c.source == source)
        {
            Some(at) => at,
            None => {
                counts.push(ShadowCount {
                    hook,
                    source,
                    ..ShadowCount::default()
                });
                counts.len() - 1
            }
        };
        let count = &mut counts[at];
        count.runs += 1;
        match text("verdict").as_str() {
            "deny" => count.would_deny += 1,
            "ask" => count.would_ask += 1,
            "modify" => count.would_modify += 1,
            "replace" => count.would_replace += 1,
            "failed"
                if run.pointer("/failure/on_failure").and_then(Value::as_str) == Some("deny") =>
            {
                count.would_fail += 1
            }
            _ => {}
        }
    }
    counts
}
