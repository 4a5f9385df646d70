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
//! | no network: no TCP connect or bind, no socket | a hook sends what it sees (every tool input) away | Landlock network rules (ABI 4), none allowed; a seccomp filter refusing `socket()` for every family (UDP, raw and UNIX sockets, which Landlock does not cover) and `io_uring_setup` |
//! | writes only to a per-call scratch folder (and `/dev/null`) | a hook edits the workspace, `$HOME`, the trust store | Landlock filesystem rules: write beneath the scratch folder only |
//! | reads only what a hook needs | a hook reads SSH keys, the HTTP token, the trust store or another workspace and returns it in a reason the model reads | Landlock filesystem rules: read and execute only the system's installation ([`system_reads`]), the hook's snapshot, its workspace, its interpreter's installation and its `PATH` ([`hook_reads`]) |
//! | no signals to processes outside the hook, no abstract UNIX sockets outside it | a hook kills or steers the agent | Landlock scopes (ABI 6) |
//! | no code from the environment | `PYTHONPATH`, `NODE_OPTIONS`, `BASH_ENV`, `OPENSSL_CONF`, `BASH_FUNC_*%%`, `LD_PRELOAD`… set by a repository's `.envrc` | an empty environment plus an allowlist ([`environment`]): `PATH` without empty, relative or workspace entries, `HOME` and `TMPDIR` the scratch folder, the locale; bytecode neither written nor read beside the pinned code (the snapshot holds none and is read-only) |
//! | no socket at all, no change to file metadata, no keyring | a hook talks to `toolgate serve` or another local service over a pathname UNIX socket; chmods a file outside its scratch folder; reads the user's kernel keyring | a seccomp filter ([`network_filter`]) |
//! | no descriptor but its three pipes | a hook writes through a descriptor the agent left open | every descriptor above 2 close-on-exec (`close_range`, in `spawn`) |
//!
//! Landlock and the seccomp filter are applied in the child between its
//! clone and its exec (`spawn`, which shares the server's memory rather than
//! copying it), with the ruleset and the filter built beforehand in the
//! parent, so the child only makes system calls
//! (`prctl(PR_SET_NO_NEW_PRIVS)`, `landlock_restrict_self`, `close_range`,
//! `seccomp`) and allocates nothing. Where the kernel has no
//! Landlock (or an ABI older than 6), the hook runs unconfined and every run
//! record says so — unless the global config sets `require_confinement`,
//! and then the hook fails closed.

use std::ffi::OsString;
use std::os::fd::OwnedFd;
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

/// The environment of a confined hook, before the protocol's own variables
/// (such as `CLAUDE_PROJECT_DIR`): `PATH` as toolgate set it, `HOME` and
/// `TMPDIR` its scratch folder, no bytecode written, `LANG=C.UTF-8` (text
/// in and out is UTF-8), and what the operator set (`confined_env`, which
/// cannot name these). Nothing of toolgate's own environment is
/// inherited, not even the locale or time zone (a hook reads the system's
/// `/etc/localtime`).
///
/// The environment starts empty, because a list of names to remove was the
/// wrong shape: every interpreter, the shell and the dynamic loader read
/// variables that load code (`OPENSSL_CONF` and `OPENSSL_MODULES` made a
/// trusted node hook load a shared object from the workspace, an exported
/// bash function (`BASH_FUNC_echo%%`) replaced a reviewed guard's `echo`,
/// `PYTHONPYCACHEPREFIX` ran planted bytecode), and a new one appears with
/// every release.
pub(crate) fn environment(
    path: &OsString,
    scratch: &Path,
    operator: &[(OsString, OsString)],
) -> Vec<(OsString, OsString)> {
    let own = [
        ("PATH".into(), path.clone()),
        ("HOME".into(), scratch.as_os_str().to_owned()),
        ("TMPDIR".into(), scratch.as_os_str().to_owned()),
        // Bytecode is never read from or written to the pinned tree: the
        // snapshot holds no `__pycache__` and is read-only.
        ("PYTHONDONTWRITEBYTECODE".into(), "1".into()),
        ("LANG".into(), "C.UTF-8".into()),
    ];
    // The operator's (`confined_env`, which cannot name these), then
    // toolgate's own.
    operator.iter().cloned().chain(own).collect()
}

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
    /// What it may read besides the system's installation (see
    /// [`hook_reads`]): its snapshot and workspace, or a global hook's
    /// config folder; and what the operator allowed (`confined_reads`).
    pub(crate) reads: Vec<PathBuf>,
    /// Variables the operator set for confined hooks (`confined_env`).
    pub(crate) env: Vec<(OsString, OsString)>,
}

