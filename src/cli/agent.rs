//! `toolgate claude-code` and `toolgate codex`: be the agent's hook.
//!
//! There is one subcommand per [`Dialect`], named by it: [`Command`] builds
//! them from `Dialect::ALL`, and what differs between agents (the help, the
//! project variable) is a `match` on the dialect, so a new agent is a new
//! variant and the compiler names each place that must say what it does.
//!
//! One settings entry hands every tool call to toolgate, which runs the whole
//! ordered chain (global + workspace hooks; argv, Claude Code-style and wasm)
//! and answers in the agent's own format. The workspace is `--workspace`,
//! else `$CLAUDE_PROJECT_DIR` (Claude Code sets it), else the nearest
//! ancestor of the call's `cwd` with a `.toolgate/` (Codex sets no project
//! variable; see `config::find_workspace` for where the walk stops).
//!
//! Anything toolgate itself cannot do — unreadable input, a broken config —
//! is exit 2 with the reason on stderr: the agent blocks the call. Never a
//! silent pass. Events toolgate has no part in (`UserPromptSubmit`, `Stop`, …)
//! exit 0 with nothing printed.
//!
//! # Answering in time, and never with a crash code
//!
//! Claude Code and Codex let a call through when their hook times out,
//! crashes (any exit code but 0 and 2) or is missing. So in agent mode:
//!
//! - the whole invocation has a deadline, `--deadline-ms` (default
//!   [`DEFAULT_DEADLINE_MS`]); the chain's own deadline is cut to fit inside
//!   it, and a watchdog thread answers "blocked" (exit 2) if anything else —
//!   loading, a compile, a hang toolgate did not foresee — is still running
//!   when it passes;
//! - a panic anywhere answers "blocked" (exit 2) from the panic hook, before
//!   any unwinding, instead of the exit code 101 the agent would read as a
//!   non-blocking error;
//! - a failure to write the answer exits 2 as well: a closed stdout, one
//!   open only for reading (EBADF), `/dev/null`, or a reader that went away
//!   (EPIPE; SIGPIPE is ignored, so this is an error, not a death by signal).
//!   See `write_answer`. The reason goes to stderr without a panic when
//!   stderr is gone too (`say`).
//!
//! Exit codes in agent mode are therefore 0 (the answer is on stdout) and 2
//! (blocked) only. What cannot be caught: the process being killed from
//! outside (SIGKILL, the OOM killer) — the agent then sees a signal, and its
//! own rules apply.

use super::runtime;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};
use toolgate::HookRunner;
use toolgate::agent::{AgentCall, Outward as Dialect, read_agent_input, render_outcome};

/// Run as the agent's hook: read its stdin, run the chain, answer in its
/// format.
///
/// Exit 0 with the decision as JSON on stdout; exit 2 (the call is blocked)
/// with the reason on stderr when toolgate cannot evaluate.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// The workspace, overriding $CLAUDE_PROJECT_DIR and the call's cwd.
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// Answer within this many milliseconds, whatever happens: past it the
    /// call is blocked (exit 2). Keep it below the agent's own hook timeout
    /// (Claude Code's `timeout`, in seconds, in the hook's settings entry).
    #[arg(long, value_name = "MS", default_value_t = DEFAULT_DEADLINE_MS,
          value_parser = clap::value_parser!(u64).range(100..=600_000))]
    deadline_ms: u64,
}

/// `toolgate <agent>`: the agent subcommands, one per [`Dialect`], each
/// named by it (flattened into the top-level commands).
pub(crate) struct Command {
    pub(crate) dialect: Dialect,
    pub(crate) args: Args,
}

impl Command {
    /// The subcommand for `dialect`.
    fn subcommand(dialect: Dialect) -> clap::Command {
        use clap::Args as _;
        let (about, after_help) = match dialect {
            Dialect::ClaudeCode => (
                "Be a Claude Code hook: read its stdin, run the chain, answer in its format",
                CLAUDE_CODE_HELP,
            ),
            Dialect::Codex => (
                "Be a Codex hook: read its stdin, run the chain, answer in Codex's stricter \
                 output schema",
                CODEX_HELP,
            ),
        };
        Args::augment_args(clap::Command::new(dialect.name()))
            .about(about)
            .long_about(None)
            .after_help(after_help)
    }
}

impl clap::Subcommand for Command {
    fn augment_subcommands(cmd: clap::Command) -> clap::Command {
        Dialect::ALL.iter().fold(cmd, |cmd, dialect| {
            cmd.subcommand(Command::subcommand(*dialect))
        })
    }

    fn augment_subcommands_for_update(cmd: clap::Command) -> clap::Command {
        Command::augment_subcommands(cmd)
    }

    fn has_subcommand(name: &str) -> bool {
        name.parse::<Dialect>().is_ok()
    }
}

