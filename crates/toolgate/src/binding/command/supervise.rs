//! Running one hook process to completion, whatever it does.
//!
//! # Why this much machinery
//!
//! A hook is someone else's program, started on every tool call. It may hang,
//! ignore SIGTERM, print a gigabyte, never read its stdin, or background a
//! grandchild that keeps our pipes open after it exits. None of that may hold
//! the agent's call past its deadline, cost unbounded memory, or leave
//! processes behind. The approach is cargo-nextest's:
//!
//! - **Own process group** (`setpgid(0, 0)` at spawn), so a signal reaches the
//!   hook and everything it started.
//! - **Deadline → SIGTERM to the group → grace → SIGKILL to the group.** The
//!   hook gets a chance to clean up; it does not get a veto.
//! - **Stdin is written concurrently with reading stdout and stderr**, in one
//!   `select!` loop, so a hook that prints before reading (or never reads) and
//!   a request larger than a pipe buffer cannot deadlock each other. A hook
//!   that exits without reading gets EPIPE on our side, which is ignored.
//! - **Captured output is capped.** Stdout over the cap is a failure and the
//!   group is killed at once; stderr past its cap is read and discarded, so the
//!   hook never blocks on a full pipe and our memory stays bounded.
//! - **A descendant that holds the pipes after the hook exits** is noticed: we
//!   give the pipes a short drain window, then SIGKILL the group, keep what the
//!   hook printed, and warn the operator. A process that left the group
//!   (`setsid`) is beyond a group signal; we stop waiting for it after a
//!   bounded time rather than hang.
//! - **Reaping**: the child is always waited for, on every path, without a
//!   blocking `waitpid` on an async worker: a confined hook through its
//!   pidfd on tokio's reactor (`spawn`), any other by tokio's SIGCHLD-driven
//!   reaper. No zombie is left.
//! - **Cut off from outside**: when the chain's own deadline passes, the
//!   runner drops this future mid-run; a guard then SIGKILLs the whole
//!   process group (tokio's `kill_on_drop` alone reaches only the hook, not
//!   what it started).

use crate::failure::HookFailure;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;
use tokio::time::Instant;

/// Bounds on one hook process.
#[derive(Clone, Debug)]
pub(crate) struct ProcessBounds {
    /// From spawn to the hook's exit.
    pub(crate) timeout: Duration,
    /// Between SIGTERM and SIGKILL.
    pub(crate) grace: Duration,
    /// Bytes of stdout kept; more is a failure.
    pub(crate) stdout_cap: usize,
    /// Bytes of stderr kept; more is discarded.
    pub(crate) stderr_cap: usize,
    /// How long the pipes may stay open after the hook exited.
    pub(crate) drain: Duration,
}

/// What happened to one hook process.
pub(crate) struct Ran {
    /// How it exited and its stdout, if it exited within its limits. A
    /// non-zero exit is reported here, not as a failure: what it means is
    /// the protocol's call.
    pub(crate) exit: Result<Exited, HookFailure>,
    /// The first `stderr_cap` bytes of its stderr.
    pub(crate) stderr: Vec<u8>,
    /// Stderr bytes read past the cap and dropped.
    pub(crate) stderr_dropped: usize,
    /// Something the operator should know even if the hook answered.
    pub(crate) warning: Option<String>,
}

/// A hook that exited on its own.
pub(crate) struct Exited {
    /// Its exit code; `None` when a signal ended it.
    pub(crate) code: Option<i32>,
    /// The exit in words (`exit code 3`, `signal 11 (SIGSEGV)`).
    pub(crate) status: String,
    /// What it printed on stdout.
    pub(crate) stdout: Vec<u8>,
}

enum Phase {
    /// The hook is running; the deadline applies.
    Running,
    /// It exited; its pipes may stay open until then.
    Draining(Instant, Exit),
    /// A descendant held the pipes and was killed; stop waiting at this time.
    Reaping(Instant, Exit),
}

/// How the hook ended: its status, or why it could not be observed (which
/// counts as a failure, never as success). Shared: each phase keeps it.
type Exit = Result<ExitStatus, std::sync::Arc<std::io::Error>>;