/// Whether this kernel can confine a hook (Landlock ABI 6 or newer), or why
/// not.
pub(crate) fn available() -> Result<(), ConfineError> {
    // What the kernel supports does not change while the process runs.
    static PROBE: std::sync::OnceLock<Result<(), ConfineError>> = std::sync::OnceLock::new();
    PROBE
        .get_or_init(|| ruleset(Path::new("/"), &[]).and(network_filter()).map(drop))
        .clone()
}

/// Builds the ruleset for a hook whose scratch folder is `scratch`: read
/// and execute only the system's installation ([`system_reads`]) and
/// `reads` (the hook's snapshot, its workspace, its interpreter's
/// installation, its `PATH`: see [`hook_reads`]); write beneath `scratch`
/// and to `/dev/null`; no TCP; scoped signals and abstract sockets. Every
/// part is a hard requirement: a kernel that cannot enforce one of them
/// gets no ruleset. A path in `reads` that does not exist is skipped.
pub(crate) fn ruleset(scratch: &Path, reads: &[PathBuf]) -> Result<OwnedFd, ConfineError> {
    use landlock::{
        ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
        RulesetAttr, RulesetCreatedAttr, Scope,
    };
    let abi = ABI::V6;
    let why = |e: landlock::RulesetError| ConfineError::Landlock(Arc::new(e));
    let mut created = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(abi))
        .and_then(|r| r.handle_access(AccessNet::from_all(abi)))
        .and_then(|r| r.scope(Scope::from_all(abi)))
        .and_then(|r| r.create())
        .map_err(why)?;
    for path in system_reads().iter().chain(reads) {
        // Gone since it was listed, or never there: nothing to allow.
        let Ok(fd) = PathFd::new(path) else {
            continue;
        };
        // A file takes only the rights a file has (listing is a folder's).
        let access = match std::fs::metadata(path) {
            Ok(meta) if meta.is_dir() => AccessFs::from_read(abi),
            Ok(_) => AccessFs::from_read(abi) & AccessFs::from_file(abi),
            Err(_) => continue,
        };
        created = created
            .add_rule(PathBeneath::new(fd, access))
            .map_err(why)?;
    }
    let scratch = PathFd::new(scratch).map_err(|e| ConfineError::OpenPath {
        path: scratch.to_owned(),
        error: Arc::new(e),
    })?;
    created = created
        .add_rule(PathBeneath::new(scratch, AccessFs::from_all(abi)))
        .map_err(why)?;
    if let Ok(null) = PathFd::new("/dev/null") {
        created = created
            .add_rule(PathBeneath::new(
                null,
                AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate,
            ))
            .map_err(why)?;
    }
    let fd: Option<OwnedFd> = created.into();
    fd.ok_or(ConfineError::NoLandlock)
}

