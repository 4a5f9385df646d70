//! `toolgate import <agent> <settings>`: carry an agent's hooks over. What
//! each agent's settings mean is its dialect's (`Outward::import`); this
//! file only reads, writes and reports.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use toolgate::agent::AgentHook as _;
use toolgate::agent::{Import, Outward as Dialect};

/// Import an agent's hook settings into hooks.json
///
/// Writes the hooks.json equivalent to the agent's settings file, and lists
/// everything that could not be carried over.
#[derive(clap::Args)]
#[command(after_help = "Examples:\n  \
    # write .toolgate/hooks.json beside the project's .claude/:\n  \
    toolgate import claude-code .claude/settings.json\n  \
    # print instead of writing:\n  \
    toolgate import claude-code ~/.claude/settings.json -o -")]
pub(crate) struct Args {
    /// The agent whose settings these are.
    #[arg(value_name = "AGENT", value_parser = agent_names())]
    agent: String,
    /// The settings file (.claude/settings.json, ~/.claude/settings.json, …).
    settings: PathBuf,
    /// Where to write hooks.json (`-` for stdout). Default: .toolgate/hooks.json
    /// in the project that holds the settings file, else the current directory.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Overwrite an existing file.
    #[arg(long)]
    force: bool,
}

/// Every agent's name, for `AGENT`.
pub(crate) fn agent_names() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(Dialect::ALL.iter().map(|d| d.name()))
}

pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let Args {
        agent,
        settings,
        output,
        force,
    } = args;
    let dialect: Dialect = agent
        .parse()
        .map_err(|_| anyhow::anyhow!("unknown agent {agent:?}"))?;
    let read = match dialect.import() {
        Import::Settings(read) => read,
        Import::Unsupported(why) => anyhow::bail!("{why}"),
    };
    let text = std::fs::read_to_string(&settings)
        .map_err(|e| anyhow::anyhow!("{}: cannot read: {e}", settings.display()))?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| anyhow::anyhow!("{}: not valid JSON: {e}", settings.display()))?;
    let imported = read(&value);
    let rendered = imported.to_pretty_json();
    let output = output.unwrap_or_else(|| default_output(&settings, dialect));
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

/// hooks.json in the project whose settings file `settings` is (the folder
/// holding the agent's project settings path, `.claude/settings.json`), else
/// in the current directory.
fn default_output(settings: &Path, dialect: Dialect) -> PathBuf {
    let project_file = Path::new(dialect.install().project_file);
    let depth = project_file.components().count();
    let project = settings
        .ancestors()
        .nth(depth)
        .filter(|_| settings.ends_with(project_file))
        .unwrap_or(Path::new("."));
    project.join(toolgate::config::WORKSPACE_FILE)
}
