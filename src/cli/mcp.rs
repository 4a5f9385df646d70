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
use toolgate_mcp::pins::{PinStore, Pins, Review};
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
///
/// For a server reached by URL, `--upstream URL` listens on loopback
/// instead (Streamable HTTP) and the client connects there.
#[derive(clap::Args)]
#[command(
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    after_help = "Examples:\n  \
    toolgate mcp --name everything -- npx -y @modelcontextprotocol/server-everything\n  \
    toolgate mcp --name fs -- npx -y @modelcontextprotocol/server-filesystem ~/src\n  \
    toolgate mcp --name remote --upstream https://mcp.example.com/mcp --listen 127.0.0.1:8788\n\n\
    In a client's config, in place of the server's own command:\n  \
    \"command\": \"toolgate\",\n  \
    \"args\": [\"mcp\", \"--name\", \"fs\", \"--\", \"npx\", \"-y\", \"@modelcontextprotocol/server-filesystem\", \"/home/me/src\"]\n\n\
    The client is shown only the tools you approved: review them first with\n  \
    toolgate mcp trust --name fs -- npx -y @modelcontextprotocol/server-filesystem ~/src"
)]
pub(crate) struct Args {
    #[command(subcommand)]
    action: Option<Action>,
    /// The server's name, as in `mcp__<NAME>__<tool>` (ASCII letters,
    /// digits, `_`, `-`): use the name the client gives the server, so the
    /// tool names hooks see are the ones the agent shows.
    #[arg(long, value_name = "NAME", required = true)]
    name: Option<String>,
    /// The workspace whose .toolgate/hooks.json applies [default: the
    /// nearest ancestor of the working directory with a .toolgate/].
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// The largest message either side may send, in bytes; a longer one is
    /// refused (and a result that long is withheld).
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_MESSAGE)]
    max_message: usize,
    /// Proxy the MCP server at this http(s) URL (Streamable HTTP) instead
    /// of starting one: the client connects to the proxy's own loopback
    /// URL (`--listen`), with the secret of `toolgate serve --http`.
    #[arg(long, value_name = "URL", conflicts_with = "command")]
    upstream: Option<String>,
    /// With --upstream: a header the server is given on every request,
    /// `Name: value` (repeatable), for a server that wants a key or a
    /// token. `${VAR}` in it is replaced by that environment variable
    /// (quote it so the shell leaves it: the secret then never sits in
    /// the process's arguments). Only over https://, or to loopback.
    #[arg(long, value_name = "HEADER", requires = "upstream")]
    upstream_header: Vec<String>,
    /// With --upstream: the loopback address to listen on, an IP literal
    /// with a port; port 0 picks a free one (printed on stderr).
    #[arg(
        long,
        value_name = "ADDR",
        default_value = "127.0.0.1:0",
        requires = "upstream"
    )]
    listen: String,
    /// The server's command and its arguments (after `--`, or after the
    /// options: everything from the first word that is not an option of
    /// `toolgate mcp` belongs to the server).
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        required_unless_present = "upstream",
        value_name = "COMMAND"
    )]
    command: Vec<OsString>,
}

/// Where the server is: started by a command, or at a URL (with the
/// headers it is given, as written on the command line).
enum Server<'a> {
    Command(&'a [OsString]),
    Url(&'a str, &'a [String]),
}

impl<'a> Server<'a> {
    fn of(upstream: Option<&'a str>, headers: &'a [String], command: &'a [OsString]) -> Self {
        upstream.map_or(Server::Command(command), |url| Server::Url(url, headers))
    }
}

/// The server at `url`, given `headers` with each `${VAR}` replaced.
fn upstream(url: &str, headers: &[String]) -> anyhow::Result<toolgate_mcp::Upstream> {
    let expanded = headers
        .iter()
        .enumerate()
        .map(|(at, header)| expand(header, at + 1))
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(toolgate_mcp::Upstream::new(url, &expanded)?)
}

