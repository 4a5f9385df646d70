//! Command-line parsing and dispatch.
//!
//! # Exit codes
//!
//! Callers script against these, so they are fixed:
//! - `0` — the call may proceed (allow, modify, replace) / the command succeeded;
//! - `2` — `check` denied the call;
//! - `1` — toolgate itself could not do what was asked (bad config, bad
//!   request, unreadable input). The reason is on stderr. A caller must treat
//!   `1` from `check` as a denial.

/// `println!` that ends the process quietly (exit 1) when stdout is a closed
/// pipe (`toolgate hooks | head`), instead of panicking. Exit 1, not 0: for
/// `check` and the agent commands, a caller that stopped reading must not be
/// handed a success code it could take for "allowed".
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::cli::write_line(format_args!($($arg)*))
    };
}

pub(crate) fn write_line(args: std::fmt::Arguments<'_>) {
    use std::io::Write;
    if let Err(e) = writeln!(std::io::stdout().lock(), "{args}") {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            eprintln!("toolgate: cannot write to stdout: {e}");
        }
        std::process::exit(i32::from(
            FAILURE_EXIT.load(std::sync::atomic::Ordering::Relaxed),
        ));
    }
}

/// The exit code for "toolgate itself failed": 1, except in agent mode,
/// where only 0 and 2 are ever used (see `agent.rs`).
static FAILURE_EXIT: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(EXIT_ERROR);

pub(crate) fn set_failure_exit(code: u8) {
    FAILURE_EXIT.store(code, std::sync::atomic::Ordering::Relaxed);
}

/// Writes `text` to `path`, creating its folder, optionally executable
/// (0755); errors name the path.
pub(crate) fn write_file(
    path: &std::path::Path,
    text: &str,
    executable: bool,
) -> anyhow::Result<()> {
    use anyhow::Context;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))?;
    if executable {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
            .with_context(|| format!("cannot make {} executable", path.display()))?;
    }
    Ok(())
}

mod agent;
mod bench;
mod check;
mod client;
mod doctor;
mod hooks;
mod import;
mod install;
mod new;
mod replay;
mod serve;
mod trust;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Exit code: toolgate could not evaluate.
pub(crate) const EXIT_ERROR: u8 = 1;
/// Exit code: the call is denied.
pub(crate) const EXIT_DENIED: u8 = 2;

#[derive(Parser)]
#[command(
    name = "toolgate",
    version,
    about = "Give a program a say over an AI agent's tool calls: one ordered, fail-closed hook chain.",
    long_about = "Give a program a say over an AI agent's tool calls.\n\n\
        Hooks configured in the global config ($TOOLGATE_CONFIG_DIR, else \
        $XDG_CONFIG_HOME/toolgate, else ~/.config/toolgate: hooks.json) and in the \
        workspace (.toolgate/hooks.json) form one ordered chain: global hooks first, \
        then workspace hooks. The first deny ends it; a modify hands the rewritten \
        input to the next hook; a hook that fails is treated as a deny unless it \
        says on_failure: allow.",
    after_help = "Examples:\n  \
        toolgate check --workspace examples/demo < examples/demo/force-push.json\n  \
        toolgate hooks --workspace examples/demo\n\n\
        Set TOOLGATE_LOG=debug to see what the chain does on stderr."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    Check(check::Args),
    Hooks(hooks::Args),
    Bench(bench::Args),
    /// `toolgate claude-code`, `toolgate codex`: one per agent dialect.
    #[command(flatten)]
    Agent(agent::Command),
    Import(import::Args),
    Install(install::InstallArgs),
    Uninstall(install::UninstallArgs),
    Doctor(doctor::Args),
    New(new::Args),
    Replay(replay::Args),
    Trust(trust::Args),
    Serve(serve::Args),
}

pub(crate) fn main() -> ExitCode {
    init_tracing();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Check(args) => check::run(args),
        Command::Hooks(args) => hooks::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Import(args) => import::run(args),
        Command::Install(args) => install::install(args),
        Command::Uninstall(args) => install::uninstall(args),
        Command::Doctor(args) => doctor::run(args),
        Command::New(args) => new::run(args),
        Command::Replay(args) => replay::run(args),
        Command::Trust(args) => trust::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Agent(agent) => return agent::run(agent.args, agent.dialect),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            // Error text may quote what a hook or a config said: no terminal
            // control sequences reach the operator's terminal.
            eprintln!(
                "{} {}",
                colour::error("toolgate:"),
                toolgate::text::sanitize(&format!("{e:#}"))
            );
            ExitCode::from(EXIT_ERROR)
        }
    }
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("TOOLGATE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("off"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .without_time()
        .init();
}

/// The workspace a command works in: the one given (which must be a
/// directory), else the nearest ancestor of the working directory with a
/// `.toolgate/` (see `toolgate::config::find_workspace`).
pub(crate) fn workspace(
    given: Option<std::path::PathBuf>,
) -> anyhow::Result<toolgate::config::FoundWorkspace> {
    match given {
        Some(dir) => {
            if !dir.is_dir() {
                anyhow::bail!("workspace {} is not a directory", dir.display());
            }
            Ok(toolgate::config::FoundWorkspace {
                found: dir.join(".toolgate").is_dir(),
                root: dir,
                how: "given by --workspace".into(),
            })
        }
        None => Ok(toolgate::config::find_workspace(
            &std::env::current_dir()?,
            env::dir("HOME").as_deref(),
        )),
    }
}