enum End {
    Exited(Exit),
    Deadline,
    Oversized,
}

/// What a confined hook's process gets instead of the inherited
/// environment and rights (see `confine`).
pub(crate) struct Confined {
    /// The whole environment (`PATH`, `HOME`, `TMPDIR`, …: see
    /// `confine::environment`); nothing is inherited. The protocol's own
    /// variables (such as `CLAUDE_PROJECT_DIR`) are set after them and name
    /// none of these.
    pub(crate) set: Vec<(std::ffi::OsString, std::ffi::OsString)>,
    /// The Landlock ruleset and seccomp filter the child restricts itself
    /// with before exec.
    pub(crate) ruleset: Option<(
        std::sync::Arc<std::os::fd::OwnedFd>,
        std::sync::Arc<seccompiler::BpfProgram>,
    )>,
}

/// What was read from the hook's pipes while it ran.
#[derive(Default)]
struct Output {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    stderr_dropped: usize,
    warning: Option<String>,
}

/// Runs `program` with `input` on its stdin, within `bounds`.
pub(crate) async fn run(
    program: &Path,
    args: &[String],
    cwd: &Path,
    envs: &[(&str, std::ffi::OsString)],
    input: &[u8],
    bounds: &ProcessBounds,
    confined: Option<&Confined>,
) -> Ran {
    let mut child = match start(program, args, cwd, envs, confined).await {
        Ok(child) => child,
        Err(source) => {
            return Ran {
                exit: Err(HookFailure::SpawnFailed {
                    program: program.display().to_string(),
                    source,
                }),
                stderr: Vec::new(),
                stderr_dropped: 0,
                warning: None,
            };
        }
    };
    let group = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .map(Pid::from_raw);
    let mut guard = GroupGuard { group, armed: true };
    let (end, output) = exchange(&mut child, group, input, bounds).await;
    let exit = match end {
        End::Exited(Ok(status)) => Ok(Exited {
            code: status.code(),
            status: describe(status),
            stdout: output.stdout,
        }),
        End::Exited(Err(e)) => Err(HookFailure::ExitedNonZero {
            status: format!("its exit could not be observed: {e}"),
        }),
        End::Oversized => {
            signal_group(group, Signal::SIGKILL);
            reap(&mut child).await;
            Err(HookFailure::OversizedOutput {
                limit: bounds.stdout_cap,
            })
        }
        End::Deadline => {
            let escalated = terminate(&mut child, group, bounds.grace).await;
            Err(HookFailure::TimedOut {
                timeout_ms: u64::try_from(bounds.timeout.as_millis()).unwrap_or(u64::MAX),
                escalated,
            })
        }
    };
    guard.armed = false;
    Ran {
        exit,
        stderr: output.stderr,
        stderr_dropped: output.stderr_dropped,
        warning: output.warning,
    }
}

/// A running hook, started one of two ways (see `spawn`): a confined hook
/// by `spawn`, which confines it without copying the server; any other by
/// std's `posix_spawn`.
enum Child {
    Spawned(super::spawn::Process),
    Std(tokio::process::Child),
}

type Writer = Box<dyn tokio::io::AsyncWrite + Unpin + Send>;
type Reader = Box<dyn AsyncRead + Unpin + Send>;

impl Child {
    fn id(&self) -> Option<u32> {
        match self {
            Self::Spawned(process) => u32::try_from(process.id()).ok(),
            Self::Std(child) => child.id(),
        }
    }

    async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        match self {
            Self::Spawned(process) => process.wait().await,
            Self::Std(child) => child.wait().await,
        }
    }

    fn take_pipes(&mut self) -> (Option<Writer>, Option<Reader>, Option<Reader>) {
        match self {
            Self::Spawned(p) => (
                p.stdin.take().map(|s| Box::new(s) as Writer),
                p.stdout.take().map(|s| Box::new(s) as Reader),
                p.stderr.take().map(|s| Box::new(s) as Reader),
            ),
            Self::Std(c) => (
                c.stdin.take().map(|s| Box::new(s) as Writer),
                c.stdout.take().map(|s| Box::new(s) as Reader),
                c.stderr.take().map(|s| Box::new(s) as Reader),
            ),
        }
    }
}

