//! `toolgate import claude-code <settings.json>`: carry Claude Code hooks over.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Import hooks from another tool's configuration.
#[derive(clap::Args)]
pub(crate) struct Args {
    #[command(subcommand)]
    from: From,
}

#[derive(clap::Subcommand)]
enum From {
    /// Write the hooks.json equivalent to a Claude Code settings file, and list
    /// everything that could not be carried over.
    #[command(after_help = "Examples:\n  \
        # write .toolgate/hooks.json beside the project's .claude/:\n  \
        toolgate import claude-code .claude/settings.json\n  \
        # print instead of writing:\n  \
        toolgate import claude-code ~/.claude/settings.json -o -")]
    ClaudeCode {
        /// The settings file (.claude/settings.json, ~/.claude/settings.json, …).
        settings: PathBuf,
        /// Where to write hooks.json (`-` for stdout). Default: .toolgate/hooks.json
        /// in the project that holds the settings' .claude folder, else the current directory.
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
        /// Overwrite an existing file.
        #[arg(long)]
        force: bool,
    },
}

pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let From::ClaudeCode {
        settings,
        output,
        force,
    } = args.from;
    let text = std::fs::read_to_string(&settings)
        .map_err(|e| anyhow::anyhow!("{}: cannot read: {e}", settings.display()))?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| anyhow::anyhow!("{}: not valid JSON: {e}", settings.display()))?;
    let imported = toolgate::agent::import_settings(&value);
    let rendered = imported.to_pretty_json();
    let output = output.unwrap_or_else(|| default_output(&settings));
    let count = imported.hooks_json["hooks"].as_array().map_or(0, Vec::len);
    if output == Path::new("-") {
        print!("{rendered}");
    } else {
        if output.exists() && !force {
            anyhow::bail!(
                "{} exists; pass --force to overwrite it, or -o - to print",
                output.display()
            );
        }
        super::write_file(&output, &rendered, false)?;
        eprintln!("wrote {count} hook(s) to {}", output.display());
        if let Some(ws) = output.parent().and_then(std::path::Path::parent) {
            let ws = if ws.as_os_str().is_empty() {
                std::path::Path::new(".")
            } else {
                ws
            };
            eprintln!(
                "next: review and trust its command hooks (they do not run until you do): \
                 toolgate trust --workspace {}",
                ws.display()
            );
        }
    }
    for w in &imported.warnings {
        eprintln!("warning: {w}");
    }
    if imported.not_carried.is_empty() {
        eprintln!("everything was carried over");
    } else {
        eprintln!("not carried over:");
        for n in &imported.not_carried {
            eprintln!("  - {n}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn default_output(settings: &Path) -> PathBuf {
    let project = settings
        .parent()
        .filter(|d| d.file_name().is_some_and(|n| n == ".claude"))
        .and_then(Path::parent)
        .unwrap_or(Path::new("."));
    project.join(toolgate::config::WORKSPACE_FILE)
}