/// What the environment says, read in one place: the library reads no
/// environment variable, so each is turned into an option here.
pub(crate) mod env {
    use std::path::{Path, PathBuf};
    use toolgate::wasm::{Allocator, WasmOptions};
    use toolgate::{Config, ConfigError};

    /// A directory named by an environment variable; unset and empty are
    /// both "not given", as XDG specifies.
    pub(crate) fn dir(key: &str) -> Option<PathBuf> {
        std::env::var_os(key)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    }

    /// The global config directory: `$TOOLGATE_CONFIG_DIR`, else
    /// `$XDG_CONFIG_HOME/toolgate`, else `$HOME/.config/toolgate`.
    pub(crate) fn global_dir() -> Option<PathBuf> {
        dir("TOOLGATE_CONFIG_DIR")
            .or_else(|| dir("XDG_CONFIG_HOME").map(|d| d.join("toolgate")))
            .or_else(|| dir("HOME").map(|h| h.join(".config").join("toolgate")))
    }

    /// The compile cache: `$TOOLGATE_CACHE_DIR`, else
    /// `$XDG_CACHE_HOME/toolgate/wasm`, else `~/.cache/toolgate/wasm`.
    pub(crate) fn cache_dir() -> Option<PathBuf> {
        dir("TOOLGATE_CACHE_DIR")
            .or_else(|| dir("XDG_CACHE_HOME").map(|d| d.join("toolgate").join("wasm")))
            .or_else(|| dir("HOME").map(|h| h.join(".cache").join("toolgate").join("wasm")))
    }

