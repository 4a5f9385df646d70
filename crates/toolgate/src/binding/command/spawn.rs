//! Starting a confined hook without copying the server.
//!
//! # Why not `Command::pre_exec`
//!
//! A confined hook restricts itself (Landlock, `close_range`, seccomp)
//! between the spawn and the exec, in the child. std's `Command` can do
//! that only through `pre_exec`, and a `pre_exec` closure makes std fall
//! back from `posix_spawn` to a real `fork`. Forking a server that holds
//! compiled guests and instance pools costs on every call, and not only the
//! caller: the kernel copies the page tables of the whole process with its
//! memory map locked against every other thread, then write-protects every
//! page the server owns, so each page any worker writes afterwards takes a
//! copy-on-write fault. Under load (128 clients, a confined hook in the
//! mix) that halved the server's throughput and tripled the confined
//! hook's median (docs/performance.md, "Confined hooks start without
//! copying the server").
//!
//! So a confined hook is started the way glibc's `posix_spawn` starts any
//! program: `clone(CLONE_VM | CLONE_VFORK)`. The child runs on a stack of
//! its own inside the server's memory (nothing is copied), makes its
//! system calls, and execs; the calling thread sleeps until then. The
//! price is the discipline `posix_spawn` keeps: between clone and exec the
//! child shares the server's memory while the server's other threads keep
//! running, so it allocates nothing, takes no lock and calls no signal
//! handler. Everything it needs (C strings, descriptors, the filter) is
//! built beforehand in [`Plan`]; it runs signals blocked until it has reset
//! every handler to the default; and it reports a failed step by writing
//! the step and `errno` into the plan, which the parent reads once the
//! child has exited (a report a forked child could not make).
//!
//! Waiting uses a pidfd (`CLONE_PIDFD`), so the exit is an event on tokio's
//! reactor and the pid cannot be recycled under us while the hook runs.
//! Confined hooks already need Linux 5.13 (Landlock), well past pidfds
//! (5.2); unconfined hooks stay on std's `posix_spawn`, which is already
//! this cheap.
//!
//! The whole module may use `unsafe`: it is the one place toolgate does
//! what `posix_spawn` does, and every block says why it holds.
//!
//! # Why one module
//!
//! The parent's side (the plan, the stack, the blocked signals, the pidfd)
//! and the child's (what it may touch before exec) are one contract: each
//! `unsafe` block in one half holds only because of what the other half
//! does, so they are read and reviewed together.
#![allow(unsafe_code)]

use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::Arc;

use nix::libc;
use tokio::io::unix::AsyncFd;
use tokio::net::unix::pipe;

/// What the child makes of itself before it execs.
#[derive(Clone)]
pub(crate) struct Request {
    pub(crate) program: PathBuf,
    pub(crate) args: Vec<String>,
    pub(crate) cwd: PathBuf,
    /// The whole environment; nothing is inherited.
    pub(crate) env: Vec<(OsString, OsString)>,
    /// The Landlock ruleset and seccomp filter to restrict itself with;
    /// without them, only the descriptors are closed.
    pub(crate) ruleset: Option<(Arc<OwnedFd>, Arc<seccompiler::BpfProgram>)>,
}

/// A started hook: its pipes (taken by the supervisor) and its exit.
pub(crate) struct Process {
    pid: libc::pid_t,
    /// `None` before it is registered and once `drop` handed it to the
    /// reaper.
    pidfd: Option<AsyncFd<OwnedFd>>,
    status: Option<ExitStatus>,
    pub(crate) stdin: Option<pipe::Sender>,
    pub(crate) stdout: Option<pipe::Receiver>,
    pub(crate) stderr: Option<pipe::Receiver>,
}

