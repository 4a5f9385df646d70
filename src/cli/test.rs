//! `toolgate test`: run fixture files through the chain and say which
//! expectations held.
//!
//! # Why its own command, not a loop over `check`
//!
//! The scaffolds' first `test.sh` compared `check`'s exit codes: a deny
//! fixture passed on exit 2, and a guard that trapped on its deny path
//! exited 2 as well (fail closed), so it reported `ok` for a guard that
//! never worked. Here each fixture is judged on the outcome itself, where a
//! failed deciding run is `failed`, its own outcome, never `deny` (see
//! `toolgate::fixture`); the chain is loaded once for every fixture; and
//! the report says what went wrong, not an exit code.
//!
//! # Fixtures
//!
//! One JSON file per call, written by hand:
//!
//! ```json
//! {
//!   "about": "sudo is refused",
//!   "request": {"tool": "Bash", "input": {"command": "sudo rm -rf /var/cache"}},
//!   "expect": {"decision": "deny", "decided_by": "no-sudo", "reason": "`sudo` is not allowed"}
//! }
//! ```
//!
//! `request` is wire v1 as `check` reads it (`event` defaults to
//! `pre_tool_use`). `expect.decision` is `allow`, `deny`, `modify`,
//! `replace` or `failed`; optional: `decided_by` (exact), the regular
//! expressions `reason` (deny, failed), `input` (modify; the final input as
//! compact JSON), `result` (replace; the output shown), `context`, `message`
//! (failed: the failure in words), and `failure` (failed: the kind, as run
//! records spell it: `trap`, `timed_out`, `exited_non_zero`, `not_trusted`,
//! …). Unknown keys and duplicate keys are refused; errors name the file,
//! the line and column, and the field.
//!
//! # Output and exit codes
//!
//! One line per fixture (`ok` or `FAIL` with why), then a libtest-style
//! summary (`test result: ok. 2 passed; 0 failed; finished in 0.12s`), or
//! with `--json` one object: every fixture, its outcome (as `check` prints
//! it, runs included), whether it passed and why not. Exit 0 when every
//! fixture passed, 100 when any failed (cargo-nextest's code), 1 when they
//! could not be run (a bad fixture, a bad config), 64 on a usage error.

use super::{EXIT_TESTS_FAILED, runtime};
use anyhow::{Context, bail};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;
use toolgate::fixture::{self, Expected, Fixture};
use toolgate::{HookRunner, wire};

/// Run fixture files (a call plus what must come of it) through the chain;
/// report which passed.
///
/// A hook that fails is never counted as a deny: its outcome is `failed`,
/// and a fixture expecting `deny` fails with what went wrong.
#[derive(clap::Args)]
#[command(after_help = "Examples:\n  \
    toolgate test          # tests/*.json through this workspace's chain\n  \
    toolgate test --hooks .toolgate/hooks.json tests/deny-sudo.json\n  \
    toolgate test --workspace examples/demo examples/demo/tests --json\n\n\
    A fixture (one JSON file):\n  \
    {\"request\": {\"tool\": \"Bash\", \"input\": {\"command\": \"sudo ls\"}},\n   \
    \"expect\": {\"decision\": \"deny\", \"decided_by\": \"no-sudo\", \"reason\": \"sudo\"}}\n\n  \
    request       the call, wire v1 as `check` reads it (event: pre_tool_use)\n  \
    about         what the fixture is for, for people\n  \
    expect:\n    \
    decision    allow | deny | modify | replace | failed (a hook failed)\n    \
    decided_by  the deciding hook's name\n    \
    reason      deny, failed: a regular expression the reason must match\n    \
    input       modify: a regular expression over the final input (JSON)\n    \
    result      replace: a regular expression over the output shown\n    \
    context     a regular expression over the advisory context\n    \
    failure     failed: the kind (trap, timed_out, exited_non_zero, ...)\n    \
    message     failed: a regular expression over the failure in words\n\n\
    Exit codes: 0 every fixture passed; 100 one or more failed; 1 could not run\n\
    them (a bad fixture or config); 64 usage.")]
