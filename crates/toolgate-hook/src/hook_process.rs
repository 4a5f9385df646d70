//! What every process that is an agent's hook does, in both binaries:
//! `toolgate <agent>` and the lean `toolgate-hook <agent>` (`lean.rs`).
//!
//! # Why one frame for two binaries
//!
//! The lean client must give the same answers, exit codes and blocks as
//! `toolgate <agent>`: the same deadline and watchdog, the same panic hook,
//! the same reading of the agent's input and of the workspace, the same
//! request to the server. They differ only in what happens when no server
//! takes the call: `toolgate <agent>` evaluates it itself, the lean client
//! hands it to the full `toolgate`. So everything up to that point is here,
//! once, and each binary passes its own last step ([`run`], [`forward`]).
//! See `agent.rs` for the rules (answering in time, never with a crash
//! code).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use toolgate_agents::AgentHook as _;
use toolgate_agents::{AgentCall, Outward as Dialect, read_agent_input};

/// Exit code: the call is denied (`check`), or blocked (agent mode).
pub const EXIT_DENIED: u8 = 2;

/// Exit code of `check`: the call is blocked because a hook failed (here
/// because `client.rs`, which the lean client compiles too, gives it).
pub const EXIT_HOOK_FAILED: u8 = 3;

/// `check`'s exit code for `outcome`: 0 the call may proceed,
/// [`EXIT_DENIED`] a hook denied it, [`EXIT_HOOK_FAILED`] it is blocked
/// because a hook failed (never reported as a decided deny). The one-shot
/// `check` and the server's answer it alike.
pub fn check_exit(outcome: &toolgate_contract::outcome::Outcome) -> u8 {
    if outcome.may_proceed() {
        0
    } else if outcome.blocked_by_failure().is_some() {
        EXIT_HOOK_FAILED
    } else {
        EXIT_DENIED
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
pub fn deadline_within(agent_timeout: Duration) -> Duration {
    let margin = (agent_timeout / 5).clamp(Duration::from_millis(200), Duration::from_secs(10));
    agent_timeout
        .saturating_sub(margin)
        .min(LONGEST_DEFAULT_DEADLINE)
}

/// How long before the watchdog the chain's own deadline ends, so the chain
/// (which names the hook that was running) answers first.
const CHAIN_MARGIN: Duration = Duration::from_millis(1_000);

// A server that took the call is waited for past the chain's deadline; that
// wait must end before the watchdog, so the agent reads why.
const _: () = assert!(crate::client::SERVER_GRACE.as_millis() < CHAIN_MARGIN.as_millis());

/// Set by the first thread to answer the agent (the evaluation, the
/// watchdog or the panic hook); any other parks instead of writing a second
/// answer or calling `exit` beside it (glibc's `exit` is not safe to call
/// from two threads at once).
static ANSWERING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether this thread is the one that answers; if not, it must never
/// answer (see [`ANSWERING`]).
fn claim_answer() -> bool {
    !ANSWERING.swap(true, Ordering::SeqCst)
}

/// Never returns: another thread is answering and will end the process.
fn park_forever() -> ! {
    loop {
        std::thread::park();
    }
}

/// The watchdog's deadline, in milliseconds after the process started. It
/// only ever shrinks: when the agent's input names a hook timeout shorter
/// than the one the deadline was made for.
static DEADLINE_MS: AtomicU64 = AtomicU64::new(u64::MAX);

fn deadline_ms(deadline: Duration) -> u64 {
    u64::try_from(deadline.as_millis()).unwrap_or(u64::MAX)
}

/// What is left of the deadline (cut by the agent's input once it is
/// read).
pub fn remaining(started: Instant) -> Duration {
    Duration::from_millis(DEADLINE_MS.load(Ordering::SeqCst)).saturating_sub(started.elapsed())
}

/// Runs `evaluate` as the agent's hook: within the deadline (`--deadline-ms`,
/// else inside the agent's hook timeout), a panic or the watchdog blocking
/// the call, and its answer written where the agent reads it.
pub fn run(
    dialect: Dialect,
    deadline_ms_given: Option<u64>,
    evaluate: impl FnOnce(Instant) -> anyhow::Result<Option<serde_json::Value>>,
) -> ExitCode {
    let started = Instant::now();
    let deadline = deadline_ms_given.map_or_else(
        || deadline_within(dialect.default_hook_timeout()),
        Duration::from_millis,
    );
    DEADLINE_MS.store(deadline_ms(deadline), Ordering::SeqCst);
    if let Err(e) = crash::arm(dialect) {
        return ExitCode::from(block(
            dialect,
            &format!("toolgate cannot arm its crash answer ({e}), so this call is blocked"),
        ));
    }
    std::panic::set_hook(Box::new(move |info| {
        let what = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        if !claim_answer() {
            park_forever();
        }
        let code = block(
            dialect,
            &format!(
                "toolgate failed (a bug: {}), so this call is blocked",
                toolgate_contract::text::one_line(&what)
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
            if !claim_answer() {
                // The evaluation is answering: it ends the process.
                return;
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
    let answer = evaluate(started);
    if !claim_answer() {
        // The watchdog (or the panic hook) is answering and ending the
        // process.
        park_forever();
    }
    match answer {
        Ok(Some(json)) => match write_answer(&json) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => ExitCode::from(block(
                dialect,
                &format!(
                    "toolgate cannot deliver its answer ({}), so this call is blocked",
                    toolgate_contract::text::sanitize(&format!("{e:#}"))
                ),
            )),
        },
        Ok(None) => ExitCode::SUCCESS,
        Err(e) => ExitCode::from(block(
            dialect,
            &format!(
                "toolgate could not evaluate this call, so it is blocked: {}",
                toolgate_contract::text::sanitize(&format!("{e:#}"))
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
            Err(_) => EXIT_DENIED,
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
    let mut out = stdout_the_agent_reads()?;
    out.write_all(&answer_line(json))
        .and_then(|()| out.flush())
        .context("writing to stdout failed")
}

/// A handle on stdout, if it is somewhere the agent can read (see
/// [`write_answer`]).
fn stdout_the_agent_reads() -> anyhow::Result<std::fs::File> {
    use anyhow::Context;
    use std::os::fd::AsFd;
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let out = std::fs::File::from(
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
    Ok(out)
}

/// An answer as the agent reads it: one line of JSON.
fn answer_line(json: &serde_json::Value) -> Vec<u8> {
    let mut line = json.to_string().into_bytes();
    line.push(b'\n');
    line
}

/// A crash answers "blocked" too.
///
/// A panic is caught by the panic hook, but a fatal signal is not a panic:
/// a fault in wasmtime's generated code or in a C library, `abort()` from
/// glibc's heap checks or from Rust itself (a panic where it cannot
/// unwind, a stack overflow) ends the process with a signal, which Claude
/// Code and Codex read as a non-blocking error and let the call through.
/// So the process handles SIGSEGV, SIGBUS, SIGILL, SIGFPE and SIGABRT: the
/// handler writes a block rendered before anything was evaluated and exits
/// with the block's code. A signal handler may only make async-signal-safe
/// calls, so it does no formatting, allocation or locking: `write(2)` of
/// the bytes rendered at [`crash::arm`], an atomic to learn whether another
/// thread is already answering, and `_exit(2)`. The alternative, a
/// supervising parent process, costs a process per call, for the same
/// answer. What still cannot be answered: SIGKILL and the OOM killer.
mod crash {
    // Installing a signal handler is `unsafe` in any binding, and inside
    // one only raw `write(2)` and `_exit(2)` are safe to call (std's
    // stdout takes a lock and may allocate).
    #![allow(unsafe_code)]
    use super::{EXIT_DENIED, claim_answer};
    use nix::libc;
    use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};
    use std::sync::OnceLock;
    use toolgate_agents::AgentHook as _;
    use toolgate_agents::Outward as Dialect;

    const FATAL: [Signal; 5] = [
        Signal::SIGSEGV,
        Signal::SIGBUS,
        Signal::SIGILL,
        Signal::SIGFPE,
        Signal::SIGABRT,
    ];

    /// The block for one signal, ready to write.
    struct Rendered {
        signal: libc::c_int,
        stdout: Vec<u8>,
        stderr: Vec<u8>,
        exit: u8,
    }

    static RENDERED: OnceLock<Vec<Rendered>> = OnceLock::new();

    /// Renders the block for each fatal signal, then installs the handler.
    pub(super) fn arm(dialect: Dialect) -> nix::Result<()> {
        // Where stdout is not somewhere the agent reads, the block is exit
        // 2 alone, as `block` does when its write fails.
        let stdout_readable = super::stdout_the_agent_reads().is_ok();
        let rendered = FATAL
            .iter()
            .map(|signal| {
                let blocked = dialect.blocked(&format!(
                    "toolgate crashed ({}: a bug), so this call is blocked",
                    signal.as_str()
                ));
                let (stdout, exit) = match (&blocked.stdout, stdout_readable) {
                    (Some(json), true) => (super::answer_line(json), blocked.exit),
                    (Some(_), false) => (Vec::new(), EXIT_DENIED),
                    (None, _) => (Vec::new(), blocked.exit),
                };
                Rendered {
                    signal: *signal as libc::c_int,
                    stdout,
                    stderr: format!("{}\n", blocked.stderr).into_bytes(),
                    exit,
                }
            })
            .collect();
        // Armed once a process: a second `run` keeps the first rendering.
        let _ = RENDERED.set(rendered);
        // On the alternate stack std gives each of its threads, so a stack
        // overflow is answered too.
        let action = SigAction::new(
            SigHandler::Handler(on_fatal_signal),
            SaFlags::SA_ONSTACK,
            SigSet::all(),
        );
        for signal in FATAL {
            // SAFETY: the handler makes only async-signal-safe calls (see
            // the module docs) and reads `RENDERED`, set before this.
            unsafe { sigaction(signal, &action) }?;
        }
        Ok(())
    }

    /// All of `bytes` to `fd`, or false.
    fn write_all(fd: libc::c_int, mut bytes: &[u8]) -> bool {
        while !bytes.is_empty() {
            // SAFETY: a valid buffer and its length.
            let n = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
            if n <= 0 {
                return false;
            }
            bytes = bytes.get(n.unsigned_abs()..).unwrap_or_default();
        }
        true
    }

    extern "C" fn on_fatal_signal(signal: libc::c_int) {
        // A thread already answering may have written an allow: exit 2
        // overrides it for every agent that honours exit 2.
        let first = claim_answer();
        let rendered = RENDERED
            .get()
            .and_then(|all| all.iter().find(|r| r.signal == signal));
        let code = match rendered {
            Some(r) => {
                let delivered = !first || write_all(libc::STDOUT_FILENO, &r.stdout);
                write_all(libc::STDERR_FILENO, &r.stderr);
                if first && delivered {
                    r.exit
                } else {
                    EXIT_DENIED
                }
            }
            None => EXIT_DENIED,
        };
        // SAFETY: `_exit` is async-signal-safe and never returns.
        unsafe { libc::_exit(libc::c_int::from(code)) }
    }
}

/// The chain's share of what is left of the deadline.
pub fn chain_budget(started: Instant) -> Duration {
    remaining(started).saturating_sub(CHAIN_MARGIN)
}

/// Where [`forward`] left a call.
#[derive(Debug)]
pub enum Forwarded {
    /// A server answered (or toolgate itself answered: an event it has no
    /// part in): print this.
    Answered(Option<serde_json::Value>),
    /// No server took it: evaluate it (`toolgate <agent>`) or hand it to
    /// the full binary (`toolgate-hook`).
    NotTaken {
        /// The agent's input as read.
        call: Box<AgentCall>,
        /// Its bytes, as read on stdin (the lean client hands them to the
        /// full binary; `toolgate <agent>` has them parsed in `call`).
        bytes: Vec<u8>,
        /// The call's workspace.
        workspace: PathBuf,
    },
}

/// Reads the agent's input and asks a running server: everything a hook
/// process does before it must evaluate a call itself. `workspace` is
/// `--workspace`.
pub fn forward(
    workspace: Option<PathBuf>,
    dialect: Dialect,
    started: Instant,
) -> anyhow::Result<Forwarded> {
    let bytes = crate::env::read_stdin(
        "the hook input",
        &format!("toolgate {dialect} < examples/demo/claude-pre-force-push.json"),
    )?;
    // Fault injection for the tests that pin the panic hook and the
    // watchdog; compiled out of release builds.
    #[cfg(debug_assertions)]
    match std::env::var("TOOLGATE_DEBUG_FAULT").as_deref() {
        Ok("panic") => panic!("injected by TOOLGATE_DEBUG_FAULT"),
        Ok("abort") => std::process::abort(),
        Ok("segv") => {
            let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGSEGV);
        }
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
    if call.request.is_none() {
        return Ok(Forwarded::Answered(None));
    }
    // Given (--workspace, or the agent's project variable), else found by
    // walking up from the call's cwd.
    let workspace = workspace_of(workspace, dialect, call.cwd.as_deref())?;
    // A running server answers the same way, with its hooks already loaded.
    let ask = crate::client::Ask::agent(dialect, &workspace, &bytes, chain_budget(started));
    if let Some(reply) = crate::client::ask(&ask) {
        return reply.into_agent_answer().map(Forwarded::Answered);
    }
    Ok(Forwarded::NotTaken {
        call: Box::new(call),
        bytes,
        workspace,
    })
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
pub fn workspace_of(
    given: Option<PathBuf>,
    dialect: Dialect,
    cwd: Option<&str>,
) -> anyhow::Result<PathBuf> {
    let given = given.or_else(|| project_dir(dialect));
    match given {
        Some(dir) => Ok(crate::env::workspace(Some(dir))?.root),
        None => workspace_from_cwd(cwd),
    }
}

/// The workspace found by walking up from the call's `cwd` (this process's
/// own when the call names none) to the nearest `.toolgate/`.
pub fn workspace_from_cwd(cwd: Option<&str>) -> anyhow::Result<PathBuf> {
    let start = cwd.map(PathBuf::from).unwrap_or_else(|| PathBuf::from("."));
    if !start.is_dir() {
        anyhow::bail!("the call's cwd {} is not a directory", start.display());
    }
    Ok(toolgate_fs::workspace::find_workspace(&start, crate::env::dir("HOME").as_deref()).root)
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
