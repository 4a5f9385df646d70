//! Which programs the agents run: the binary an entry names (this toolgate,
//! or which version), and the agent's own CLI on `PATH` against the
//! releases toolgate was tested with. Nothing a project chose is run.

use super::*;

/// How long an agent's (or another toolgate's) `--version` may take.
const VERSION_TIMEOUT: Duration = Duration::from_secs(10);
/// The binary an entry runs: whether it is this toolgate, else its
/// version (unless it lies inside the project: doctor runs nothing a
/// repository chose).
pub(super) fn check_binary(program: &str, exe: &str, project: Option<&Path>) -> BinaryReport {
    let path = Path::new(program);
    let canonical = path.canonicalize().ok();
    let exists = path.is_absolute() && path.is_file();
    // The lean client beside this toolgate (what install writes while a
    // server runs) is this toolgate too.
    let lean = Path::new(exe).with_file_name(toolgate::agent::LEAN_CLIENT);
    let this_toolgate = canonical
        .as_deref()
        .is_some_and(|c| c == Path::new(exe) || c == lean);
    let inside_project = project
        .zip(canonical.as_deref())
        .is_some_and(|(root, binary)| binary.starts_with(root));
    let version = (exists && !this_toolgate && !inside_project)
        .then(|| version_output(path))
        .flatten()
        .and_then(|out| {
            out.lines()
                .next()
                .map(|l| toolgate::text::sanitize(l.trim()))
        });
    BinaryReport {
        path: program.to_owned(),
        exists,
        this_toolgate,
        version,
    }
}

/// The version of `agent`'s CLI on PATH, when it answers.
pub(crate) fn agent_version(agent: Outward) -> Option<String> {
    check_cli(agent).version
}

pub(super) fn check_cli(agent: Outward) -> CliReport {
    let spec = agent.install();
    let path = on_path(spec.agent_cli);
    let version = path
        .as_deref()
        .and_then(version_output)
        .and_then(|out| first_version(&out));
    CliReport {
        command: spec.agent_cli,
        path: path.map(|p| p.display().to_string()),
        tested: version
            .as_ref()
            .map(|v| spec.tested_versions.contains(&v.as_str())),
        version,
        tested_versions: spec.tested_versions,
    }
}

/// `program` found in an absolute directory of `PATH`, as an executable
/// file.
fn on_path(program: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = crate::cli::env::search_path()?;
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(program))
        .find(|candidate| {
            std::fs::metadata(candidate)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// What `program --version` prints (stdout, else stderr), within
/// [`VERSION_TIMEOUT`].
fn version_output(program: &Path) -> Option<String> {
    let out = output_within(Command::new(program).arg("--version"), VERSION_TIMEOUT)?;
    let text = if out.stdout.iter().any(|b| !b.is_ascii_whitespace()) {
        out.stdout
    } else {
        out.stderr
    };
    Some(String::from_utf8_lossy(&text).into_owned())
}

/// What `program args…` prints on stdout, run in `dir`, when it exits 0
/// within `timeout` (killed past it).
pub(super) fn run_bounded(
    program: &str,
    args: &[&str],
    dir: &Path,
    timeout: Duration,
) -> Option<String> {
    let out = output_within(Command::new(program).args(args).current_dir(dir), timeout)?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `cmd`'s output, its stdin closed, read as it runs (a large output never
/// fills a pipe), or `None` when it cannot start or outlives `timeout`.
fn output_within(cmd: &mut Command, timeout: Duration) -> Option<std::process::Output> {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(timeout) {
        Ok(out) => out.ok(),
        Err(_) => {
            if let Ok(pid) = i32::try_from(pid) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            None
        }
    }
}

/// The first `x.y.z` in `text`.
fn first_version(text: &str) -> Option<String> {
    regex::Regex::new(r"\d+\.\d+\.\d+")
        .ok()?
        .find(text)
        .map(|m| m.as_str().to_owned())
}