/// What every confined hook may read (and execute): the system's
/// installation, without the user's files or the machine's secrets.
///
/// `/usr`, `/bin`, `/sbin`, `/lib*`, `/opt`; the entries of `/etc` that
/// others may read, except those that hold secrets even so (`ssh`, whose
/// host keys root can read; `ssl/private`; the shadow
/// and sudoers files; `security`; `credstore`); `/proc` and `/sys` (a
/// confined process cannot reach another process's `environ`, `mem` or
/// `fd` there: Landlock refuses it the ptrace access those need); and the
/// random, zero and full devices. Not `$HOME`, `/tmp`, `/run`, `/var` or
/// `/home`: a hook that needs more is given it by the operator.
pub(crate) fn system_reads() -> &'static [PathBuf] {
    static READS: std::sync::OnceLock<Vec<PathBuf>> = std::sync::OnceLock::new();
    READS.get_or_init(|| {
        use std::os::unix::fs::PermissionsExt;
        const SECRET: &[&str] = &[
            "ssh",
            "ssl",
            "shadow",
            "shadow-",
            "gshadow",
            "gshadow-",
            "sudoers",
            "sudoers.d",
            "security",
            "credstore",
            "credstore.encrypted",
            "toolgate",
        ];
        let mut reads: Vec<PathBuf> = [
            "/usr",
            "/bin",
            "/sbin",
            "/lib",
            "/lib32",
            "/lib64",
            "/libx32",
            "/opt",
            "/proc",
            "/sys",
            "/dev/urandom",
            "/dev/random",
            "/dev/zero",
            "/dev/full",
            "/etc/ssl/certs",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        // The public entries of a folder, but for `secret` ones.
        let public = |dir: &str, secret: &[&str]| -> Vec<PathBuf> {
            let entries = std::fs::read_dir(dir).into_iter().flatten().flatten();
            entries
                .filter(|entry| {
                    let name = entry.file_name();
                    let others_read = std::fs::metadata(entry.path())
                        .is_ok_and(|m| m.permissions().mode() & 0o004 != 0);
                    others_read && name.to_str().is_some_and(|n| !secret.contains(&n))
                })
                .map(|entry| entry.path())
                .collect()
        };
        reads.extend(public("/etc", SECRET));
        // `ssl` without its private keys (node reads `openssl.cnf` at start).
        reads.extend(public("/etc/ssl", &["private"]));
        reads
    })
}

/// What one confined hook may read besides [`system_reads`]: `given` (its
/// pinned snapshot and its workspace, set by the trust gate), the
/// installation its program belongs to, and the folders on its `PATH`
/// with theirs ([`installation`]), except a folder that holds `$HOME`
/// (that would be all of it).
pub(crate) fn hook_reads(given: &[PathBuf], program: &Path, path: &OsString) -> Vec<PathBuf> {
    let mut reads = given.to_vec();
    let mut programs = vec![program.to_owned()];
    programs.extend(program.canonicalize().ok());
    for program in programs {
        if let Some(dir) = program.parent() {
            reads.extend(installation(dir));
        }
    }
    // The user's home from the password database (the library reads no
    // variable of its own).
    let home = nix::unistd::User::from_uid(nix::unistd::getuid())
        .ok()
        .flatten()
        .map(|user| user.dir);
    for dir in std::env::split_paths(path) {
        if dir.is_absolute() {
            reads.extend(installation(&dir));
        }
    }
    reads.retain(|p| p != Path::new("/") && !home.as_ref().is_some_and(|h| h.starts_with(p)));
    reads
}

/// What a folder of programs needs read: for `X/bin`, the parts of `X` an
/// interpreter loads its library from (`bin`, `lib`, `lib64`, `libexec`,
/// `share`, a virtual environment's `pyvenv.cfg`; not all of `X`, which may be `~/.cargo` with its
/// `credentials.toml`); for a version manager's `X/shims` (pyenv, rbenv),
/// all of `X`, where its versions are; any other folder, itself.
fn installation(dir: &Path) -> Vec<PathBuf> {
    match (dir.file_name().and_then(|n| n.to_str()), dir.parent()) {
        (Some("bin" | "sbin"), Some(prefix)) => [
            "bin",
            "sbin",
            "lib",
            "lib64",
            "libexec",
            "share",
            // A virtual environment's marker, which says where its
            // interpreter's own installation is.
            "pyvenv.cfg",
        ]
        .iter()
        .map(|part| prefix.join(part))
        .collect(),
        (Some("shims"), Some(prefix)) => vec![prefix.to_owned()],
        _ => vec![dir.to_owned()],
    }
}