/// Starts the hook in its own process group with piped stdio: confined
/// (the environment given, Landlock, seccomp, no inherited descriptor) by
/// `spawn`, otherwise by std with the environment inherited.
async fn start(
    program: &Path,
    args: &[String],
    cwd: &Path,
    envs: &[(&str, std::ffi::OsString)],
    confined: Option<&Confined>,
) -> std::io::Result<Child> {
    let Some(confined) = confined else {
        let mut command = Command::new(program);
        command
            .args(args)
            .current_dir(cwd)
            .envs(envs.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        return retry_busy(|| std::future::ready(command.spawn()))
            .await
            .map(Child::Std);
    };
    let request = std::sync::Arc::new(super::spawn::Request {
        program: program.to_owned(),
        args: args.to_vec(),
        cwd: cwd.to_owned(),
        env: confined
            .set
            .iter()
            .cloned()
            .chain(envs.iter().map(|(k, v)| ((*k).into(), v.clone())))
            .collect(),
        ruleset: confined.ruleset.clone(),
    });
    retry_busy(|| super::spawn::Process::start(request.clone()))
        .await
        .map(Child::Spawned)
}

/// Retries a spawn that met ETXTBSY: the program was just written and
/// another thread's fork still holds it open for writing (until that child
/// execs). It clears within milliseconds; cargo retries it the same way.
async fn retry_busy<T, F: std::future::Future<Output = std::io::Result<T>>>(
    mut spawn: impl FnMut() -> F,
) -> std::io::Result<T> {
    let mut spawned = spawn().await;
    for _ in 0..10 {
        match &spawned {
            Err(e) if e.raw_os_error() == Some(nix::libc::ETXTBSY) => {
                tokio::time::sleep(Duration::from_millis(5)).await;
                spawned = spawn().await;
            }
            _ => break,
        }
    }
    spawned
}

/// Writes `input` to the hook while reading its stdout and stderr and
/// waiting for it, in one loop, until it exited and its pipes closed (or a
/// descendant holding them was dealt with), its deadline passed, or its
/// stdout went past the cap.
async fn exchange(
    child: &mut Child,
    group: Option<Pid>,
    input: &[u8],
    bounds: &ProcessBounds,
) -> (End, Output) {
    let deadline = Instant::now() + bounds.timeout;
    let mut output = Output::default();
    let (stdin, stdout, stderr) = child.take_pipes();
    let mut warning = None;
    // A block: the pinned readers borrow `output` until it ends.
    let end = {
        let write = async move {
            if let Some(mut stdin) = stdin {
                // EPIPE here means the hook exited or closed stdin without
                // reading: its exit status and output decide, not this.
                let _ = stdin.write_all(input).await;
                let _ = stdin.shutdown().await;
            }
        };
        let read_out = read_capped(stdout, &mut output.stdout, bounds.stdout_cap);
        let read_err = read_bounded(
            stderr,
            &mut output.stderr,
            bounds.stderr_cap,
            &mut output.stderr_dropped,
        );
        tokio::pin!(write, read_out, read_err);
        let (mut wrote, mut out_done, mut err_done) = (false, false, false);
        let mut status: Option<Exit> = None;
        let mut phase = Phase::Running;
        loop {
            if out_done
                && err_done
                && let Some(status) = &status
            {
                break End::Exited(status.clone());
            }
            let until = match phase {
                Phase::Running => deadline,
                Phase::Draining(t, _) | Phase::Reaping(t, _) => t,
            };
            tokio::select! {
                () = &mut write, if !wrote => wrote = true,
                within = &mut read_out, if !out_done => {
                    out_done = true;
                    if !within {
                        break End::Oversized;
                    }
                }
                () = &mut read_err, if !err_done => err_done = true,
                exited = child.wait(), if status.is_none() => {
                    let exited = exited.map_err(std::sync::Arc::new);
                    status = Some(exited.clone());
                    phase = Phase::Draining(Instant::now() + bounds.drain, exited);
                }
                () = tokio::time::sleep_until(until) => {
                    if let Some(end) = time_is_up(&mut phase, group, bounds.grace, &mut warning) {
                        break end;
                    }
                }
            }
        }
    };
    output.warning = warning;
    (end, output)
}

/// The current phase's time ran out: the deadline ends a running hook; a
/// descendant still holding the pipes after the hook exited gets its group
/// killed; one that left the group is no longer waited for.
fn time_is_up(
    phase: &mut Phase,
    group: Option<Pid>,
    grace: Duration,
    warning: &mut Option<String>,
) -> Option<End> {
    match phase {
        Phase::Running => Some(End::Deadline),
        Phase::Draining(_, exited) => {
            let exited = exited.clone();
            signal_group(group, Signal::SIGKILL);
            *warning = Some(
                "a process the hook started kept its stdout/stderr open after it \
                 exited; the hook's process group was killed"
                    .to_owned(),
            );
            *phase = Phase::Reaping(Instant::now() + grace, exited);
            None
        }
        Phase::Reaping(_, exited) => {
            *warning = Some(
                "a process the hook started left its process group and kept \
                 stdout/stderr open; toolgate stopped waiting for it"
                    .to_owned(),
            );
            Some(End::Exited(exited.clone()))
        }
    }
}

/// Kills the hook's process group if `run` is dropped before it finished
/// (the chain's deadline passed): nothing the hook started outlives the call.
struct GroupGuard {
    group: Option<Pid>,
    armed: bool,
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if self.armed {
            signal_group(self.group, Signal::SIGKILL);
        }
    }
}