impl Process {
    /// Starts the hook. The clone and the child's work before its exec run
    /// on a blocking thread, so an async worker never sleeps through them.
    pub(crate) async fn start(request: Arc<Request>) -> io::Result<Self> {
        let mut unclaimed =
            tokio::task::spawn_blocking(move || start(&request).map(|s| Unclaimed(Some(s))))
                .await
                .map_err(io::Error::other)??;
        let started = unclaimed
            .0
            .take()
            .ok_or_else(|| io::Error::other("the started hook was lost"))?;
        // Held from here on: should a step below fail, the drop kills and
        // reaps the hook, which is running already.
        let mut process = Self {
            pid: started.pid,
            pidfd: None,
            status: None,
            stdin: None,
            stdout: None,
            stderr: None,
        };
        // SAFETY: an OwnedFd stays open, on the same descriptor, for as
        // long as the AsyncFd owns it.
        process.pidfd = Some(unsafe {
            AsyncFd::register_with_interest(started.pidfd, tokio::io::Interest::READABLE)
        }?);
        process.stdin = Some(pipe::Sender::from_owned_fd(started.stdin)?);
        process.stdout = Some(pipe::Receiver::from_owned_fd(started.stdout)?);
        process.stderr = Some(pipe::Receiver::from_owned_fd(started.stderr)?);
        Ok(process)
    }

    /// Its process id (and process group: it leads one).
    pub(crate) fn id(&self) -> libc::pid_t {
        self.pid
    }

    /// Waits for it to exit and reaps it. Cancel-safe: dropping the future
    /// loses nothing, and a later call returns the same status.
    pub(crate) async fn wait(&mut self) -> io::Result<ExitStatus> {
        loop {
            if let Some(status) = self.status {
                return Ok(status);
            }
            let Some(pidfd) = &self.pidfd else {
                return Err(io::Error::other("the hook's pidfd is gone"));
            };
            let mut ready = pidfd.readable().await?;
            match reap(self.pid, libc::WNOHANG)? {
                Some(status) => self.status = Some(status),
                None => ready.clear_ready(),
            }
        }
    }
}

impl Drop for Process {
    /// A hook dropped before it was reaped is killed, and reaped in the
    /// background: no zombie is left and nothing blocks here.
    fn drop(&mut self) {
        if self.status.is_some() {
            return;
        }
        let pid = self.pid;
        // SAFETY: plain integers; the pid is our unreaped child, so it names
        // no other process.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        match (self.pidfd.take(), tokio::runtime::Handle::try_current()) {
            (Some(pidfd), Ok(runtime)) => {
                runtime.spawn(async move {
                    while let Ok(mut ready) = pidfd.readable().await {
                        match reap(pid, libc::WNOHANG) {
                            Ok(None) => ready.clear_ready(),
                            Ok(Some(_)) | Err(_) => return,
                        }
                    }
                    // The reactor cannot say: a thread waits instead.
                    reap_on_a_thread(pid, ());
                });
            }
            (pidfd, _) => reap_on_a_thread(pid, pidfd),
        }
    }
}

/// Waits for our killed child `pid` on a thread of its own, dropping `held`
/// (its pidfd, its pipes) once it is reaped: nothing blocks the caller and
/// no zombie is left.
fn reap_on_a_thread<T: Send + 'static>(pid: libc::pid_t, held: T) {
    std::thread::spawn(move || {
        let _ = reap(pid, 0);
        drop(held);
    });
}

/// `waitpid` on our own child: its status once it exited (`None` while it
/// runs, with `WNOHANG`).
fn reap(pid: libc::pid_t, flags: libc::c_int) -> io::Result<Option<ExitStatus>> {
    let mut status = 0;
    loop {
        // SAFETY: `status` is a valid out-pointer; the pid is our child.
        match unsafe { libc::waitpid(pid, &mut status, flags) } {
            0 => return Ok(None),
            -1 => {
                let error = io::Error::last_os_error();
                if error.kind() != io::ErrorKind::Interrupted {
                    return Err(error);
                }
            }
            _ => return Ok(Some(ExitStatus::from_raw(status))),
        }
    }
}

/// What the parent keeps from a started child.
struct Started {
    pid: libc::pid_t,
    pidfd: OwnedFd,
    stdin: OwnedFd,
    stdout: OwnedFd,
    stderr: OwnedFd,
}

/// A started hook on its way from the blocking thread to its caller. Should
/// the caller have gone meanwhile (its call cut off by the chain's deadline
/// while the clone ran), nothing else holds the hook: it is killed, with
/// its group, and reaped on a thread of its own, so no hook runs on for a
/// call that is over and no zombie is left.
struct Unclaimed(Option<Started>);

