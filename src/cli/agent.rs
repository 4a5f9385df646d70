//! `toolgate claude-code` and `toolgate codex`: be the agent's hook.
//!
//! One settings entry hands every tool call to toolgate, which runs the whole
//! ordered chain (global + workspace hooks; argv, Claude Code-style and wasm)
//! and answers in the agent's own format. The workspace is
//! `$CLAUDE_PROJECT_DIR` (Claude Code sets it), else the call's `cwd`.
//!
//! Anything toolgate itself cannot do — unreadable input, a broken config —
//! is exit 2 with the reason on stderr: the agent blocks the call. Never a
//! silent pass. Events toolgate has no part in (`UserPromptSubmit`, `Stop`, …)
//! exit 0 with nothing printed.

use super::runtime;
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;
use toolgate::claude::{Dialect, read_agent_input, render_outcome};
use toolgate::{Config, HookRunner};

/// Run as a Claude Code (or Codex) hook: read its stdin, run the chain, answer
/// in its format.
///
/// Exit 0 with the decision as JSON on stdout; exit 2 (the call is blocked)
/// with the reason on stderr when toolgate cannot evaluate.
#[derive(clap::Args)]
#[command(after_help = "Install it in .claude/settings.json:\n  \
    {\"hooks\": {\n    \
      \"PreToolUse\":  [{\"matcher\": \"*\", \"hooks\": [{\"type\": \"command\", \"command\": \"toolgate claude-code\"}]}],\n    \
      \"PostToolUse\": [{\"matcher\": \"*\", \"hooks\": [{\"type\": \"command\", \"command\": \"toolgate claude-code\"}]}]}}\n\n\
    Example:\n  \
    echo '{\"hook_event_name\":\"PreToolUse\",\"tool_name\":\"Bash\",\"tool_input\":{\"command\":\"git push --force\"},\"cwd\":\"examples/demo\"}' \\\n    \
    | toolgate claude-code")]
pub(crate) struct Args {
    /// The workspace, overriding $CLAUDE_PROJECT_DIR and the call's cwd.
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
}

pub(crate) fn run(args: Args, dialect: Dialect) -> ExitCode {
    match evaluate(args, dialect) {
        Ok(Some(json)) => {
            outln!("{json}");
            ExitCode::SUCCESS
        }
        Ok(None) => ExitCode::SUCCESS,
        Err(e) => {
            // Exit 2: the agent blocks the call and shows the model stderr.
            eprintln!("toolgate could not evaluate this call, so it is blocked: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn evaluate(args: Args, dialect: Dialect) -> anyhow::Result<Option<serde_json::Value>> {
    let mut bytes = Vec::new();
    std::io::stdin().take(64 << 20).read_to_end(&mut bytes)?;
    let call = read_agent_input(&bytes)?;
    let Some(request) = call.request else {
        return Ok(None);
    };
    let workspace = args
        .workspace
        .or_else(|| std::env::var_os("CLAUDE_PROJECT_DIR").map(PathBuf::from))
        .or_else(|| call.cwd.map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("."));
    if !workspace.is_dir() {
        anyhow::bail!("workspace {} is not a directory", workspace.display());
    }
    toolgate::wasm::one_shot_process();
    let runner = HookRunner::builder()
        .config(Config::discover(&workspace)?)
        .build();
    let outcome = runtime()?.block_on(runner.evaluate(&request));
    Ok(render_outcome(&outcome, dialect))
}
