//! `toolgate-hook <agent>`: the lean client an agent that spawns a command
//! per tool call runs as its hook, when `toolgate serve` is running.
//!
//! # Why a second binary
//!
//! Through the server, `toolgate <agent>` only forwards its stdin over a
//! socket and prints the answer, yet it pays for being the whole tool:
//! starting the 146 MB binary (wasmtime, Cranelift, clap, the chain) costs
//! milliseconds of page faults before `main`. This binary is built from
//! this crate alone, which depends on no part of the chain, so it starts
//! about as fast as any small Rust program (numbers in docs/performance.md).
//!
//! # Same answers, same fail-closed rules
//!
//! It is not a second implementation: the deadline, the watchdog, the panic
//! hook, reading the agent's input and the workspace, the request to the
//! server and the blocks are this crate's `hook_process`, `client` and
//! `env`, the very modules `toolgate <agent>` is built from. Where
//! `toolgate <agent>` would evaluate the call itself (no server, a stale
//! socket, one run by another user, a refusal, no acknowledgement in time),
//! this process executes the full `toolgate` beside its own executable with
//! the same arguments (`--deadline-ms` set to what is left of this
//! process's deadline) and the same stdin bytes, so the agent gets that
//! process's answer and exit code. A server that acknowledged and then
//! closed the connection without answering is the same (the call is
//! evaluated, as `toolgate <agent>` evaluates it itself); one that
//! acknowledged and then missed the deadline blocks the call, and so does
//! the full binary missing, or belonging to another user than this one or
//! root, or writable by others (fail closed). Arguments it does not read exactly as `toolgate
//! <agent>` would (`--help`, an unknown agent, a bad value) go to the full
//! binary untouched, stdin included, which answers them as it always does.

use crate::hook_process::{self, Forwarded};
use std::ffi::{OsStr, OsString};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;
use toolgate_contract::agent::Outward as Dialect;

/// The name of the full binary, looked for beside this one.
const FULL: &str = "toolgate";

/// The lean client's `main`: forwards to a running server, else hands the
/// call to the full `toolgate` beside it.
pub fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let Some(hook) = Hook::parse(&args) else {
        // Not an invocation this binary reads the same way: the full one
        // answers it, with stdin untouched.
        let e = exec_full(&args, None);
        let _ = std::io::Write::write_fmt(
            &mut std::io::stderr(),
            format_args!(
                "toolgate-hook: {}\n",
                toolgate_contract::text::one_line(&format!("{e:#}"))
            ),
        );
        return ExitCode::from(2);
    };
    hook_process::run(
        hook.dialect,
        hook.deadline_ms,
        |started| match hook_process::forward(hook.workspace.clone(), hook.dialect, started)? {
            Forwarded::Answered(answer) => Ok(answer),
            Forwarded::NotTaken { bytes, .. } => {
                let args = hook.args_within(hook_process::remaining(started))?;
                Err(exec_full(&args, Some(&bytes)))
            }
        },
    )
}

/// `<agent> [--workspace DIR] [--deadline-ms MS]`, read as `toolgate
/// <agent>`'s parser reads it.
struct Hook {
    dialect: Dialect,
    workspace: Option<PathBuf>,
    deadline_ms: Option<u64>,
}

impl Hook {
    /// `None` for anything else (help, an unknown agent or flag, a value
    /// out of range, a flag given twice): the full binary's to answer.
    fn parse(args: &[OsString]) -> Option<Hook> {
        let (agent, mut rest) = args.split_first()?;
        let mut hook = Hook {
            dialect: agent.to_str()?.parse().ok()?,
            workspace: None,
            deadline_ms: None,
        };
        while let Some((arg, tail)) = rest.split_first() {
            let arg = arg.to_str()?;
            let (flag, value, tail) = match arg.split_once('=') {
                Some((flag, value)) => (flag, OsStr::new(value), tail),
                None => {
                    let (value, tail) = tail.split_first()?;
                    (arg, value.as_os_str(), tail)
                }
            };
            // clap takes no value that looks like a flag, nor an empty one.
            if value.is_empty() || value.as_encoded_bytes().starts_with(b"-") {
                return None;
            }
            match flag {
                "--workspace" if hook.workspace.is_none() => {
                    hook.workspace = Some(PathBuf::from(value));
                }
                "--deadline-ms" if hook.deadline_ms.is_none() => {
                    let ms: u64 = value.to_str()?.parse().ok()?;
                    hook.deadline_ms =
                        Some(ms).filter(|ms| (MIN_DEADLINE_MS..=MAX_DEADLINE_MS).contains(ms));
                    hook.deadline_ms?;
                }
                _ => return None,
            }
            rest = tail;
        }
        Some(hook)
    }
}

impl Hook {
    /// The arguments for the full binary once this process has spent part
    /// of the deadline (waiting for an acknowledgement takes up to 250 ms):
    /// the same, with `--deadline-ms` set to what is left, so the agent's
    /// hook timeout is still answered in time. Too little left to start it
    /// blocks the call.
    fn args_within(&self, left: Duration) -> anyhow::Result<Vec<OsString>> {
        let ms = u64::try_from(left.as_millis()).unwrap_or(u64::MAX);
        if ms < MIN_DEADLINE_MS {
            anyhow::bail!(
                "no server took this call and {ms} ms of the deadline are left, too little to \
                 run toolgate"
            );
        }
        let mut args = vec![OsString::from(self.dialect.name())];
        if let Some(dir) = &self.workspace {
            args.extend([OsString::from("--workspace"), dir.clone().into_os_string()]);
        }
        args.extend([
            OsString::from("--deadline-ms"),
            OsString::from(ms.min(MAX_DEADLINE_MS).to_string()),
        ]);
        Ok(args)
    }
}