impl clap::FromArgMatches for Command {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        use clap::error::ErrorKind;
        let (name, sub) = matches
            .subcommand()
            .ok_or_else(|| clap::Error::new(ErrorKind::MissingSubcommand))?;
        let dialect = name
            .parse::<Dialect>()
            .map_err(|_| clap::Error::new(ErrorKind::InvalidSubcommand))?;
        Ok(Command {
            dialect,
            args: <Args as clap::FromArgMatches>::from_arg_matches(sub)?,
        })
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

/// `toolgate claude-code --help`: where Claude Code reads its hooks, and an
/// entry that pastes as valid JSON (short lines: nothing is wrapped inside a
/// string on an 80-column terminal).
pub(crate) const CLAUDE_CODE_HELP: &str = r#"Install it by absolute path in ~/.claude/settings.json, or a project's
.claude/settings.json, for PreToolUse, PostToolUse and PostToolUseFailure:

{
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "*",
        "hooks": [
          {
            "type": "command",
            "command": "/usr/local/bin/toolgate",
            "args": ["claude-code"],
            "onFailure": "block"
          }
        ]
      }
    ]
  }
}

and the same entry under "PostToolUse" and "PostToolUseFailure". "args"
runs toolgate without a shell. "onFailure": "block" (Claude Code 2.1.295
and later; older releases ignore it) blocks the call when toolgate is
missing, crashes or outlives the hook's timeout: without it, or on an
older release, such a call goes through unguarded. The README's "Coming
from Claude Code / Codex" lists what each answer becomes.

Example:
  toolgate claude-code < examples/demo/claude-pre-force-push.json"#;

/// `toolgate codex --help`: where Codex reads its hooks, and that it skips
/// hooks nobody trusted.
pub(crate) const CODEX_HELP: &str = r#"Install it by absolute path (a hook command that is not found lets calls
through) in ~/.codex/hooks.json (or $CODEX_HOME/hooks.json) for PreToolUse
and PostToolUse, then trust it once in Codex's /hooks: Codex skips hooks
nobody reviewed, without a word in `codex exec`.

{
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "*",
        "hooks": [
          {
            "type": "command",
            "command": "/usr/local/bin/toolgate codex"
          }
        ]
      }
    ]
  }
}

and the same entry under "PostToolUse". The README's "Coming from Claude
Code / Codex" lists what each answer becomes.

Example:
  toolgate codex < examples/demo/claude-pre-force-push.json"#;

/// Default `--deadline-ms`: 50 s, inside the 60 s hook timeout that Claude
/// Code long used by default and that users commonly configure, with room
/// for the agent to start the process. (Claude Code's default is now 600 s,
/// Codex's 600 s; a shorter `timeout` in the settings needs a shorter
/// `--deadline-ms`.)
pub(crate) const DEFAULT_DEADLINE_MS: u64 = 50_000;

/// How long before the watchdog the chain's own deadline ends, so the chain
/// (which names the hook that was running) answers first.
const CHAIN_MARGIN: Duration = Duration::from_millis(1_000);

pub(crate) fn run(args: Args, dialect: Dialect) -> ExitCode {
    let started = Instant::now();
    let deadline = Duration::from_millis(args.deadline_ms);
    super::set_failure_exit(super::EXIT_DENIED);
    std::panic::set_hook(Box::new(|info| {
        let what = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        say(format_args!(
            "toolgate failed (a bug: {}), so this call is blocked",
            toolgate::text::one_line(&what)
        ));
        std::process::exit(i32::from(super::EXIT_DENIED));
    }));
    let watchdog = std::thread::Builder::new()
        .name("toolgate-deadline".into())
        .spawn(move || {
            std::thread::sleep(deadline);
            say(format_args!(
                "toolgate did not finish within its deadline ({} ms, --deadline-ms), so this \
                 call is blocked",
                deadline.as_millis()
            ));
            std::process::exit(i32::from(super::EXIT_DENIED));
        });
    if let Err(e) = watchdog {
        say(format_args!(
            "toolgate cannot start its deadline watchdog ({e}), so this call is blocked"
        ));
        return ExitCode::from(super::EXIT_DENIED);
    }
    let chain_budget = deadline
        .saturating_sub(started.elapsed())
        .saturating_sub(CHAIN_MARGIN);
    match evaluate(args, dialect, started, chain_budget) {
        Ok(Some(json)) => match write_answer(&json) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                say(format_args!(
                    "toolgate cannot deliver its answer ({}), so this call is blocked",
                    toolgate::text::sanitize(&format!("{e:#}"))
                ));
                ExitCode::from(super::EXIT_DENIED)
            }
        },
        Ok(None) => ExitCode::SUCCESS,
        Err(e) => {
            // Exit 2: the agent blocks the call and shows the model stderr.
            say(format_args!(
                "toolgate could not evaluate this call, so it is blocked: {}",
                toolgate::text::sanitize(&format!("{e:#}"))
            ));
            ExitCode::from(super::EXIT_DENIED)
        }
    }
}