impl Drop for Unclaimed {
    fn drop(&mut self) {
        let Some(started) = self.0.take() else {
            return;
        };
        let pid = started.pid;
        // SAFETY: plain integers; the pid is our unreaped child and leads
        // its own process group, so neither names another process.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
            libc::kill(pid, libc::SIGKILL);
        }
        reap_on_a_thread(pid, started);
    }
}

/// A step of the child's, named in the error when it fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Step {
    Stdio = 1,
    ProcessGroup,
    Chdir,
    NoNewPrivs,
    Landlock,
    Descriptors,
    Seccomp,
    Exec,
}

impl Step {
    fn from_u8(step: u8) -> Option<Self> {
        [
            Self::Stdio,
            Self::ProcessGroup,
            Self::Chdir,
            Self::NoNewPrivs,
            Self::Landlock,
            Self::Descriptors,
            Self::Seccomp,
            Self::Exec,
        ]
        .into_iter()
        .find(|s| *s as u8 == step)
    }

    fn describe(self) -> &'static str {
        match self {
            Self::Stdio => "connecting the hook's stdin, stdout and stderr",
            Self::ProcessGroup => "giving the hook its own process group",
            Self::Chdir => "entering the hook's working folder",
            Self::NoNewPrivs => "confining the hook: prctl(PR_SET_NO_NEW_PRIVS)",
            Self::Landlock => "confining the hook: landlock_restrict_self",
            Self::Descriptors => "confining the hook: closing inherited descriptors",
            Self::Seccomp => "confining the hook: installing its seccomp filter",
            Self::Exec => "executing the hook",
        }
    }
}

/// Everything the child reads, laid out before the clone so that it only
/// reads memory and makes system calls; and where it writes a failure.
#[repr(C)]
struct Plan {
    program: *const libc::c_char,
    argv: *const *const libc::c_char,
    envp: *const *const libc::c_char,
    cwd: *const libc::c_char,
    /// Become the child's 0, 1 and 2; each is 3 or above.
    stdio: [RawFd; 3],
    /// `-1` when the hook is not restricted by Landlock and seccomp.
    ruleset: RawFd,
    filter: libc::sock_fprog,
    /// Written by the child when a step fails: the step and `errno`.
    failed_step: u8,
    failed_errno: libc::c_int,
}

/// The child's stack: its own mapping with a guard page below it, so an
/// overflow faults instead of writing into the server's memory.
struct Stack {
    base: *mut libc::c_void,
    len: usize,
}

const STACK: usize = 256 * 1024;
const GUARD: usize = 64 * 1024;