/// `--deadline-ms`'s range in `toolgate <agent>`.
const MIN_DEADLINE_MS: u64 = 100;
const MAX_DEADLINE_MS: u64 = 600_000;

/// Replaces this process with the full `toolgate` beside it, given `args`
/// and, when this process already read its stdin, those bytes as its
/// stdin (then with `TOOLGATE_SERVER=off`). Returns only when that cannot be
/// done (the call is then blocked).
fn exec_full(args: &[OsString], stdin: Option<&[u8]>) -> anyhow::Error {
    use anyhow::Context;
    let run = || -> anyhow::Result<std::convert::Infallible> {
        let me = std::env::current_exe().context("cannot find this executable")?;
        let full = me.with_file_name(FULL);
        runnable(&full).with_context(|| {
            format!(
                "no server took this call and the full toolgate at {} is not run",
                full.display()
            )
        })?;
        let mut command = std::process::Command::new(&full);
        command.args(args);
        if let Some(bytes) = stdin {
            command.stdin(in_memory(bytes).context("cannot hand the hook input on")?);
            // This process already asked the server, and none took the call:
            // asking again would cost another acknowledgement timeout and
            // say a refusal twice.
            command.env("TOOLGATE_SERVER", "off");
        }
        let e = command.exec();
        Err(anyhow::Error::new(e).context(format!(
            "no server took this call and the full toolgate at {} cannot be run",
            full.display()
        )))
    };
    match run() {
        Err(e) => e,
    }
}

/// Whether `full` may be executed: it, the file it resolves to, and the
/// folders both are in belong to this user or to root and nobody else may
/// write them. Another user who could replace the `toolgate` beside this
/// binary would decide every call it does not forward.
fn runnable(full: &std::path::Path) -> anyhow::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let me = nix::unistd::geteuid().as_raw();
    let resolved = full
        .canonicalize()
        .map_err(|e| anyhow::anyhow!("{}: {e}", full.display()))?;
    let mut checked = vec![resolved.clone()];
    checked.extend(resolved.parent().map(std::path::Path::to_owned));
    checked.extend(full.parent().map(std::path::Path::to_owned));
    for path in checked {
        let meta =
            std::fs::metadata(&path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        if meta.uid() != me && meta.uid() != 0 {
            anyhow::bail!(
                "{} belongs to uid {}, neither this user nor root",
                path.display(),
                meta.uid()
            );
        }
        if meta.mode() & 0o022 != 0 {
            anyhow::bail!(
                "{} is writable by others (mode {:o})",
                path.display(),
                meta.mode() & 0o7777
            );
        }
    }
    Ok(())
}

/// `bytes` in an anonymous in-memory file, at offset 0: a stdin of any
/// size that needs no writer (a pipe holds 64 KiB) and never touches disk.
fn in_memory(bytes: &[u8]) -> std::io::Result<std::fs::File> {
    use std::io::{Seek, Write};
    let fd = nix::sys::memfd::memfd_create(
        c"toolgate-hook-input",
        nix::sys::memfd::MFdFlags::MFD_CLOEXEC,
    )
    .map_err(std::io::Error::from)?;
    let mut file = std::fs::File::from(fd);
    file.write_all(bytes)?;
    file.rewind()?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<OsString> {
        words.iter().map(OsString::from).collect()
    }

    #[test]
    fn only_what_toolgate_reads_the_same_way_is_read_here() {
        let hook =
            Hook::parse(&args(&["codex", "--workspace=/w", "--deadline-ms", "900"])).expect("read");
        assert_eq!(hook.dialect, Dialect::Codex);
        assert_eq!(hook.workspace, Some(PathBuf::from("/w")));
        assert_eq!(hook.deadline_ms, Some(900));
        for other in [
            &["--help"][..],
            &["claude-code", "--help"],
            &["no-such-agent"],
            &["claude-code", "--deadline-ms", "50"],
            &["claude-code", "--deadline-ms", "x"],
            &["claude-code", "--workspace"],
            &["claude-code", "--workspace", "--deadline-ms"],
            &["claude-code", "--workspace", "/a", "--workspace", "/b"],
            &["claude-code", "extra"],
        ] {
            assert!(Hook::parse(&args(other)).is_none(), "{other:?}");
        }
    }

    #[test]
    fn the_full_binary_gets_what_is_left_of_the_deadline_or_the_call_is_blocked() {
        let hook = Hook::parse(&args(&["gemini", "--workspace", "/w"])).expect("read");
        assert_eq!(
            hook.args_within(Duration::from_millis(1234)).unwrap(),
            args(&["gemini", "--workspace", "/w", "--deadline-ms", "1234"])
        );
        let error = hook.args_within(Duration::from_millis(99)).unwrap_err();
        assert!(format!("{error}").contains("too little"), "{error}");
    }
}
