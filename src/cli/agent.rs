//! `toolgate <agent>` (`claude-code`, `codex`, …): be the agent's hook.
//!
//! There is one subcommand per [`Dialect`], named by it: [`Command`] builds
//! them from `Dialect::ALL`, and what differs between agents (the help, the
//! project variable, the hook timeout, how a call is blocked) is asked of
//! the dialect, whose file in `protocol/agent/` must say it: nothing here
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
//! pass. Events toolgate has no part in (`UserPromptSubmit`, `Stop`, …)
//! exit 0 with nothing printed.
//!
//! # Answering in time, and never with a crash code
//!
//! Claude Code and Codex let a call through when their hook times out,
//! crashes (any exit code but 0 and 2) or is missing. So in agent mode:
//!
//! - the whole invocation has a deadline, `--deadline-ms` (by default inside
//!   the agent's own hook timeout: [`deadline_within`]), cut shorter when the
//!   agent's input names a shorter timeout; the chain's own deadline is cut
//!   to fit inside it, and a watchdog thread answers "blocked" if anything else —
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
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use toolgate::HookRunner;
use toolgate::agent::{AgentCall, Outward as Dialect, read_agent_input, render_outcome};

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
            .after_help(help.after_help)
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

/// The longest default deadline: 50 s, inside the 60 s hook timeout that
/// Claude Code long used by default and that users commonly configure, even
/// where the agent's own default is longer (Claude Code and Codex: 600 s).
const LONGEST_DEFAULT_DEADLINE: Duration = Duration::from_secs(50);

/// The deadline that answers before an agent's hook timeout of
/// `agent_timeout`: a fifth of it (at least 200 ms, at most 10 s) is left for
/// the agent to start the process and read the answer, and no default is
/// longer than [`LONGEST_DEFAULT_DEADLINE`]. Claude Code and Codex (600 s):
/// 50 s; Gemini CLI (60 s): 50 s; Copilot CLI (30 s): 24 s.
pub(crate) fn deadline_within(agent_timeout: Duration) -> Duration {
    let margin = (agent_timeout / 5).clamp(Duration::from_millis(200), Duration::from_secs(10));
    agent_timeout
        .saturating_sub(margin)
        .min(LONGEST_DEFAULT_DEADLINE)
}

/// How long before the watchdog the chain's own deadline ends, so the chain
/// (which names the hook that was running) answers first.
const CHAIN_MARGIN: Duration = Duration::from_millis(1_000);

/// The watchdog's deadline, in milliseconds after the process started. It
/// only ever shrinks: when the agent's input names a hook timeout shorter
/// than the one the deadline was made for.
static DEADLINE_MS: AtomicU64 = AtomicU64::new(u64::MAX);

fn deadline_ms(deadline: Duration) -> u64 {
    u64::try_from(deadline.as_millis()).unwrap_or(u64::MAX)
}

/// What is left of the deadline.
fn remaining(started: Instant) -> Duration {
    Duration::from_millis(DEADLINE_MS.load(Ordering::SeqCst)).saturating_sub(started.elapsed())
}

pub(crate) fn run(args: Args, dialect: Dialect) -> ExitCode {
    let started = Instant::now();
    let deadline = args.deadline_ms.map_or_else(
        || deadline_within(dialect.default_hook_timeout()),
        Duration::from_millis,
    );
    DEADLINE_MS.store(deadline_ms(deadline), Ordering::SeqCst);
    super::set_failure_exit(super::EXIT_DENIED);
    std::panic::set_hook(Box::new(move |info| {
        let what = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        let code = block(
            dialect,
            &format!(
                "toolgate failed (a bug: {}), so this call is blocked",
                toolgate::text::one_line(&what)
            ),
        );
        std::process::exit(i32::from(code));
    }));
    let watchdog = std::thread::Builder::new()
        .name("toolgate-deadline".into())
        .spawn(move || {
            loop {
                let left = remaining(started);
                if left.is_zero() {
                    break;
                }
                // In steps: the deadline may shrink while it sleeps.
                std::thread::sleep(left.min(Duration::from_millis(50)));
            }
            let code = block(
                dialect,
                &format!(
                    "toolgate did not finish within its deadline ({} ms, --deadline-ms or the \
                     agent's hook timeout), so this call is blocked",
                    DEADLINE_MS.load(Ordering::SeqCst)
                ),
            );
            std::process::exit(i32::from(code));
        });
    if let Err(e) = watchdog {
        return ExitCode::from(block(
            dialect,
            &format!("toolgate cannot start its deadline watchdog ({e}), so this call is blocked"),
        ));
    }
    match evaluate(args, dialect, started) {
        Ok(Some(json)) => match write_answer(&json) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => ExitCode::from(block(
                dialect,
                &format!(
                    "toolgate cannot deliver its answer ({}), so this call is blocked",
                    toolgate::text::sanitize(&format!("{e:#}"))
                ),
            )),
        },
        Ok(None) => ExitCode::SUCCESS,
        Err(e) => ExitCode::from(block(
            dialect,
            &format!(
                "toolgate could not evaluate this call, so it is blocked: {}",
                toolgate::text::sanitize(&format!("{e:#}"))
            ),
        )),
    }
}

