//! `toolgate mcp`: the MCP proxy (the toolgate-mcp crate) started for
//! one server. What the proxy does and why is that crate's documentation;
//! here are the command line and the chain it judges with.
//!
//! The chain is loaded once, at start: a proxy lives as long as its
//! client's session, and a config that is broken when it starts refuses
//! to start (the client then shows the server as failed, so no tool of it
//! runs unjudged) rather than proxying with a chain that is not the one
//! configured.

use anyhow::Context as _;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use toolgate::HookRunner;
use toolgate_mcp::{DEFAULT_MAX_MESSAGE, Proxy};

/// Proxy one MCP server, taking every tool call through the chain.
///
/// Put it where the client starts the server: the client speaks MCP on
/// this command's stdin and stdout, and the server's command follows
/// `--`. Each `tools/call` is judged as a `pre_tool_use` of
/// `mcp__<NAME>__<tool>` (Claude Code's names, so its matchers apply);
/// a denied call is answered with an error result carrying the reason, and
/// never reaches the server. Each result is judged as a `post_tool_use`.
/// Every other message passes through unchanged.
#[derive(clap::Args)]
#[command(after_help = "Examples:\n  \
    toolgate mcp --name everything -- npx -y @modelcontextprotocol/server-everything\n  \
    toolgate mcp --name fs -- npx -y @modelcontextprotocol/server-filesystem ~/src\n\n\
    In a client's config, in place of the server's own command:\n  \
    \"command\": \"toolgate\",\n  \
    \"args\": [\"mcp\", \"--name\", \"fs\", \"--\", \"npx\", \"-y\", \"@modelcontextprotocol/server-filesystem\", \"/home/me/src\"]")]
pub(crate) struct Args {
    /// The server's name, as in `mcp__<NAME>__<tool>` (ASCII letters,
    /// digits, `_`, `-`): use the name the client gives the server, so the
    /// tool names hooks see are the ones the agent shows.
    #[arg(long, value_name = "NAME")]
    name: String,
    /// The workspace whose .toolgate/hooks.json applies [default: the
    /// nearest ancestor of the working directory with a .toolgate/].
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// The largest message either side may send, in bytes; a longer one is
    /// refused (and a result that long is withheld).
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_MESSAGE)]
    max_message: usize,
    /// The server's command and its arguments (after `--`, or after the
    /// options: everything from the first word that is not an option of
    /// `toolgate mcp` belongs to the server).
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        required = true,
        value_name = "COMMAND"
    )]
    command: Vec<OsString>,
}

pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let workspace = super::workspace(args.workspace)?;
    let config = super::env::load(&workspace.root, false)
        .context("the MCP proxy does not start with a broken config")?;
    let runner = HookRunner::builder()
        .config(config)
        .session_store(super::env::session_store())
        .build();
    let proxy = Proxy::new(args.name, runner)?.max_message(args.max_message);
    let runtime = super::runtime()?;
    let code = runtime.block_on(proxy.run_stdio(&args.command));
    // The read of stdin may still be blocked in a thread of the runtime's
    // (the client stopped this proxy by signal, not by closing stdin): it
    // is not waited for.
    runtime.shutdown_background();
    let code = code?;
    Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
}