/// `${NAME}` in the `at`th `--upstream-header`, replaced by the variable
/// `NAME`; a `$` not followed by `{` is kept. A variable that is not set,
/// or is empty, is an error (a server given `Bearer ` and nothing would
/// answer 401 with no word on why), as is `${` left open. The message
/// names the variable, never a value.
fn expand(template: &str, at: usize) -> anyhow::Result<String> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .with_context(|| format!("--upstream-header #{at}: `${{` without its `}}`"))?;
        let named_by_user = &after[..end];
        if named_by_user.is_empty()
            || !named_by_user
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_')
        {
            anyhow::bail!(
                "--upstream-header #{at}: `${{…}}` holds a variable's name (letters, digits, `_`)"
            );
        }
        // The user names this variable on the command line: it is not one
        // toolgate reads of its own (see docs/environment.md).
        let value = std::env::var(named_by_user).unwrap_or_default();
        if value.is_empty() {
            anyhow::bail!("--upstream-header #{at}: {named_by_user} is not set, or is empty");
        }
        out.push_str(&value);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

impl Server<'_> {
    /// The words after `--name N` that name this server again.
    fn words(&self) -> String {
        match self {
            Server::Command(command) => {
                let words: Vec<String> = command
                    .iter()
                    .map(|w| {
                        let w = w.to_string_lossy();
                        if w.bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b"-_./@=:+,".contains(&b))
                            && !w.is_empty()
                        {
                            w.into_owned()
                        } else {
                            format!("'{}'", w.replace('\'', "'\\''"))
                        }
                    })
                    .collect();
                format!("-- {}", words.join(" "))
            }
            Server::Url(url, headers) => {
                let quote = |w: &str| format!("'{}'", w.replace('\'', "'\\''"));
                // The URL masked as the headers are: this line reaches the
                // model too, and a URL often carries a key.
                let mut words = format!("--upstream {}", quote(&toolgate_mcp::masked_url(url)));
                for header in *headers {
                    // A header written with `${VAR}` is shown as written;
                    // one holding its value is not (this line may reach
                    // the model, in the message about a changed tool).
                    let shown = match header.split_once(':') {
                        Some(_) if header.contains("${") => header.clone(),
                        Some((name, _)) => format!("{name}: <value>"),
                        None => "<header>".to_owned(),
                    };
                    words.push_str(&format!(" --upstream-header {}", quote(&shown)));
                }
                words
            }
        }
    }
}

#[derive(clap::Subcommand)]
enum Action {
    /// Review a server's tool definitions and approve exactly them.
    ///
    /// Starts the server as the proxy would, asks it for its tools, and
    /// shows each one new, changed or removed since the last approval
    /// (name, description, schemas, annotations). Once approved, the proxy
    /// shows the client only tools whose definition is exactly the approved
    /// one, and refuses a call to any other: a server that changes a
    /// description after you approved it is caught.
    #[command(after_help = "Examples:\n  \
        toolgate mcp trust --name fs -- npx -y @modelcontextprotocol/server-filesystem ~/src\n  \
        toolgate mcp trust --name fs --yes blake3:<digest shown> -- npx -y ...\n\n\
        Approvals are kept in $XDG_STATE_HOME/toolgate/mcp (else\n\
        ~/.local/state/toolgate/mcp), 0700, one file per server name.")]
    Trust {
        /// The server's name, as given to `toolgate mcp --name`.
        #[arg(long, value_name = "NAME")]
        name: String,
        /// Approve without asking, only if DIGEST (as printed by a review)
        /// is the digest of what the server lists now.
        #[arg(long, value_name = "DIGEST")]
        yes: Option<String>,
        /// The server's URL, as given to `toolgate mcp --upstream`.
        #[arg(long, value_name = "URL", conflicts_with = "command")]
        upstream: Option<String>,
        /// With --upstream: a header the server is given, as given to
        /// `toolgate mcp --upstream-header` (repeatable; `${VAR}` is
        /// replaced by that environment variable).
        #[arg(long, value_name = "HEADER", requires = "upstream")]
        upstream_header: Vec<String>,
        /// The server's command and its arguments, as given to `toolgate mcp`.
        #[arg(
            trailing_var_arg = true,
            allow_hyphen_values = true,
            required_unless_present = "upstream",
            value_name = "COMMAND"
        )]
        command: Vec<OsString>,
    },
    /// Forget a server's approval: none of its tools is shown until it is
    /// reviewed again.
    Revoke {
        /// The server's name.
        #[arg(long, value_name = "NAME")]
        name: String,
    },
}

pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.action {
        Some(Action::Trust {
            name,
            yes,
            upstream,
            upstream_header,
            command,
        }) => {
            let server = Server::of(upstream.as_deref(), &upstream_header, &command);
            trust(&name, yes, &server)
        }
        Some(Action::Revoke { name }) => {
            let forgot = pin_store()?.forget(&checked(&name)?)?;
            outln!(
                "{}",
                if forgot {
                    format!("revoked: no tool of `{name}` is shown until it is reviewed again")
                } else {
                    format!("`{name}` had no approval; nothing changed")
                }
            );
            Ok(ExitCode::SUCCESS)
        }
        None => proxy(args),
    }
}

fn pin_store() -> anyhow::Result<PinStore> {
    toolgate_hook::env::mcp_pins_dir()
        .map(PinStore::new)
        .context("no state directory to keep MCP approvals in: set XDG_STATE_HOME or HOME")
}

/// The server name, checked as the proxy checks it (it names a file).
fn checked(name: &str) -> anyhow::Result<String> {
    let runner = HookRunner::builder().build();
    Proxy::new(name, runner)?;
    Ok(name.to_owned())
}

/// The command that reviews this server (and approves `digest`), for
/// messages.
fn review_command(name: &str, server: &Server<'_>, digest: Option<&str>) -> String {
    let yes = digest.map_or_else(String::new, |d| format!(" --yes {d}"));
    format!("toolgate mcp trust --name {name}{yes} {}", server.words())
}

