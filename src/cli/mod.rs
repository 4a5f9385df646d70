//! Command-line parsing and dispatch.
//!
//! # Exit codes
//!
//! Callers script against these, so they are fixed, and no two meanings
//! share a code (a usage error or a crashed guard read as "denied" would
//! let a script believe a guard works):
//!
//! | code | every command | `check` | `test` |
//! |---|---|---|---|
//! | `0` | success | the call may proceed (allow, modify, replace) | every fixture passed |
//! | `1` | toolgate could not do what was asked (bad config, bad request, unreadable input; the reason is on stderr) | could not evaluate: treat as a denial | could not run the fixtures (a bad fixture or config) |
//! | `2` | — | a hook *decided* the call may not go ahead on its own (deny, or ask: a person must confirm) | — |
//! | `3` | — | the call is blocked because a hook *failed* (trap, timeout, crash, an answer that is not one, a hook toolgate would not run): fail closed | — |
//! | `100` | — | — | one or more fixtures failed (cargo-nextest's code) |
//! | `64` | usage error (sysexits `EX_USAGE`; clap's own 2 is overridden) | | |
//!
//! `--help` and `--version` exit 0. The agent commands (`toolgate
//! claude-code`, `toolgate codex`, …) keep their agents' conventions
//! instead, a usage error included: 0 with the answer on stdout, else the
//! agent's way of blocking (exit 2 for Claude Code and Codex); see `agent.rs`.

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
mod dev;
mod doctor;
pub(crate) mod env;
mod hooks;
mod import;
mod install;
mod log;
mod mcp;
mod new;
mod push;
mod replay;
mod serve;
mod test;
mod trust;

use toolgate_hook::{client, hook_process};

pub(crate) use env::{MAX_STDIN, read_stdin, workspace};

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Exit code: toolgate could not evaluate.
pub(crate) const EXIT_ERROR: u8 = 1;
/// Exit code: the call is denied (the agent commands' block too).
pub(crate) use hook_process::EXIT_DENIED;
/// Exit code of `test`: one or more fixtures failed.
pub(crate) const EXIT_TESTS_FAILED: u8 = 100;
/// Exit code: the command line is wrong (sysexits `EX_USAGE`).
pub(crate) const EXIT_USAGE: u8 = 64;

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
        Set TOOLGATE_LOG=debug to see what the chain does on stderr.\n\
        Set TOOLGATE_DECISION_LOG=/abs/path to keep every call's decision and\n\
        the hooks' stderr there; `toolgate log` shows them.\n\n\
        Exit codes:\n  \
        0    success; check: the call may proceed\n  \
        1    toolgate could not do what was asked (check: treat as a denial)\n  \
        2    check: a hook denied the call\n  \
        3    check: blocked because a hook failed (fail closed)\n  \
        100  test: a fixture failed\n  \
        64   usage error\n\
        The agent commands (claude-code, codex, ...) keep their agents' conventions."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    Check(check::Args),
    Test(test::Args),
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
    Dev(dev::Args),
    Replay(replay::Args),
    Log(log::Args),
    Trust(trust::Args),
    Serve(serve::Args),
    Mcp(mcp::Args),
    Push(push::Args),
}

pub(crate) fn main() -> ExitCode {
    init_tracing();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(&e),
    };
    let result = match cli.command {
        Command::Check(args) => check::run(args),
        Command::Test(args) => test::run(args),
        Command::Hooks(args) => hooks::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Import(args) => import::run(args),
        Command::Install(args) => install::install(args),
        Command::Uninstall(args) => install::uninstall(args),
        Command::Doctor(args) => doctor::run(args),
        Command::New(args) => new::run(args),
        Command::Dev(args) => dev::run(args),
        Command::Replay(args) => replay::run(args),
        Command::Log(args) => log::run(args),
        Command::Trust(args) => trust::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Mcp(args) => mcp::run(args),
        Command::Push(args) => push::run(args),
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

/// clap's error (or `--help`, `--version`) printed, and its exit code:
/// 64 for a usage error instead of clap's 2, which `check` uses for "denied".
/// An agent command keeps 2: to Claude Code and Codex it blocks the call,
/// where 64 would be a non-blocking error that lets the call through.
fn usage_error(e: &clap::Error) -> ExitCode {
    let _ = e.print();
    if e.exit_code() == 0 {
        return ExitCode::SUCCESS;
    }
    let agent = std::env::args()
        .nth(1)
        .is_some_and(|name| name.parse::<toolgate::agent::Outward>().is_ok());
    if agent {
        ExitCode::from(EXIT_DENIED)
    } else {
        ExitCode::from(EXIT_USAGE)
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