impl Stack {
    fn new() -> io::Result<Self> {
        let len = STACK + GUARD;
        // SAFETY: a fresh private anonymous mapping; nothing else refers to it.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let stack = Self { base, len };
        // SAFETY: the lowest GUARD bytes of the mapping made above.
        if unsafe { libc::mprotect(base, GUARD, libc::PROT_NONE) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(stack)
    }

    /// The top of the stack (it grows down), 16-byte aligned.
    fn top(&self) -> *mut libc::c_void {
        // The mapping's end: page-aligned, so 16-byte aligned.
        self.base.cast::<u8>().wrapping_add(self.len).cast()
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`; the child no longer runs on it
        // (it exec'd or exited before the clone returned).
        unsafe { libc::munmap(self.base, self.len) };
    }
}

fn c_string(bytes: &[u8], what: &str) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("the hook's {what} contains a NUL byte"),
        )
    })
}

/// `pipe2(O_CLOEXEC)`, with both ends at 3 or above so the child's `dup2`
/// onto 0, 1 and 2 never meets one of them there.
fn pipe_above_stdio() -> io::Result<(OwnedFd, OwnedFd)> {
    let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
    Ok((above_stdio(read)?, above_stdio(write)?))
}

fn above_stdio(fd: OwnedFd) -> io::Result<OwnedFd> {
    if fd.as_raw_fd() > 2 {
        return Ok(fd);
    }
    // SAFETY: F_DUPFD_CLOEXEC on a descriptor we own returns a new one we
    // then own.
    let moved = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3) };
    if moved < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: just returned by fcntl, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(moved) })
}

/// A program named without a slash is looked up on the `PATH` the hook
/// gets, as exec would ([`lookup`], which trust pins with too), here in
/// the parent: the
/// child may not search, since `execvp` can allocate. Not found, it stays
/// bare, and the exec fails with ENOENT.
fn program_path(program: &Path, env: &[(OsString, OsString)]) -> PathBuf {
    let bare = program.to_str().filter(|p| !p.contains('/'));
    let Some(bare) = bare else {
        return program.to_owned();
    };
    let path = env
        .iter()
        .rev()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.as_os_str());
    lookup(bare, path).unwrap_or_else(|| program.to_owned())
}

/// `program` looked up on `search_path` as exec does: the first entry
/// holding an executable regular file of that name.
pub(crate) fn lookup(program: &str, search_path: Option<&OsStr>) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(search_path?)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join(program))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// The child's C strings and the pointer arrays into them, owned by the
/// parent until the child exec'd.
struct Strings {
    program: CString,
    cwd: CString,
    /// Kept alive for the pointers in `argv_ptrs` and `envp_ptrs`.
    _owned: Vec<CString>,
    argv_ptrs: Vec<*const libc::c_char>,
    envp_ptrs: Vec<*const libc::c_char>,
}

impl Strings {
    fn of(request: &Request) -> io::Result<Self> {
        let program = program_path(&request.program, &request.env);
        let program = c_string(program.as_os_str().as_bytes(), "program path")?;
        let mut argv = vec![program.clone()];
        for arg in &request.args {
            argv.push(c_string(arg.as_bytes(), "argument")?);
        }
        // Later entries win, as with `Command::env`.
        let mut env: Vec<(&OsStr, &OsStr)> = Vec::with_capacity(request.env.len());
        for (key, value) in &request.env {
            env.retain(|(k, _)| *k != key.as_os_str());
            env.push((key, value));
        }
        let envp = env
            .into_iter()
            .map(|(k, v)| {
                let mut pair = k.as_bytes().to_vec();
                pair.push(b'=');
                pair.extend_from_slice(v.as_bytes());
                c_string(&pair, "environment")
            })
            .collect::<io::Result<Vec<_>>>()?;
        let pointers = |strings: &[CString]| -> Vec<*const libc::c_char> {
            strings
                .iter()
                .map(|s| s.as_ptr())
                .chain(std::iter::once(std::ptr::null()))
                .collect()
        };
        let (argv_ptrs, envp_ptrs) = (pointers(&argv), pointers(&envp));
        Ok(Self {
            program,
            cwd: c_string(request.cwd.as_os_str().as_bytes(), "working folder")?,
            _owned: argv.into_iter().chain(envp).collect(),
            argv_ptrs,
            envp_ptrs,
        })
    }
}

/// The ruleset's descriptor (`-1`: none) and the filter as the kernel
/// takes it (empty: none).
fn restrictions(request: &Request) -> io::Result<(RawFd, libc::sock_fprog)> {
    Ok(match &request.ruleset {
        Some((ruleset, filter)) => (
            ruleset.as_raw_fd(),
            libc::sock_fprog {
                len: u16::try_from(filter.len()).map_err(|_| {
                    io::Error::new(
                        io::ErrorKind::InvalidInput,
                        "the seccomp filter is too long",
                    )
                })?,
                // The kernel copies the program and never writes to it.
                filter: filter.as_ptr().cast_mut().cast(),
            },
        ),
        None => (
            -1,
            libc::sock_fprog {
                len: 0,
                filter: std::ptr::null_mut(),
            },
        ),
    })
}

/// Starts the child, which makes itself the hook and execs. Returns once
/// the exec happened (or the child failed a step and exited).
fn start(request: &Request) -> io::Result<Started> {
    let strings = Strings::of(request)?;
    let (stdin_child, stdin) = pipe_above_stdio()?;
    let (stdout, stdout_child) = pipe_above_stdio()?;
    let (stderr, stderr_child) = pipe_above_stdio()?;
    let (ruleset, filter) = restrictions(request)?;
    let mut plan = Plan {
        program: strings.program.as_ptr(),
        argv: strings.argv_ptrs.as_ptr(),
        envp: strings.envp_ptrs.as_ptr(),
        cwd: strings.cwd.as_ptr(),
        stdio: [
            stdin_child.as_raw_fd(),
            stdout_child.as_raw_fd(),
            stderr_child.as_raw_fd(),
        ],
        ruleset,
        filter,
        failed_step: 0,
        failed_errno: 0,
    };
    let (pid, pidfd) = clone_child(&mut plan)?;
    // The child wrote these before it exited, and has exited: a volatile
    // read, since the compiler did not see that write.
    // SAFETY: reads of fields of a live local.
    let (step, errno) = unsafe {
        (
            std::ptr::read_volatile(&raw const plan.failed_step),
            std::ptr::read_volatile(&raw const plan.failed_errno),
        )
    };
    if let Some(step) = Step::from_u8(step) {
        let _ = reap(pid, 0);
        drop(pidfd);
        let error = io::Error::from_raw_os_error(errno);
        // An exec error stays raw, so the caller can tell ETXTBSY.
        return Err(match step {
            Step::Exec => error,
            other => io::Error::new(error.kind(), format!("{}: {error}", other.describe())),
        });
    }
    Ok(Started {
        pid,
        pidfd,
        stdin,
        stdout,
        stderr,
    })
}

/// `clone(CLONE_VM | CLONE_VFORK | CLONE_PIDFD)` into [`child`] with
/// `plan`, every signal blocked on this thread meanwhile. Returns when the
/// child exec'd or exited: its pid and pidfd.
fn clone_child(plan: &mut Plan) -> io::Result<(libc::pid_t, OwnedFd)> {
    let stack = Stack::new()?;
    let mut pidfd: libc::c_int = -1;
    // Every signal stays blocked from before the clone until the child has
    // reset the handlers it inherited: a server's handler must never run in
    // the child, on the server's memory.
    // SAFETY: sigset_t is plain data, filled and read by libc.
    let mut all: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut saved: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointers to the two sets above.
    unsafe {
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut saved);
    }
    // SAFETY: `child` only reads `plan` (alive on the caller's frame, and
    // this thread sleeps until the child exec'd or exited: CLONE_VFORK)
    // and writes its failure fields; it runs on `stack`, mapped for it; it
    // allocates nothing and never returns into Rust code of ours. The
    // pidfd out-pointer is valid.
    let pid = unsafe {
        libc::clone(
            child,
            stack.top(),
            libc::CLONE_VM | libc::CLONE_VFORK | libc::CLONE_PIDFD | libc::SIGCHLD,
            std::ptr::from_mut(plan).cast(),
            &raw mut pidfd,
        )
    };
    let cloned = io::Error::last_os_error();
    // SAFETY: restores this thread's mask saved above.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &saved, std::ptr::null_mut()) };
    drop(stack);
    if pid < 0 {
        return Err(io::Error::new(
            cloned.kind(),
            format!("starting the hook: clone: {cloned}"),
        ));
    }
    // SAFETY: CLONE_PIDFD wrote a new descriptor (close-on-exec) we own.
    Ok((pid, unsafe { OwnedFd::from_raw_fd(pidfd) }))
}

/// The child, between clone and exec. It shares the server's memory while
/// the server's other threads run: only system calls on what `Plan`
/// already holds, no allocation, no lock, no panic. It never returns.
extern "C" fn child(plan: *mut libc::c_void) -> libc::c_int {
    let plan = plan.cast::<Plan>();
    // SAFETY: `plan` points at the parent's live Plan (see `start`).
    let (step, errno) = unsafe { become_hook(&*plan) };
    // SAFETY: the parent reads these after the child exited.
    unsafe {
        std::ptr::write_volatile(&raw mut (*plan).failed_step, step as u8);
        std::ptr::write_volatile(&raw mut (*plan).failed_errno, errno);
        libc::_exit(127)
    }
}

/// The child's steps, in std's order for `Command` (stdio, process group,
/// working folder, signals, then the confinement `pre_exec` used to make),
/// ending in exec. Returns only on failure: the step and `errno`.
///
/// # Safety
/// Only in the child of `start`'s clone, with `plan` its plan.
unsafe fn become_hook(plan: &Plan) -> (Step, libc::c_int) {
    let errno = || io::Error::last_os_error().raw_os_error().unwrap_or(0);
    // SAFETY (whole body): system calls on integers and on pointers into
    // `plan`, which the parent keeps alive and unchanged.
    unsafe {
        // Handlers back to the default (a handler is server code), SIGPIPE
        // too (std's runtime ignores it; a hook expects the default), then
        // the mask emptied, as std's spawn does. Ignored signals stay
        // ignored, as they would across exec.
        for signal in 1..libc::SIGRTMAX() + 1 {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, std::ptr::null(), &mut old) == 0
                && (old.sa_sigaction != libc::SIG_IGN || signal == libc::SIGPIPE)
                && old.sa_sigaction != libc::SIG_DFL
            {
                let mut default: libc::sigaction = std::mem::zeroed();
                default.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(signal, &default, std::ptr::null_mut());
            }
        }
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        libc::pthread_sigmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());

        for (target, fd) in plan.stdio.iter().enumerate() {
            // Each source is 3 or above, so dup2 always makes a new
            // descriptor, without close-on-exec.
            if libc::dup2(*fd, target as libc::c_int) < 0 {
                return (Step::Stdio, errno());
            }
        }
        if libc::setpgid(0, 0) != 0 {
            return (Step::ProcessGroup, errno());
        }
        if libc::chdir(plan.cwd) != 0 {
            return (Step::Chdir, errno());
        }
        if plan.ruleset >= 0 {
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return (Step::NoNewPrivs, errno());
            }
            if libc::syscall(libc::SYS_landlock_restrict_self, plan.ruleset, 0u32) != 0 {
                return (Step::Landlock, errno());
            }
        }
        // Close-on-exec rather than closed: the hook gets its three pipes
        // and nothing toolgate's own parent (the agent) left open. Linux
        // 5.11; an older kernel is an error, and the hook does not run.
        if libc::syscall(
            libc::SYS_close_range,
            3u32,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        ) != 0
        {
            return (Step::Descriptors, errno());
        }
        if plan.ruleset >= 0
            && libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                0u32,
                &raw const plan.filter,
            ) != 0
        {
            return (Step::Seccomp, errno());
        }
        libc::execve(plan.program, plan.argv, plan.envp);
        (Step::Exec, errno())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    fn sh(script: &str, cwd: &Path) -> Arc<Request> {
        Arc::new(Request {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), script.into()],
            cwd: cwd.to_owned(),
            env: vec![("PATH".into(), "/usr/bin:/bin".into())],
            ruleset: None,
        })
    }

    /// Runs it to the end: what it printed and how it exited.
    async fn output(request: Arc<Request>) -> (String, ExitStatus) {
        let mut process = Process::start(request).await.expect("started");
        drop(process.stdin.take());
        let mut out = String::new();
        let mut stdout = process.stdout.take().expect("stdout");
        stdout.read_to_string(&mut out).await.expect("read");
        (out, process.wait().await.expect("waited"))
    }

    #[tokio::test]
    async fn a_failed_step_is_reported_through_the_memory_the_child_shares() {
        // A forked child could not tell its parent which step failed without
        // a pipe; a child that shares the parent's memory writes it there.
        let missing = Arc::new(Request {
            program: "/nonexistent/hook".into(),
            ..(*sh("", Path::new("/"))).clone()
        });
        let error = Process::start(missing)
            .await
            .err()
            .expect("no such program");
        assert_eq!(error.raw_os_error(), Some(libc::ENOENT), "{error}");

        let error = Process::start(sh("true", Path::new("/nonexistent/folder")))
            .await
            .err()
            .expect("no such folder");
        let text = error.to_string();
        assert!(
            text.starts_with("entering the hook's working folder"),
            "{text}"
        );
        assert_eq!(error.kind(), io::ErrorKind::NotFound, "{text}");
    }

    #[tokio::test]
    async fn the_hook_gets_its_three_pipes_and_no_other_descriptor() {
        // An inheritable descriptor, as an agent might leave one open.
        let file = std::fs::File::open("/dev/null").expect("open");
        // SAFETY: dup of an open descriptor; the copy is owned below.
        let leaked = unsafe { OwnedFd::from_raw_fd(libc::dup(file.as_raw_fd())) };
        assert!(leaked.as_raw_fd() > 2);
        let (listed, status) = output(sh("ls /proc/$$/fd", Path::new("/"))).await;
        assert!(status.success());
        assert_eq!(
            listed.split_whitespace().collect::<Vec<_>>(),
            ["0", "1", "2"]
        );
    }

    #[tokio::test]
    async fn no_handler_ignore_or_mask_of_the_servers_reaches_the_hook() {
        // Rust's runtime ignores SIGPIPE in this process; the hook must get
        // the default, and nothing blocked.
        // Read by the shell itself: a `cat` it started would read the
        // shell mid-fork, which dash does with every signal blocked.
        let script = "while read -r line; do echo \"$line\"; done < /proc/$$/status";
        let (status, _) = output(sh(script, Path::new("/"))).await;
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .map(|v| u64::from_str_radix(v.trim(), 16).expect("hex"))
                .expect(name)
        };
        assert_eq!(field("SigBlk:"), 0, "{status}");
        let sigpipe = 1u64 << (libc::SIGPIPE - 1);
        assert_eq!(field("SigIgn:") & sigpipe, 0, "{status}");
    }

    #[tokio::test]
    async fn the_hook_leads_its_own_process_group_in_its_folder_with_only_the_given_environment() {
        let folder = tempfile::tempdir().expect("tempdir");
        let request = Arc::new(Request {
            env: vec![
                ("PATH".into(), "/usr/bin:/bin".into()),
                ("ONLY".into(), "first".into()),
                ("ONLY".into(), "given".into()),
            ],
            ..(*sh(
                "cut -d' ' -f1,5 /proc/$$/stat; pwd -P; env | grep -Ev '^(PWD|OLDPWD|SHLVL|_)=' | sort",
                folder.path(),
            ))
            .clone()
        });
        let mut process = Process::start(request).await.expect("started");
        let pid = process.id();
        let mut out = String::new();
        let mut stdout = process.stdout.take().expect("stdout");
        stdout.read_to_string(&mut out).await.expect("read");
        assert!(process.wait().await.expect("waited").success());
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], format!("{pid} {pid}"), "{out}");
        let real = folder.path().canonicalize().expect("canonical");
        assert_eq!(lines[1], real.to_str().expect("utf-8"), "{out}");
        assert_eq!(lines[2..], ["ONLY=given", "PATH=/usr/bin:/bin"], "{out}");
    }

    #[tokio::test]
    async fn a_bare_program_is_looked_up_on_the_path_the_hook_gets() {
        let bare = |path: &str| {
            Arc::new(Request {
                program: "sh".into(),
                env: vec![("PATH".into(), path.into())],
                ..(*sh("exit 4", Path::new("/"))).clone()
            })
        };
        let (_, status) = output(bare("/nonexistent:/usr/bin:/bin")).await;
        assert_eq!(status.code(), Some(4));
        let error = Process::start(bare("/nonexistent"))
            .await
            .err()
            .expect("not on PATH");
        assert_eq!(error.raw_os_error(), Some(libc::ENOENT), "{error}");
    }

    #[tokio::test]
    async fn exits_and_signals_are_reported_as_std_reports_them() {
        let (_, status) = output(sh("exit 3", Path::new("/"))).await;
        assert_eq!(status.code(), Some(3));
        let (_, status) = output(sh("kill -9 $$", Path::new("/"))).await;
        assert_eq!(status.signal(), Some(libc::SIGKILL));
    }

    #[tokio::test]
    async fn a_hook_dropped_before_its_exit_is_killed_and_reaped() {
        let process = Process::start(sh("exec sleep 30", Path::new("/")))
            .await
            .expect("started");
        let pid = process.id();
        drop(process);
        gone(pid).await;
    }

    #[tokio::test]
    async fn a_hook_whose_caller_went_away_during_its_start_is_killed_and_reaped() {
        // The caller's future dropped while the blocking thread cloned: the
        // started hook reaches no one, and is not left running.
        let started = start(&sh("exec sleep 30", Path::new("/"))).expect("started");
        let pid = started.pid;
        drop(Unclaimed(Some(started)));
        gone(pid).await;
    }

    /// Waits (5 s at most) until `pid` is gone from the process table:
    /// neither running nor a zombie.
    async fn gone(pid: libc::pid_t) {
        let stat = PathBuf::from(format!("/proc/{pid}/stat"));
        for _ in 0..500 {
            if !stat.exists() {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        panic!("{pid} still exists: {:?}", std::fs::read_to_string(&stat));
    }
}