/// Blocks the call the way `dialect`'s agent honours (exit 2 with the reason
/// on stderr, or a refusal on stdout) and returns the exit code. Never
/// panics: it runs in the panic hook too.
fn block(dialect: Dialect, reason: &str) -> u8 {
    let blocked = dialect.blocked(reason);
    say(format_args!("{}", blocked.stderr));
    match &blocked.stdout {
        Some(json) => match write_answer(json) {
            Ok(()) => blocked.exit,
            // The refusal did not reach the agent: exit 2 is all that is
            // left.
            Err(_) => super::EXIT_DENIED,
        },
        None => blocked.exit,
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

/// The chain's share of what is left of the deadline.
fn chain_budget(started: Instant) -> Duration {
    remaining(started).saturating_sub(CHAIN_MARGIN)
}

fn evaluate(
    args: Args,
    dialect: Dialect,
    started: Instant,
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
    // The agent said how long it waits: answer before that.
    if let Some(timeout) = call.timeout {
        DEADLINE_MS.fetch_min(deadline_ms(deadline_within(timeout)), Ordering::SeqCst);
    }
    let Some(request) = &call.request else {
        return Ok(None);
    };
    // Given (--workspace, or the agent's project variable), else found by
    // walking up from the call's cwd.
    let workspace = workspace_of(args.workspace, dialect, call.cwd.as_deref())?;
    let budget = chain_budget(started);
    // A running server answers the same way, with its hooks already loaded.
    let ask = super::client::Ask::agent(dialect, &workspace, &bytes, budget);
    if let Some(reply) = super::client::ask(&ask) {
        return reply.into_agent_answer();
    }
    let config = super::env::load_for(&workspace, request)?;
    let runner = HookRunner::builder().config(config).build();
    // The chain must answer before the watchdog; loading took some of it.
    let budget = chain_budget(started);
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

/// The project root the agent names in its own variable, if it sets one.
fn project_dir(dialect: Dialect) -> Option<PathBuf> {
    let project_var = dialect.project_var()?;
    // Read as `project_var`: the README's environment-table test resolves it
    // to each dialect's name.
    std::env::var_os(project_var).map(PathBuf::from)
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
    match given {
        Some(dir) => Ok(super::workspace(Some(dir))?.root),
        None => workspace_from_cwd(cwd),
    }
}

/// The workspace found by walking up from the call's `cwd` (this process's
/// own when the call names none) to the nearest `.toolgate/`.
pub(crate) fn workspace_from_cwd(cwd: Option<&str>) -> anyhow::Result<PathBuf> {
    let start = cwd.map(PathBuf::from).unwrap_or_else(|| PathBuf::from("."));
    if !start.is_dir() {
        anyhow::bail!("the call's cwd {} is not a directory", start.display());
    }
    Ok(toolgate::config::find_workspace(&start, super::env::dir("HOME").as_deref()).root)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_deadline_falls_inside_each_agents_hook_timeout_with_a_margin() {
        let within = |secs: f64| deadline_within(Duration::from_secs_f64(secs)).as_secs_f64();
        // Claude Code and Codex (600 s): capped at 50 s.
        assert_eq!(within(600.0), 50.0);
        // Gemini CLI (60 s): at most 10 s left over; Copilot CLI (30 s): a
        // fifth.
        assert_eq!(within(60.0), 50.0);
        assert_eq!(within(30.0), 24.0);
        // A short configured timeout keeps at least 200 ms for the agent.
        assert_eq!(within(0.5), 0.3);
        assert_eq!(within(0.1), 0.0);
        for agent in Dialect::ALL {
            let timeout = agent.default_hook_timeout();
            assert!(deadline_within(timeout) < timeout, "{agent}");
        }
    }
}
