//! `toolgate check`: evaluate one tool call.
//!
//! Reads one wire-v1 request on stdin, runs the chain for the workspace plus
//! the global config, prints one JSON object on stdout, and says with its exit
//! code whether the call may proceed. `schema` and `hook` are optional in the
//! request, `event` defaults to `pre_tool_use`; `--event` and `--tool`
//! override its fields.
//!
//! A call blocked because a hook failed exits 3, not 2: a crashing guard
//! must never look like one that decided to deny (fail closed still blocks
//! it). The server computes the same code in `toolgate_server::answer`,
//! so a running `toolgate serve` answers alike.
//!
//! A pre-call `replace` has already been through the post chain when it is
//! printed: the tool will not run, so its replacement must be what output
//! guards see and what the model is shown. A harness must not make a separate
//! post call for it.

use super::runtime;
use anyhow::Context;
use std::path::PathBuf;
use std::process::ExitCode;
use toolgate::observe::{Ending, Observed, Observer as _};
use toolgate::{HookRunner, wire};

/// Evaluate one tool call read from stdin; print the decision as JSON.
///
/// Exit code 0: the call may proceed (allow, modify, replace). 2: a hook
/// denied it, or asked for a person's confirmation. 3: blocked because a
/// hook failed (trap, timeout, crash, not an answer, not trusted). 1: toolgate could not evaluate (bad config, bad
/// request); the reason is on stderr, and a caller must treat it as a
/// denial. 64: usage error.
#[derive(clap::Args)]
#[command(after_help = "Examples:\n  \
    toolgate check --workspace examples/demo < examples/demo/force-push.json\n  \
    toolgate check --event pre_tool_use --tool shell <<'EOF'\n\
{\"input\": {\"command\": \"git push --force\"}}\n\
EOF\n\n\
    Output, one JSON object:\n  \
    decision    allow | deny | modify | replace | ask\n  \
    reason      deny: why, for the model; ask: why a person must confirm\n  \
    input       modify: the final input; ask: the input to confirm, if rewritten\n  \
    result      replace: what the model is shown (post deny: the failure shown)\n  \
    context     advisory text for the model\n  \
    decided_by  the hook whose answer decided\n  \
    shadow      what the first shadow hook that would have changed it would have\n  \
                done: {\"would\": deny | ask | replace | modify, \"by\": its name}\n  \
    runs        one record per hook that ran\n\n\
    Exit codes: 0 the call may proceed; 2 a hook denied it or asked for a person;\n  \
    3 blocked because a hook failed (fail closed); 1 could not evaluate (treat\n  \
    as a denial); 64 usage.")]
pub(crate) struct Args {
    /// The workspace whose .toolgate/hooks.json applies [default: the
    /// nearest ancestor of the working directory with a .toolgate/].
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// The event, overriding the request's `event` (pre_tool_use | post_tool_use)
    /// [default: the request's, else pre_tool_use].
    #[arg(long, value_name = "E")]
    event: Option<String>,
    /// The tool name, overriding the request's `tool`.
    #[arg(long, value_name = "T")]
    tool: Option<String>,
}

pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let workspace = super::workspace(args.workspace)?;
    let bytes = super::read_stdin(
        "the request",
        "toolgate check < examples/demo/force-push.json",
    )?;
    let request = wire::read_request(&bytes, args.event.as_deref(), args.tool.as_deref())
        .context("the request on stdin")?;
    // A running server answers the same way, with its hooks already loaded.
    let ask = super::client::Ask::check(&workspace.root, &bytes, args.event, args.tool);
    if let Some(reply) = super::client::ask(&ask) {
        let (stdout, code) = reply.into_check_answer()?;
        if let Some(json) = stdout {
            outln!("{json}");
        }
        return Ok(ExitCode::from(code));
    }
    // Not asked of a server, so logged here (a server that answers logs).
    let log = super::env::decision_log()
        .map(|path| toolgate_log::Logging::new(path, "check", false, &workspace.root));
    let started = std::time::Instant::now();
    let config = super::env::load_for(&workspace.root, &request).inspect_err(|e| {
        log.observe(&Observed {
            request: Some(&request),
            ending: Ending::Refused {
                error: &toolgate::text::error_chain(e),
            },
            took: started.elapsed(),
        });
    })?;
    let mut runner = HookRunner::builder()
        .config(config)
        .session_store(super::env::session_store());
    if let Some(log) = log {
        runner = runner.observer(std::sync::Arc::new(log));
    }
    let outcome = runtime()?.block_on(runner.build().evaluate(&request));
    outln!("{}", wire::outcome_json(&outcome));
    Ok(ExitCode::from(toolgate_hook::hook_process::check_exit(
        &outcome,
    )))
}