    /// How components are loaded. A one-shot command (one call per
    /// process) uses on-demand allocation; `TOOLGATE_WASM_ALLOCATOR`
    /// (`pooling` or `on-demand`) overrides either choice.
    pub(crate) fn wasm(one_shot: bool) -> WasmOptions {
        let allocator = match std::env::var("TOOLGATE_WASM_ALLOCATOR").ok().as_deref() {
            Some("on-demand") => Allocator::OnDemand,
            Some("pooling") => Allocator::Pooling,
            _ if one_shot => Allocator::OneShot,
            _ => Allocator::Pooling,
        };
        let mut options = WasmOptions::new().allocator(allocator);
        // A first compile takes seconds to minutes: say so on a terminal,
        // stay quiet when stderr is a pipe (an agent reading it).
        if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            options = options.progress(|line| eprintln!("toolgate: {line}"));
        }
        #[cfg(debug_assertions)]
        if std::env::var_os(PAUSE_AFTER_READ).is_some() {
            options = options.after_read(pause_after_read);
        }
        match cache_dir() {
            Some(dir) => options.cache_dir(dir),
            None => options,
        }
    }

    /// Fault injection for the tests that swap a component while it loads;
    /// compiled out of release builds. Names a directory: toolgate creates
    /// `reached` in it once a component's bytes are read, then waits (at
    /// most a minute) for `go` to appear before recording their identity.
    #[cfg(debug_assertions)]
    const PAUSE_AFTER_READ: &str = "TOOLGATE_DEBUG_PAUSE_AFTER_READ";

    #[cfg(debug_assertions)]
    fn pause_after_read(_component: &Path) {
        let Some(dir) = dir(PAUSE_AFTER_READ) else {
            return;
        };
        let _ = std::fs::write(dir.join("reached"), b"");
        let started = std::time::Instant::now();
        while !dir.join("go").exists() && started.elapsed() < std::time::Duration::from_secs(60) {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    /// Where trust in workspaces is recorded: `$XDG_STATE_HOME/toolgate/trust`,
    /// else `$HOME/.local/state/toolgate/trust`. Deliberately no
    /// `TOOLGATE_*` override: nothing but the user's own state directory
    /// holds trust (see `toolgate::trust`).
    pub(crate) fn trust_store() -> Option<toolgate::trust::TrustStore> {
        dir("XDG_STATE_HOME")
            .map(|d| d.join("toolgate").join("trust"))
            .or_else(|| dir("HOME").map(|h| h.join(".local/state/toolgate/trust")))
            .map(toolgate::trust::TrustStore::new)
    }

    /// Where `toolgate serve` listens and the other commands look for it:
    /// `$TOOLGATE_SOCKET`, else `$XDG_RUNTIME_DIR/toolgate/serve.sock`, else
    /// `/tmp/toolgate-<uid>/serve.sock`. `None` when `TOOLGATE_SERVER=off`
    /// (the commands then always evaluate themselves).
    pub(crate) fn socket_path() -> Option<PathBuf> {
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

    /// `PATH`, which a bare program name in a workspace command hook is
    /// pinned from.
    pub(crate) fn search_path() -> Option<std::ffi::OsString> {
        std::env::var_os("PATH")
    }

    /// A loader for `workspace` (and the global config), as the
    /// environment says.
    pub(crate) fn loader(workspace: &Path, one_shot: bool) -> toolgate::config::Loader {
        let mut loader = Config::loader().workspace(workspace).wasm(wasm(one_shot));
        if let Some(global) = global_dir() {
            loader = loader.global_dir(global);
        }
        if let Some(store) = trust_store() {
            loader = loader.trust(store);
        }
        if let Some(path) = search_path() {
            loader = loader.search_path(path);
        }
        // The library probes the kernel itself, only when a hook needs it.
        if let Some(why) = no_landlock_fault() {
            loader = loader.without_landlock(why);
        }
        loader
    }

    /// Debug builds take `TOOLGATE_DEBUG_FAULT=no-landlock` as "this kernel
    /// cannot confine" (the tests of that path run on a kernel that can).
    fn no_landlock_fault() -> Option<String> {
        #[cfg(debug_assertions)]
        if std::env::var("TOOLGATE_DEBUG_FAULT").is_ok_and(|v| v == "no-landlock") {
            return Some("Landlock switched off by TOOLGATE_DEBUG_FAULT=no-landlock".into());
        }
        None
    }

    /// Whether this kernel can confine hooks (see [`no_landlock_fault`]).
    pub(crate) fn confinement() -> anyhow::Result<()> {
        match no_landlock_fault() {
            Some(why) => Err(anyhow::Error::msg(why)),
            None => Ok(toolgate::trust::confinement_available()?),
        }
    }

    /// The global config and `workspace`'s, loaded as the environment says.
    pub(crate) fn load(workspace: &Path, one_shot: bool) -> Result<Config, ConfigError> {
        loader(workspace, one_shot).load()
    }

    /// What a one-shot process evaluating `request` needs: the hooks that
    /// apply to it.
    pub(crate) fn load_for(
        workspace: &Path,
        request: &toolgate::Request,
    ) -> Result<Config, ConfigError> {
        loader(workspace, true)
            .only_for(request.event, request.tool.clone())
            .load()
    }
}

/// The most read from stdin: a request, or an agent's hook input (which
/// carries a tool's whole output after the call).
pub(crate) const MAX_STDIN: u64 = 64 * 1024 * 1024;

/// Reads `what` from stdin, refusing more than [`MAX_STDIN`] bytes rather
/// than cutting it short. On a terminal with nothing piped, says what it is
/// waiting for (`example` shows how to pipe it) instead of waiting silently.
pub(crate) fn read_stdin(what: &str, example: &str) -> anyhow::Result<Vec<u8>> {
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

/// Colour where it helps a person read (decisions, failures): on a terminal,
/// never when piped or with `NO_COLOR` set; `CLICOLOR_FORCE` forces it (for
/// a pager that understands it).
pub(crate) mod colour {
    use anstyle::{AnsiColor, Style};
    use std::io::IsTerminal;

    fn set(key: &str) -> bool {
        std::env::var_os(key).is_some_and(|v| !v.is_empty() && v != "0")
    }

    fn enabled(is_terminal: bool) -> bool {
        !set("NO_COLOR") && (set("CLICOLOR_FORCE") || is_terminal)
    }

    fn paint(text: &str, style: Style, on: bool) -> String {
        if on {
            format!("{style}{text}{style:#}")
        } else {
            text.to_owned()
        }
    }

    /// A decision's word (or a phrase about it), coloured by what it did, for
    /// stdout.
    pub(crate) fn decision(word: &str, text: &str) -> String {
        let colour = match word {
            "deny" | "failed" => AnsiColor::Red,
            "modify" | "replace" => AnsiColor::Yellow,
            _ => AnsiColor::Green,
        };
        paint(
            text,
            Style::new().fg_color(Some(colour.into())),
            enabled(std::io::stdout().is_terminal()),
        )
    }

    /// An error's prefix on stderr.
    pub(crate) fn error(text: &str) -> String {
        paint(
            text,
            Style::new().fg_color(Some(AnsiColor::Red.into())).bold(),
            enabled(std::io::stderr().is_terminal()),
        )
    }
}

/// The width tables fit: `$COLUMNS`, else stdout's terminal, else none.
pub(crate) fn width() -> Option<u16> {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse::<u16>().ok())
        .or_else(|| terminal_size::terminal_size_of(std::io::stdout()).map(|(w, _)| w.0))
}

/// A table that fits the terminal: cells wrap to `$COLUMNS` or the
/// terminal's width; piped with no `$COLUMNS`, nothing is cut (`--json`
/// always has everything).
pub(crate) fn table(header: &[&str]) -> comfy_table::Table {
    use comfy_table::{ContentArrangement, Table, presets::UTF8_FULL_CONDENSED};
    let mut table = Table::new();
    table
        .load_style(UTF8_FULL_CONDENSED)
        .set_header(header.to_vec());
    if let Some(width) = width() {
        table
            .set_content_arrangement(ContentArrangement::Dynamic)
            .set_width(width);
    }
    table
}

/// The tokio runtime the commands run the chain on.
pub(crate) fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}
