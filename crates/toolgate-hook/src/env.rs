//! What the environment says to a hook process, read in one place (the
//! libraries read no environment variable): the directories it names to a
//! server, the server's socket, the workspace, and its stdin. Shared by
//! both binaries; the full one adds what only it reads (`src/cli/env.rs`).

use std::path::PathBuf;

/// A directory named by an environment variable; unset and empty are
/// both "not given", as XDG specifies.
pub fn dir(key: &str) -> Option<PathBuf> {
    std::env::var_os(key)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// The global config directory: `$TOOLGATE_CONFIG_DIR`, else
/// `$XDG_CONFIG_HOME/toolgate`, else `$HOME/.config/toolgate`.
pub fn global_dir() -> Option<PathBuf> {
    dir("TOOLGATE_CONFIG_DIR")
        .or_else(|| dir("XDG_CONFIG_HOME").map(|d| d.join("toolgate")))
        .or_else(|| dir("HOME").map(|h| h.join(".config").join("toolgate")))
}

/// Where trust in workspaces is recorded: `$XDG_STATE_HOME/toolgate/trust`,
/// else `$HOME/.local/state/toolgate/trust`. Deliberately no
/// `TOOLGATE_*` override: nothing but the user's own state directory
/// holds trust (see `toolgate::trust`). The lean client names it to a
/// server (which must hold the same); the full binary opens it.
pub fn trust_dir() -> Option<PathBuf> {
    state_dir().map(|d| d.join("trust"))
}

/// toolgate's own state directory: `$XDG_STATE_HOME/toolgate`, else
/// `$HOME/.local/state/toolgate`.
fn state_dir() -> Option<PathBuf> {
    dir("XDG_STATE_HOME")
        .or_else(|| dir("HOME").map(|h| h.join(".local/state")))
        .map(|d| d.join("toolgate"))
}

/// Where one-shot runs keep hooks' session state
/// (`toolgate::sessions::FileStore`): `$XDG_STATE_HOME/toolgate/sessions`,
/// else `$HOME/.local/state/toolgate/sessions`. No `TOOLGATE_*` override,
/// for the trust store's reason: a guard's memory lives only in the user's
/// own state directory.
pub fn sessions_dir() -> Option<PathBuf> {
    state_dir().map(|d| d.join("sessions"))
}

/// Where toolgate records what it answered before each agent call ran
/// (tamper evidence: `toolgate_log::ledger`): `$TOOLGATE_CALLS_DIR`
/// (the operator's, as the decision log's is), else
/// `$XDG_STATE_HOME/toolgate/calls`, else
/// `$HOME/.local/state/toolgate/calls`. Whichever it is must be the user's
/// and private, or the record refuses it.
pub fn calls_dir() -> Option<PathBuf> {
    dir("TOOLGATE_CALLS_DIR")
        .filter(|d| d.is_absolute())
        .or_else(|| state_dir().map(|d| d.join("calls")))
}

/// Where `toolgate mcp trust` keeps the tool definitions the user
/// approved, one file per server: `$XDG_STATE_HOME/toolgate/mcp`, else
/// `$HOME/.local/state/toolgate/mcp`. No `TOOLGATE_*` override, for the
/// trust store's reason.
pub fn mcp_pins_dir() -> Option<PathBuf> {
    state_dir().map(|d| d.join("mcp"))
}

/// Where `toolgate serve` listens and the other commands look for it:
/// `$TOOLGATE_SOCKET`, else `$XDG_RUNTIME_DIR/toolgate/serve.sock`, else
/// `/tmp/toolgate-<uid>/serve.sock`. `None` when `TOOLGATE_SERVER=off`
/// (the commands then always evaluate themselves).
pub fn socket_path() -> Option<PathBuf> {
    if std::env::var("TOOLGATE_SERVER").is_ok_and(|v| v == "off") {
        return None;
    }
    dir("TOOLGATE_SOCKET").or_else(|| {
        Some(
            dir("XDG_RUNTIME_DIR")
                .map(|d| d.join("toolgate"))
                .unwrap_or_else(|| {
                    PathBuf::from(format!("/tmp/toolgate-{}", nix::unistd::geteuid()))
                })
                .join("serve.sock"),
        )
    })
}

/// The decision log the operator named: `$TOOLGATE_DECISION_LOG` (see
/// `toolgate-server`'s `decision_log.rs`); unset or empty, no log.
pub fn decision_log() -> Option<PathBuf> {
    dir("TOOLGATE_DECISION_LOG")
}

/// `PATH`, which a bare program name in a workspace command hook is
/// pinned from.
pub fn search_path() -> Option<std::ffi::OsString> {
    std::env::var_os("PATH")
}

/// The workspace a command works in: the one given (which must be a
/// directory), else the nearest ancestor of the working directory with a
/// `.toolgate/` (see `toolgate_fs::workspace::find_workspace`).
pub fn workspace(
    given: Option<std::path::PathBuf>,
) -> anyhow::Result<toolgate_fs::workspace::FoundWorkspace> {
    match given {
        Some(dir) => {
            if !dir.is_dir() {
                anyhow::bail!("workspace {} is not a directory", dir.display());
            }
            Ok(toolgate_fs::workspace::FoundWorkspace {
                found: dir.join(".toolgate").is_dir(),
                root: dir,
                how: "given by --workspace".into(),
            })
        }
        None => Ok(toolgate_fs::workspace::find_workspace(
            &std::env::current_dir()?,
            dir("HOME").as_deref(),
        )),
    }
}

/// The most read from stdin: a request, or an agent's hook input (which
/// carries a tool's whole output after the call).
pub const MAX_STDIN: u64 = 64 * 1024 * 1024;

/// Reads `what` from stdin, refusing more than [`MAX_STDIN`] bytes rather
/// than cutting it short. On a terminal with nothing piped, says what it is
/// waiting for (`example` shows how to pipe it) instead of waiting silently.
pub fn read_stdin(what: &str, example: &str) -> anyhow::Result<Vec<u8>> {
    use anyhow::Context;
    use std::io::{IsTerminal, Read};
    if std::io::stdin().is_terminal() {
        eprintln!(
            "toolgate: reading {what} from stdin (type it and end with Ctrl-D), or pipe it: {example}"
        );
    }
    let mut bytes = Vec::new();
    std::io::stdin()
        .take(MAX_STDIN + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("reading {what} from stdin"))?;
    if bytes.len() as u64 > MAX_STDIN {
        anyhow::bail!("{what} on stdin is larger than {MAX_STDIN} bytes");
    }
    Ok(bytes)
}
