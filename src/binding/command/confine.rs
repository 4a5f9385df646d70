//! Confining a command hook: Landlock, a scratch folder, and an environment
//! that loads no other code.
//!
//! # Why
//!
//! Trust says *which* bytes run; it does not make them harmless. A trusted
//! workspace hook is still a program a repository wrote, run on every tool
//! call with the user's rights. So a workspace command hook runs confined
//! by default (the operator's global config may relax one hook, never a
//! workspace):
//!
//! | limit | threat | how |
//! |---|---|---|
//! | no network: no TCP connect or bind, no socket but a UNIX one | a hook sends what it sees (every tool input) away | Landlock network rules (ABI 4), none allowed; a seccomp filter refusing `socket()` for any family but `AF_UNIX` (UDP and raw sockets, which Landlock does not cover) and `io_uring_setup` |
//! | writes only to a per-call scratch folder (and `/dev/null`) | a hook edits the workspace, `$HOME`, the trust store | Landlock filesystem rules: read and execute everywhere, write beneath the scratch folder |
//! | no signals to processes outside the hook, no abstract UNIX sockets outside it | a hook kills or steers the agent | Landlock scopes (ABI 6) |
//! | no code from the environment | `PYTHONPATH`, `NODE_OPTIONS`, `BASH_ENV`, `PERL5OPT`, `LD_PRELOAD`… set by a repository's `.envrc` | those variables removed; `PATH` without empty, relative or workspace entries; bytecode neither written nor read beside the pinned code (the snapshot holds none and is read-only) |
//!
//! Landlock and the seccomp filter are applied in the child between fork
//! and exec, with the ruleset and the filter built beforehand in the
//! parent, so the child only makes three system calls
//! (`prctl(PR_SET_NO_NEW_PRIVS)`, `landlock_restrict_self`, `seccomp`), all
//! async-signal-safe, and allocates nothing. Where the kernel has no
//! Landlock (or an ABI older than 6), the hook runs unconfined and every run
//! record says so — unless the global config sets `require_confinement`,
//! and then the hook fails closed. Not covered: connecting to a pathname
//! UNIX socket the hook can reach (SECURITY.md says so).

use std::ffi::OsString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Why a hook cannot be confined here. Cloned from the process-wide probe,
/// so the sources are shared.
#[derive(Clone, Debug, thiserror::Error)]
pub(crate) enum ConfineError {
    /// The kernel refused a part of the ruleset.
    #[error("the kernel cannot confine hooks (Landlock ABI 6 or newer is needed): {0}")]
    Landlock(Arc<landlock::RulesetError>),
    /// A path the ruleset names could not be opened.
    #[error("{}: {error}", path.display())]
    OpenPath {
        path: PathBuf,
        error: Arc<landlock::PathFdError>,
    },
    /// Landlock is not enabled at all.
    #[error("the kernel has no Landlock")]
    NoLandlock,
    /// The seccomp filter could not be built for this machine.
    #[error("the seccomp filter: {0}")]
    Seccomp(Arc<seccompiler::BackendError>),
}

/// Variables that make an interpreter, the shell or the dynamic loader
/// load code from somewhere other than the pinned tree. Removed from a
/// confined hook's environment.
pub(crate) const REMOVED_ENV: &[&str] = &[
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONSTARTUP",
    "PYTHONUSERBASE",
    "PYTHONINSPECT",
    "PYTHONPLATLIBDIR",
    "PYTHONWARNINGS",
    "PYTHONBREAKPOINT",
    "PYTHONEXECUTABLE",
    "PYTHONSAFEPATH",
    "NODE_OPTIONS",
    "NODE_PATH",
    "NODE_REPL_EXTERNAL_MODULE",
    "BASH_ENV",
    "ENV",
    "SHELLOPTS",
    "BASHOPTS",
    "PS4",
    "PROMPT_COMMAND",
    "CDPATH",
    "GLOBIGNORE",
    "IFS",
    "PERL5OPT",
    "PERL5LIB",
    "PERLLIB",
    "PERL5DB",
    "PERL_USE_UNSAFE_INC",
    "RUBYOPT",
    "RUBYLIB",
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "LD_AUDIT",
    "GCONV_PATH",
    "PYENV_VERSION",
];

/// How one command hook is sandboxed (set for workspace hooks by the
/// trust gate; for a global hook when its config asks).
#[derive(Clone, Debug)]
pub(crate) struct Sandbox {
    /// `PATH` for the hook.
    pub(crate) path: OsString,
    /// Where per-call scratch folders are made (the user's own, private).
    pub(crate) scratch: PathBuf,
    /// Whether Landlock applies.
    pub(crate) landlock: bool,
    /// Whether a hook that cannot be confined must not run.
    pub(crate) required: bool,
    /// Set by the host: Landlock is treated as unavailable, for this reason.
    pub(crate) unavailable: Option<String>,
}