pub(crate) struct Args {
    /// Run the workspace's whole chain (global hooks too, as `check` does)
    /// [default: the nearest ancestor of the working directory with a
    /// .toolgate/].
    #[arg(long, value_name = "DIR", conflicts_with = "hooks")]
    workspace: Option<PathBuf>,
    /// Run only the hooks in this hooks.json (no global hooks; paths resolve
    /// as where it lives: a `.toolgate/hooks.json` against its workspace).
    #[arg(long, value_name = "FILE")]
    hooks: Option<PathBuf>,
    /// Print one JSON object instead of lines.
    #[arg(long)]
    json: bool,
    /// Fixture files, or folders of them (their `*.json`) [default: tests/].
    #[arg(value_name = "PATH")]
    paths: Vec<PathBuf>,
}

pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let files = fixture_files(&args.paths)?;
    let fixtures = read_fixtures(&files)?;
    let config = match &args.hooks {
        Some(file) => {
            if !file.is_file() {
                bail!("--hooks {}: no such file", file.display());
            }
            super::env::bare_loader(false).hooks_file(file).load()?
        }
        None => {
            let workspace = super::workspace(args.workspace)?;
            super::env::load(&workspace.root, false)?
        }
    };
    let runner = HookRunner::builder().config(config).build();
    let started = Instant::now();
    let rt = runtime()?;
    let mut results = Vec::new();
    for (file, fixture) in files.iter().zip(&fixtures) {
        let outcome = rt.block_on(runner.evaluate(&fixture.request));
        let problems = fixture.judge(&outcome);
        results.push((file, fixture, outcome, problems));
    }
    let failed = results.iter().filter(|r| !r.3.is_empty()).count();
    let passed = results.len() - failed;
    if args.json {
        let fixtures: Vec<_> = results
            .iter()
            .map(|(file, fixture, outcome, problems)| {
                json!({
                    "file": file,
                    "passed": problems.is_empty(),
                    "expected": fixture.expect.decision.to_string(),
                    "got": Expected::of(outcome).to_string(),
                    "problems": problems,
                    "outcome": wire::outcome_json(outcome),
                })
            })
            .collect();
        let out = json!({
            "result": if failed == 0 { "ok" } else { "FAILED" },
            "passed": passed,
            "failed": failed,
            "fixtures": fixtures,
        });
        outln!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        for (file, _, _, problems) in &results {
            let file = toolgate::text::one_line(&file.display().to_string());
            if problems.is_empty() {
                outln!("{} {file}", super::colour::decision("allow", "ok  "));
            } else {
                outln!(
                    "{} {file}: {}",
                    super::colour::decision("failed", "FAIL"),
                    toolgate::text::sanitize(&problems.join("; "))
                );
            }
        }
        let verdict = if failed == 0 {
            super::colour::decision("allow", "ok")
        } else {
            super::colour::decision("failed", "FAILED")
        };
        outln!(
            "\ntest result: {verdict}. {passed} passed; {failed} failed; finished in {:.2}s",
            started.elapsed().as_secs_f64()
        );
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_TESTS_FAILED)
    })
}

/// The fixture files `paths` name (`tests/` when none): files as given,
/// folders' `*.json` in name order.
fn fixture_files(paths: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    let default = [PathBuf::from("tests")];
    let paths = if paths.is_empty() {
        &default[..]
    } else {
        paths
    };
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(path)
                .with_context(|| format!("cannot read {}", path.display()))?
                .filter_map(|entry| entry.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "json") && p.is_file())
                .collect();
            found.sort();
            if found.is_empty() {
                bail!("{}: no fixtures (*.json) in this folder", path.display());
            }
            files.extend(found);
        } else if path.is_file() {
            files.push(path.clone());
        } else {
            bail!(
                "{}: no such file or folder (fixtures are *.json files; see toolgate test --help)",
                path.display()
            );
        }
    }
    Ok(files)
}

/// Every fixture, or every problem with them at once.
fn read_fixtures(files: &[PathBuf]) -> anyhow::Result<Vec<Fixture>> {
    let mut fixtures = Vec::new();
    let mut problems = Vec::new();
    for file in files {
        match read_fixture(file) {
            Ok(f) => fixtures.push(f),
            Err(e) => problems.push(format!("{}: {e:#}", file.display())),
        }
    }
    if !problems.is_empty() {
        bail!(
            "cannot run the fixtures:\n  {}",
            toolgate::text::sanitize(&problems.join("\n  "))
        );
    }
    Ok(fixtures)
}

fn read_fixture(file: &Path) -> anyhow::Result<Fixture> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(file)?
        .take(super::MAX_STDIN + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > super::MAX_STDIN {
        bail!("larger than {} bytes", super::MAX_STDIN);
    }
    Ok(fixture::parse(&bytes)?)
}