/// The seccomp filter of a confined hook, for what Landlock does not cover:
///
/// - `socket()` for every family, and `io_uring_setup` (whose operations
///   include opening sockets), fail with `EACCES`. Landlock covers TCP
///   only; a pathname UNIX socket (the user's own `toolgate serve`, an
///   agent's, a desktop's) was reachable, and a confined hook talked to the
///   server that way. `socketpair` stays: it reaches nothing outside the
///   hook, and runtimes use it for their own child processes.
/// - chmod, chown and utime in every form (`f*`, `*at`, `fchmodat2`), and
///   the kernel keyring (`add_key`, `request_key`, `keyctl`): Landlock does
///   not cover file metadata, and a confined hook changed the mode of files
///   outside its scratch folder. Seccomp cannot see paths, so they fail
///   everywhere, the scratch folder included (EPERM).
///
/// Everything else is allowed. Built once.
pub(crate) fn network_filter() -> Result<Arc<seccompiler::BpfProgram>, ConfineError> {
    use nix::libc;
    use seccompiler::{SeccompAction, SeccompFilter, TargetArch};
    static FILTER: std::sync::OnceLock<Result<Arc<seccompiler::BpfProgram>, ConfineError>> =
        std::sync::OnceLock::new();
    FILTER
        .get_or_init(|| {
            let why = |e: seccompiler::BackendError| ConfineError::Seccomp(Arc::new(e));
            let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(why)?;
            let mut refused: Vec<libc::c_long> = vec![
                libc::SYS_socket,
                libc::SYS_io_uring_setup,
                libc::SYS_fchmod,
                libc::SYS_fchmodat,
                FCHMODAT2,
                libc::SYS_fchown,
                libc::SYS_fchownat,
                libc::SYS_utimensat,
                libc::SYS_add_key,
                libc::SYS_request_key,
                libc::SYS_keyctl,
            ];
            #[cfg(target_arch = "x86_64")]
            refused.extend([
                libc::SYS_chmod,
                libc::SYS_chown,
                libc::SYS_lchown,
                libc::SYS_utime,
                libc::SYS_utimes,
                libc::SYS_futimesat,
            ]);
            let mut rules = std::collections::BTreeMap::new();
            for call in &refused {
                rules.insert(*call, vec![]);
                // x32 system calls reach the same filter as x86-64 ones,
                // with bit 30 set in the number.
                #[cfg(target_arch = "x86_64")]
                rules.insert(0x4000_0000 | *call, vec![]);
            }
            let filter = SeccompFilter::new(
                rules,
                SeccompAction::Allow,
                SeccompAction::Errno(libc::EACCES as u32),
                arch,
            )
            .map_err(why)?;
            seccompiler::BpfProgram::try_from(filter)
                .map(Arc::new)
                .map_err(why)
        })
        .clone()
}

/// `fchmodat2` (Linux 6.6), the same number on every architecture.
const FCHMODAT2: nix::libc::c_long = 452;

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_hook_restricted_by_its_ruleset_reads_the_system_and_nothing_else() {
        use tokio::io::AsyncReadExt;
        let outside = tempfile::tempdir().expect("tempdir");
        std::fs::write(outside.path().join("secret"), "SECRET").expect("write");
        let scratch = tempfile::tempdir().expect("tempdir");
        let fd = ruleset(scratch.path(), &[]).expect("ruleset");
        let script = format!(
            "head -c 5 /etc/passwd; echo; cat {}/secret || echo refused",
            outside.path().display()
        );
        let request = std::sync::Arc::new(super::super::spawn::Request {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), script],
            cwd: scratch.path().to_owned(),
            env: vec![("PATH".into(), "/usr/bin:/bin".into())],
            ruleset: Some((Arc::new(fd), network_filter().expect("filter"))),
        });
        let mut process = super::super::spawn::Process::start(request)
            .await
            .expect("started");
        drop(process.stdin.take());
        let mut out = String::new();
        let mut stdout = process.stdout.take().expect("stdout");
        stdout.read_to_string(&mut out).await.expect("read");
        process.wait().await.expect("waited");
        assert_eq!(out, "root:\nrefused\n");
    }
}