/// Whether this kernel can confine a hook (Landlock ABI 6 or newer), or why
/// not.
pub(crate) fn available() -> Result<(), ConfineError> {
    // What the kernel supports does not change while the process runs.
    static PROBE: std::sync::OnceLock<Result<(), ConfineError>> = std::sync::OnceLock::new();
    PROBE
        .get_or_init(|| ruleset(Path::new("/")).and(network_filter()).map(drop))
        .clone()
}

/// Builds the ruleset for a hook whose scratch folder is `scratch`: read
/// and execute everywhere; write beneath `scratch` and to `/dev/null`; no
/// TCP; scoped signals and abstract sockets. Every part is a hard
/// requirement: a kernel that cannot enforce one of them gets no ruleset.
pub(crate) fn ruleset(scratch: &Path) -> Result<OwnedFd, ConfineError> {
    use landlock::{
        ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
        RulesetAttr, RulesetCreatedAttr, Scope,
    };
    let abi = ABI::V6;
    let why = |e: landlock::RulesetError| ConfineError::Landlock(Arc::new(e));
    let created = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(abi))
        .and_then(|r| r.handle_access(AccessNet::from_all(abi)))
        .and_then(|r| r.scope(Scope::from_all(abi)))
        .and_then(|r| r.create())
        .map_err(why)?;
    let fd = |p: &Path| {
        PathFd::new(p).map_err(|e| ConfineError::OpenPath {
            path: p.to_owned(),
            error: Arc::new(e),
        })
    };
    let everywhere = fd(Path::new("/"))?;
    let scratch = fd(scratch)?;
    let created = created
        .add_rule(PathBeneath::new(everywhere, AccessFs::from_read(abi)))
        .and_then(|r| r.add_rule(PathBeneath::new(scratch, AccessFs::from_all(abi))))
        .map_err(why)?;
    let created = match PathFd::new("/dev/null") {
        Ok(null) => created
            .add_rule(PathBeneath::new(
                null,
                AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate,
            ))
            .map_err(why)?,
        Err(_) => created,
    };
    let fd: Option<OwnedFd> = created.into();
    fd.ok_or(ConfineError::NoLandlock)
}

/// The seccomp filter of a confined hook: `socket()` for any family but
/// `AF_UNIX`, and `io_uring_setup` (whose operations include opening
/// sockets), fail with `EACCES`; everything else is allowed. Built once.
pub(crate) fn network_filter() -> Result<Arc<seccompiler::BpfProgram>, ConfineError> {
    use seccompiler::{
        SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule, TargetArch,
    };
    static FILTER: std::sync::OnceLock<Result<Arc<seccompiler::BpfProgram>, ConfineError>> =
        std::sync::OnceLock::new();
    FILTER
        .get_or_init(|| {
            let why = |e: seccompiler::BackendError| ConfineError::Seccomp(Arc::new(e));
            let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(why)?;
            let not_unix = SeccompRule::new(vec![
                SeccompCondition::new(
                    0,
                    SeccompCmpArgLen::Dword,
                    SeccompCmpOp::Ne,
                    nix::libc::AF_UNIX as u64,
                )
                .map_err(why)?,
            ])
            .map_err(why)?;
            let mut rules = std::collections::BTreeMap::new();
            rules.insert(nix::libc::SYS_socket, vec![not_unix.clone()]);
            rules.insert(nix::libc::SYS_io_uring_setup, vec![]);
            // x32 system calls reach the same filter as x86-64 ones, with
            // bit 30 set in the number.
            #[cfg(target_arch = "x86_64")]
            {
                const X32: i64 = 0x4000_0000;
                rules.insert(X32 | nix::libc::SYS_socket, vec![not_unix]);
                rules.insert(X32 | nix::libc::SYS_io_uring_setup, vec![]);
            }
            let filter = SeccompFilter::new(
                rules,
                SeccompAction::Allow,
                SeccompAction::Errno(nix::libc::EACCES as u32),
                arch,
            )
            .map_err(why)?;
            seccompiler::BpfProgram::try_from(filter)
                .map(Arc::new)
                .map_err(why)
        })
        .clone()
}

/// Restricts the calling process with `ruleset` and `filter`: for the
/// child, between fork and exec. Three system calls, no allocation.
#[allow(unsafe_code)]
pub(crate) fn restrict_self(
    ruleset: &OwnedFd,
    filter: &seccompiler::BpfProgram,
) -> std::io::Result<()> {
    // SAFETY: prctl and landlock_restrict_self take plain integers; the
    // ruleset descriptor is open (owned by the caller) and not closed here.
    unsafe {
        if nix::libc::prctl(nix::libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if nix::libc::syscall(
            nix::libc::SYS_landlock_restrict_self,
            ruleset.as_raw_fd(),
            0u32,
        ) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
    }
    seccompiler::apply_filter(filter).map_err(std::io::Error::other)
}
