//! `toolgate <agent>` (`claude-code`, `codex`, …): be the agent's hook.
//!
//! There is one subcommand per [`Dialect`], named by it: [`Command`] builds
//! them from `Dialect::ALL`, and what differs between agents (the help, the
//! project variable, the hook timeout, how a call is blocked) is asked of
//! the dialect, whose file in crates/toolgate-agents must say it: nothing here
//! names an agent.
//!
//! One settings entry hands every tool call to toolgate, which runs the whole
//! ordered chain (global + workspace hooks; argv, Claude Code-style and wasm)
//! and answers in the agent's own format. The workspace is `--workspace`,
//! else `$CLAUDE_PROJECT_DIR` (Claude Code sets it), else the nearest
//! ancestor of the call's `cwd` with a `.toolgate/` (Codex sets no project
//! variable; see `config::find_workspace` for where the walk stops).
//!
//! Anything toolgate itself cannot do — unreadable input, a broken config —
//! blocks the call the way the agent honours (`Outward::blocked`: exit 2
//! with the reason on stderr for Claude Code and Codex). Never a silent
//! pass. Known events with no tool call (`UserPromptSubmit`, `Stop`, …)
//! exit 0 with nothing printed; an event the dialect does not know is
//! refused like any other input toolgate cannot evaluate.
//!
//! # Answering in time, and never with a crash code
//!
//! Claude Code and Codex let a call through when their hook times out,
//! crashes (any exit code but 0 and 2) or is missing. So in agent mode:
//!
//! - the whole invocation has a deadline, `--deadline-ms` (by default inside
//!   the agent's own hook timeout: `hook_process::deadline_within`), cut shorter when the
//!   agent's input names a shorter timeout; the chain's own deadline is cut
//!   to fit inside it, and a watchdog thread answers "blocked" if anything else —
//!   loading, a compile, a hang toolgate did not foresee — is still running
//!   when it passes;
//! - a panic anywhere answers "blocked" (exit 2) from the panic hook, before
//!   any unwinding, instead of the exit code 101 the agent would read as a
//!   non-blocking error;
//! - a fatal signal (a fault, or an abort: a panic where Rust cannot
//!   unwind, a stack overflow, glibc's heap checks) answers "blocked" from a
//!   signal handler that writes a block rendered before the call was read
//!   (`hook_process::crash`), instead of the death by signal the agent
//!   would read as a non-blocking error;
//! - a failure to write the answer exits 2 as well: a closed stdout, one
//!   open only for reading (EBADF), `/dev/null`, or a reader that went away
//!   (EPIPE; SIGPIPE is ignored, so this is an error, not a death by signal).
//!   See `hook_process::write_answer`. The reason goes to stderr without a
//!   panic when stderr is gone too (`hook_process::say`).
//!
//! Exit codes in agent mode are therefore 0 (the answer is on stdout) and 2
//! (blocked) only. What cannot be caught: the process being killed from
//! outside (SIGKILL, the OOM killer) — the agent then sees a signal, and its
//! own rules apply.

//!
//! The frame of it (deadline, watchdog, panic hook, reading the input, the
//! workspace, asking a running server) is `hook_process`, shared with the
//! lean client `toolgate-hook`; what is here is the command line and the
//! evaluation this process does itself when no server takes the call.

use super::hook_process::{self, Forwarded};
use super::runtime;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;
use toolgate::HookRunner;
use toolgate::agent::AgentHook as _;
use toolgate::agent::Outward as Dialect;
use toolgate::observe::{Ending, Observed, Observer as _};
use toolgate_log::Logging;

/// Run as the agent's hook: read its stdin, run the chain, answer in its
/// format.
///
/// Exit 0 with the decision as JSON on stdout; when toolgate cannot
/// evaluate, the call is blocked as the agent honours it (exit 2 with the
/// reason on stderr for Claude Code and Codex).
#[derive(clap::Args)]
pub(crate) struct Args {
    /// The workspace, overriding the agent's project variable
    /// ($CLAUDE_PROJECT_DIR, $COPILOT_PROJECT_DIR, …) and the call's cwd.
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// Answer within this many milliseconds, whatever happens: past it the
    /// call is blocked, the way the agent honours a block. Keep it below the
    /// agent's own hook timeout when you set one in its settings.
    /// [default: inside the agent's default hook timeout, at most 50000]
    #[arg(long, value_name = "MS",
          value_parser = clap::value_parser!(u64).range(100..=600_000))]
    deadline_ms: Option<u64>,
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
        let help = dialect.help();
        Args::augment_args(clap::Command::new(dialect.name()))
            .about(help.about)
            .long_about(None)
            .after_help(with_this_binary(&help.after_help))
    }
}

/// `text` with every entry naming this toolgate by its real path (the one
/// `toolgate install` writes), not a path where nothing may be installed:
/// an agent whose hook command is missing lets most calls through. When
/// the path cannot be told (or is not UTF-8), the text is kept as written.
fn with_this_binary(text: &str) -> String {
    match super::install::this_toolgate() {
        Ok(exe) => {
            // Inside a JSON string: escaped as JSON would.
            let quoted = serde_json::to_string(&exe).unwrap_or_default();
            let escaped = quoted.trim_matches('"');
            text.replace(toolgate::agent::HELP_BINARY, escaped)
        }
        Err(_) => text.to_owned(),
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

pub(crate) fn run(args: Args, dialect: Dialect) -> ExitCode {
    super::set_failure_exit(super::EXIT_DENIED);
    let deadline = args.deadline_ms;
    hook_process::run(dialect, deadline, |started| {
        evaluate(args.workspace, dialect, started)
    })
}

/// Asks a running server, else evaluates the call here.
fn evaluate(
    workspace: Option<PathBuf>,
    dialect: Dialect,
    started: Instant,
) -> anyhow::Result<Option<serde_json::Value>> {
    let (call, workspace) = match hook_process::forward(workspace, dialect, started)? {
        Forwarded::Answered(answer) => return Ok(answer),
        Forwarded::NotTaken {
            call, workspace, ..
        } => (*call, workspace),
    };
    let Some(request) = &call.request else {
        return Ok(None);
    };
    // Not asked of a server, so logged here (a server that answers logs).
    let log = super::env::decision_log()
        .map(|path| Logging::new(path, dialect.name(), false, &workspace));
    let loading = Instant::now();
    let config = super::env::load_for(&workspace, request).inspect_err(|e| {
        log.observe(&Observed {
            request: Some(request),
            ending: Ending::Refused {
                error: &toolgate::text::error_chain(e),
            },
            took: loading.elapsed(),
        });
    })?;
    let mut runner = HookRunner::builder()
        .config(config)
        .session_store(super::env::session_store());
    if let Some(log) = log {
        runner = runner.observer(std::sync::Arc::new(log));
    }
    let runner = runner.build();
    // The chain must answer before the watchdog; loading took some of it.
    let budget = hook_process::chain_budget(started);
    let ledger = toolgate_hook::env::calls_dir().map(toolgate_log::ledger::Ledger::file);
    Ok(runtime()?.block_on(toolgate_server::answer::agent(
        &runner,
        call,
        dialect,
        budget,
        ledger.as_ref(),
    )))
}