/// A line on stderr for the agent (it shows the model the reason of an exit
/// 2), never a panic: `eprintln!` panics when stderr is a closed pipe, and in
/// the panic hook that would abort (SIGABRT, which the agent reads as a
/// non-blocking error).
fn say(line: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// Writes the answer to stdout, or says why it could not reach the agent.
///
/// Not through `std::io::stdout()`: it reports a write to a descriptor open
/// only for reading (EBADF) as a success. A stdout the agent closed is
/// reopened on `/dev/null` by Rust's runtime before `main`, where every
/// write succeeds; an agent never hands its hook `/dev/null`, so an answer
/// bound there is an answer lost. A reader that went away is EPIPE (the
/// runtime ignores SIGPIPE, so the write fails instead of killing toolgate
/// with a signal the agent would read as a non-blocking error).
fn write_answer(json: &serde_json::Value) -> anyhow::Result<()> {
    use anyhow::Context;
    use std::io::Write;
    use std::os::fd::AsFd;
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let mut out = std::fs::File::from(
        std::io::stdout()
            .as_fd()
            .try_clone_to_owned()
            .context("stdout is not open")?,
    );
    let meta = out.metadata().context("stdout cannot be inspected")?;
    let null = std::fs::metadata("/dev/null").context("/dev/null cannot be inspected")?;
    if meta.file_type().is_char_device() && meta.rdev() == null.rdev() {
        anyhow::bail!("stdout is closed or /dev/null, where the agent cannot read it");
    }
    let mut line = json.to_string().into_bytes();
    line.push(b'\n');
    out.write_all(&line)
        .and_then(|()| out.flush())
        .context("writing to stdout failed")
}

fn evaluate(
    args: Args,
    dialect: Dialect,
    started: Instant,
    chain_budget: Duration,
) -> anyhow::Result<Option<serde_json::Value>> {
    let bytes = super::read_stdin(
        "the hook input",
        &format!("toolgate {dialect} < examples/demo/claude-pre-force-push.json"),
    )?;
    // Fault injection for the tests that pin the panic hook and the
    // watchdog; compiled out of release builds.
    #[cfg(debug_assertions)]
    match std::env::var("TOOLGATE_DEBUG_FAULT").as_deref() {
        Ok("panic") => panic!("injected by TOOLGATE_DEBUG_FAULT"),
        Ok("hang") => loop {
            std::thread::park();
        },
        _ => {}
    }
    let call = read_agent_input(&bytes, dialect)?;
    let Some(request) = &call.request else {
        return Ok(None);
    };
    // Given (--workspace, or the agent's project variable), else found by
    // walking up from the call's cwd.
    let workspace = workspace_of(args.workspace, dialect, call.cwd.as_deref())?;
    let budget = chain_budget.saturating_sub(started.elapsed());
    // A running server answers the same way, with its hooks already loaded.
    let ask = super::client::Ask::agent(dialect, &workspace, &bytes, budget);
    if let Some(reply) = super::client::ask(&ask) {
        return reply.into_agent_answer();
    }
    let config = super::env::load_for(&workspace, request)?;
    let runner = HookRunner::builder().config(config).build();
    // The chain must answer before the watchdog; loading took some of it.
    let budget = chain_budget.saturating_sub(started.elapsed());
    Ok(runtime()?.block_on(answer_call(&runner, call, dialect, budget)))
}

/// The agent's answer to `call` (`None`: nothing to print, as for an event
/// toolgate has no part in): the same whether evaluated here or by a
/// running server. The chain's deadline is cut to `budget`.
pub(crate) async fn answer_call(
    runner: &HookRunner,
    call: AgentCall,
    dialect: Dialect,
    budget: Duration,
) -> Option<serde_json::Value> {
    let request = call.request?;
    let runner = runner.with_chain_timeout(runner.chain_timeout().min(budget));
    let outcome = runner.evaluate(&request).await;
    render_outcome(&outcome, dialect, &call.hook_event_name)
}

/// The project root an agent names for its hooks, in its own variable
/// (each read by its literal name, so the README's environment table and
/// its test see it).
fn project_dir(dialect: Dialect) -> Option<PathBuf> {
    match dialect {
        Dialect::ClaudeCode => std::env::var_os("CLAUDE_PROJECT_DIR"),
        // Codex sets none; a user who sets Claude Code's still names the
        // workspace with it, as before.
        Dialect::Codex => std::env::var_os("CLAUDE_PROJECT_DIR"),
    }
    .map(PathBuf::from)
}

/// The workspace a call belongs to: `--workspace`, else the agent's project
/// variable (`$CLAUDE_PROJECT_DIR`), else found by walking up from the
/// call's `cwd`.
pub(crate) fn workspace_of(
    given: Option<PathBuf>,
    dialect: Dialect,
    cwd: Option<&str>,
) -> anyhow::Result<PathBuf> {
    let given = given.or_else(|| project_dir(dialect));
    Ok(match given {
        Some(dir) => super::workspace(Some(dir))?.root,
        None => {
            let start = cwd.map(PathBuf::from).unwrap_or_else(|| PathBuf::from("."));
            if !start.is_dir() {
                anyhow::bail!("the call's cwd {} is not a directory", start.display());
            }
            toolgate::config::find_workspace(&start, super::env::dir("HOME").as_deref()).root
        }
    })
}