/// SIGTERM the group, wait up to `grace` for the hook, then SIGKILL the group
/// (stragglers included) and reap. Returns whether SIGKILL was needed for the
/// hook itself.
async fn terminate(child: &mut Child, group: Option<Pid>, grace: Duration) -> bool {
    signal_group(group, Signal::SIGTERM);
    let exited_in_grace = tokio::time::timeout(grace, child.wait()).await.is_ok();
    // Descendants that ignored SIGTERM go too.
    signal_group(group, Signal::SIGKILL);
    reap(child).await;
    !exited_in_grace
}

async fn reap(child: &mut Child) {
    // After SIGKILL this returns promptly; an error means already reaped.
    let _ = child.wait().await;
}

fn signal_group(group: Option<Pid>, signal: Signal) {
    if let Some(group) = group {
        // ESRCH: the whole group is gone already, which is what we wanted.
        let _ = killpg(group, signal);
    }
}

fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(signal)) => match Signal::try_from(signal) {
            Ok(name) => format!("signal {signal} ({name})"),
            Err(_) => format!("signal {signal}"),
        },
        _ => status.to_string(),
    }
}

/// Reads to EOF into `buf`; returns false as soon as more than `cap` bytes
/// arrive.
async fn read_capped(pipe: Option<impl AsyncRead + Unpin>, buf: &mut Vec<u8>, cap: usize) -> bool {
    let Some(mut pipe) = pipe else { return true };
    let mut chunk = [0u8; 8192];
    loop {
        match pipe.read(&mut chunk).await {
            Ok(0) | Err(_) => return true,
            Ok(n) => {
                if buf.len() + n > cap {
                    return false;
                }
                buf.extend_from_slice(&chunk[..n]);
            }
        }
    }
}

/// Reads to EOF, keeping the first `cap` bytes and counting the rest.
async fn read_bounded(
    pipe: Option<impl AsyncRead + Unpin>,
    buf: &mut Vec<u8>,
    cap: usize,
    dropped: &mut usize,
) {
    let Some(mut pipe) = pipe else { return };
    let mut chunk = [0u8; 8192];
    loop {
        match pipe.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                let keep = n.min(cap.saturating_sub(buf.len()));
                buf.extend_from_slice(&chunk[..keep]);
                *dropped += n - keep;
            }
        }
    }
}