fn trust(name: &str, yes: Option<String>, server: &Server<'_>) -> anyhow::Result<ExitCode> {
    use std::io::IsTerminal;
    let name = checked(name)?;
    let store = pin_store()?;
    let kept = store.load(&name)?;
    let runtime = super::runtime()?;
    let listed = match server {
        Server::Command(command) => {
            runtime.block_on(toolgate_mcp::list_tools(command, DEFAULT_MAX_MESSAGE))
        }
        Server::Url(url, headers) => {
            let at = upstream(url, headers)?;
            runtime.block_on(toolgate_mcp::list_tools_http(&at, DEFAULT_MAX_MESSAGE))
        }
    };
    runtime.shutdown_background();
    let now = Pins::of_listed(&listed?).with_runs(server.words());
    let review = kept.clone().unwrap_or_default().review(&now);
    print_review(&name, &review, kept.is_some());
    let digest = now.digest();
    outln!("digest: {digest}");
    if kept.is_some() && review.is_empty() {
        outln!("already approved: nothing changed since");
        return Ok(ExitCode::SUCCESS);
    }
    match yes {
        Some(given) if given == digest => {}
        Some(given) => anyhow::bail!(
            "nothing recorded: {given} is not the digest of what `{name}` lists now ({digest}); \
             review again"
        ),
        None if std::io::stdin().is_terminal() => {
            eprint!("Approve these tool definitions of `{name}`? [y/N] ");
            let mut line = String::new();
            std::io::stdin().read_line(&mut line)?;
            if !matches!(line.trim(), "y" | "Y" | "yes" | "YES" | "Yes") {
                outln!("not approved; nothing recorded");
                return Ok(ExitCode::from(super::EXIT_ERROR));
            }
        }
        None => anyhow::bail!(
            "nothing recorded: stdin is not a terminal, so toolgate cannot ask. After reviewing \
             the above, run: {}",
            review_command(&name, server, Some(&digest))
        ),
    }
    let path = store.save(&name, &now)?;
    outln!(
        "approved: {} tool(s) of `{name}` (recorded in {})",
        review.added.len() + review.changed.len() + review.unchanged.len(),
        path.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// The fields of a definition a review shows (its name heads it).
const FIELDS: [&str; 5] = [
    "title",
    "description",
    "inputSchema",
    "outputSchema",
    "annotations",
];

/// What a server wrote, shown as data (`toolgate::text::quoted`): a string
/// in quotes, anything else as its JSON, on one line, with every line
/// break, control and invisible code point escaped, so that nothing a
/// server wrote can pass for the review's own lines, and nothing it hid is
/// shown as nothing. Adds the invisible code points it held to `hidden`.
fn shown(value: &serde_json::Value, hidden: &mut usize) -> String {
    let (text, count) = match value {
        serde_json::Value::String(text) => toolgate::text::quoted(text),
        other => toolgate::text::visible_json(&other.to_string()),
    };
    *hidden += count;
    text
}

fn print_review(name: &str, review: &Review, approved_before: bool) {
    if review.is_empty() {
        outln!("`{name}`: {} tool(s), as approved", review.unchanged.len());
        return;
    }
    outln!(
        "`{name}`: {} new, {} changed, {} removed, {} unchanged",
        review.added.len(),
        review.changed.len(),
        review.removed.len(),
        review.unchanged.len()
    );
    let mut hidden = 0;
    let tool_name = |tool: &str, hidden: &mut usize| shown(&tool.into(), hidden);
    for (tool, definition) in &review.added {
        outln!("+ tool {}", tool_name(tool, &mut hidden));
        for field in FIELDS {
            if let Some(value) = definition.get(field) {
                outln!("    {field}: {}", shown(value, &mut hidden));
            }
        }
    }
    for (tool, old, new) in &review.changed {
        outln!("~ tool {}", tool_name(tool, &mut hidden));
        for field in FIELDS {
            if old.get(field) != new.get(field) {
                let mut said = |value: Option<&serde_json::Value>| {
                    value.map_or("(none)".into(), |v| shown(v, &mut hidden))
                };
                outln!("    {field} was: {}", said(old.get(field)));
                outln!("    {field} now: {}", said(new.get(field)));
            }
        }
    }
    for tool in &review.removed {
        outln!("- tool {}", tool_name(tool, &mut hidden));
    }
    if let Some((was, now)) = &review.runs {
        // toolgate's own record of the command, not the server's text:
        // quoted all the same (it may carry a name the user typed).
        let said = |runs: &Option<String>| match (runs.as_deref(), approved_before) {
            (Some(r), _) => toolgate::text::quoted(r).0,
            (None, true) => "(not recorded: approved by an earlier toolgate)".into(),
            (None, false) => "(none: never approved)".into(),
        };
        outln!("~ what runs the server (an approval holds for this command or URL only)");
        outln!("    was: {}", said(was));
        outln!("    now: {}", said(now));
    }
    if let Some((was, now)) = &review.instructions {
        // What the model is told by the server on connecting (clients put
        // it in the prompt): shown whole, as a description is.
        let mut said = |text: &Option<String>| {
            text.as_deref()
                .map_or("(none)".into(), |t| shown(&t.into(), &mut hidden))
        };
        outln!("~ the server's instructions (clients put them in the model's prompt)");
        outln!("    was: {}", said(was));
        outln!("    now: {}", said(now));
    }
    if hidden > 0 {
        // Counted over what the review shows (a changed field's old and new
        // text both), so a rug pull that only appends such characters is
        // both seen and said.
        outln!(
            "! {hidden} invisible or format character(s) in what `{name}` wrote above, shown as \\u{{…}}: \
             a person does not see them, a model reads them. toolgate strips them from what the \
             client is shown (docs/mcp.md)"
        );
    }
}

fn proxy(args: Args) -> anyhow::Result<ExitCode> {
    let name = args.name.context("--name is required")?;
    let workspace = super::workspace(args.workspace)?;
    let config = super::env::load(&workspace.root, false)
        .context("the MCP proxy does not start with a broken config")?;
    // One proxy is one client session for its whole life, so hooks'
    // session state lives in its memory, as in `toolgate serve`.
    let mut runner = HookRunner::builder()
        .config(config)
        .session_store(std::sync::Arc::new(toolgate::sessions::MemoryStore::new()));
    // Not a server's call: logged by the proxy itself, as a one-shot agent
    // command logs (`served` false), and counted by a running server's
    // metrics when one takes the tally.
    if let Some(log) = super::env::decision_log() {
        let log = toolgate_log::Logging::new(log, "mcp", false, &workspace.root);
        runner = runner.observer(std::sync::Arc::new(log));
    }
    if let Some(tally) = toolgate_hook::client::TallyToServer::start() {
        runner = runner.observer(std::sync::Arc::new(tally));
    }
    let runner = runner.build();
    let pins = pin_store()?.load(&name)?;
    let server = Server::of(
        args.upstream.as_deref(),
        &args.upstream_header,
        &args.command,
    );
    let review = review_command(&name, &server, None);
    // An approval is of the server it was given for: another program
    // started under an approved name is a server never reviewed.
    let runs = server.words();
    let pins = match pins {
        Some(pins) if pins.runs() == Some(runs.as_str()) => Some(pins),
        Some(pins) => {
            eprintln!(
                "toolgate mcp: the approval of `{name}` was made for {}, not for {}: its tools \
                 are withheld until reviewed with: {review}",
                pins.runs().map_or_else(
                    || "a server an earlier toolgate did not record".to_owned(),
                    |r| toolgate::text::quoted(r).0
                ),
                toolgate::text::quoted(&runs).0,
            );
            None
        }
        None => None,
    };
    let proxy = Proxy::new(name, runner)?
        .max_message(args.max_message)
        .approved(pins, review);
    let runtime = super::runtime()?;
    let code = match server {
        Server::Command(command) => runtime.block_on(proxy.run_stdio(command)),
        Server::Url(url, headers) => {
            let upstream = upstream(url, headers)?;
            let listen = toolgate_loopback::parse_loopback("--listen", &args.listen)?;
            let token = toolgate_loopback::token_path()
                .context("no state directory for the HTTP secret: set XDG_STATE_HOME or HOME")
                .and_then(|path| toolgate_loopback::Token::load_or_create(&path))?;
            runtime.block_on(proxy.run_http(upstream, listen, token))
        }
    };
    // The read of stdin may still be blocked in a thread of the runtime's
    // (the client stopped this proxy by signal, not by closing stdin): it
    // is not waited for.
    runtime.shutdown_background();
    let code = code?;
    Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_review_command_shows_a_headers_variable_and_never_its_value() {
        let headers = [
            "Authorization: Bearer ${TOKEN}".to_owned(),
            "X-Api-Key: s3cret".to_owned(),
        ];
        let words = Server::Url("https://h/mcp", &headers).words();
        assert_eq!(
            words,
            "--upstream 'https://h/mcp' --upstream-header 'Authorization: Bearer ${TOKEN}' \
             --upstream-header 'X-Api-Key: <value>'"
        );
    }

    #[test]
    fn a_headers_variables_are_replaced_and_a_lone_dollar_is_kept() {
        // SAFETY: no other test of this binary reads or writes these.
        #[allow(unsafe_code)]
        unsafe {
            std::env::set_var("TOOLGATE_TEST_HEADER_A", "one");
        }
        assert_eq!(
            expand("$5 ${TOOLGATE_TEST_HEADER_A}-${TOOLGATE_TEST_HEADER_A}", 1).unwrap(),
            "$5 one-one"
        );
        let why = expand("${TOOLGATE_TEST_HEADER_UNSET}", 2)
            .unwrap_err()
            .to_string();
        assert!(
            why.contains("#2: TOOLGATE_TEST_HEADER_UNSET is not set"),
            "{why}"
        );
        let why = expand("${not a name}", 1).unwrap_err().to_string();
        assert!(why.contains("holds a variable's name"), "{why}");
    }
}
