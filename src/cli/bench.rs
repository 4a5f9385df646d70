//! `toolgate bench`: flags and printing; the measuring is `toolgate_bench`.

use std::path::PathBuf;

/// Measure per-call cost of every binding, side by side, in one run.
///
/// Rounds interleave all scenarios so the machine's drift hits them alike.
/// Prints a table with medians, p99 and ratios to the wasm reference row,
/// then compile/cache, threading and memory figures, and the performance
/// budget with each target marked met or not.
#[derive(clap::Args)]
#[command(after_help = "Examples:\n  \
    toolgate bench              # a full run, a few minutes\n  \
    toolgate bench --quick      # a smoke run\n  \
    toolgate bench --json > bench.json\n  \
    toolgate bench --lean-client ./toolgate-hook   # another build, same rounds\n  \
    toolgate bench --agent      # inside the real Claude Code, a few minutes\n  \
    toolgate bench --guards     # the standard guards on their corpora\n  \
    toolgate bench --mcp        # what toolgate mcp adds to a tool call\n  \
    toolgate bench --soak 1000000   # a long run of `toolgate serve`, for leaks\n  \
    toolgate bench --load       # 1…128 agents at once against `toolgate serve`\n\n\
    Guests are taken from guest-examples/*/out/*.wasm\n\
    (build them with guest-examples/build-all). Run it from a release build\n\
    (cargo build --release): a debug build's numbers are not the product's.")]
pub(crate) struct Args {
    /// Rounds of interleaved batches.
    #[arg(long, default_value_t = 20)]
    rounds: usize,
    /// A short smoke run (3 rounds, small batches, short throughput windows).
    #[arg(long)]
    quick: bool,
    /// Where to look for built guest examples.
    #[arg(long, value_name = "DIR", default_value = "guest-examples")]
    guests: PathBuf,
    /// Print JSON instead of tables.
    #[arg(long)]
    json: bool,
    /// Also measure this build of the lean client (a static one, say) in
    /// the same rounds as the `toolgate-hook` beside this binary, each
    /// against the same do-nothing C program (repeatable).
    #[arg(long, value_name = "PATH", conflicts_with_all = ["agent", "soak"])]
    lean_client: Vec<PathBuf>,
    /// Measure instead what a hook costs per tool call inside the real
    /// Claude Code (no hook, the HTTP hook, toolgate's mod with and without
    /// the HTTP hooks beside it, the command hook fresh and through the
    /// server, a Python hook), against a mock model API. Its own section:
    /// `--quick` alone leaves it out.
    #[arg(long)]
    agent: bool,
    /// With --agent: this Claude Code (repeatable); default, the pinned
    /// releases installed under tests/agents/.cache.
    #[arg(long, value_name = "PATH", requires = "agent")]
    claude: Vec<PathBuf>,
    /// With --agent: measured calls per configuration and release
    /// (default 60; 10 with --quick).
    #[arg(long, value_name = "N", requires = "agent")]
    agent_calls: Option<usize>,
    /// With --agent: where the pinned agent CLIs are (versions.env, .cache/).
    #[arg(
        long,
        value_name = "DIR",
        default_value = "tests/agents",
        requires = "agent"
    )]
    agents: PathBuf,
    /// With --agent: the `toolgate` the hooks and the server run (another
    /// build's, say); default, this one.
    #[arg(long, value_name = "PATH", requires = "agent")]
    toolgate: Option<PathBuf>,
    /// Measure instead the standard guards on their labeled corpora
    /// (guards/corpus/): recall and precision per threat class, false
    /// positives on benign commands, the mistakes, and the cost per call of
    /// the built-in component against the same rules run natively.
    #[arg(long, conflicts_with_all = ["agent", "soak", "lean_client"])]
    guards: bool,
    /// Measure instead what `toolgate mcp` adds to an MCP tool call, with
    /// a standard guard (a Rust component) before and after each call,
    /// against a direct connection to the same server, calls alternating.
    /// The server is the bench's own Python echo server unless one follows
    /// `--`.
    #[arg(long, conflicts_with_all = ["agent", "soak", "lean_client", "guards"])]
    mcp: bool,
    /// With --mcp: calls measured on each side (default 2000; 200 with
    /// --quick).
    #[arg(long, value_name = "N", requires = "mcp")]
    mcp_calls: Option<usize>,
    /// With --mcp: the tool to call and its arguments (JSON), for a server
    /// given after `--`.
    #[arg(long, value_names = ["TOOL", "JSON"], num_args = 2, requires = "mcp")]
    mcp_call: Option<Vec<String>>,
    /// With --mcp: the standard guard the proxy runs before and after each
    /// call, or `none` for the proxy alone.
    #[arg(
        long,
        value_name = "NAME",
        default_value = "toolgate:paths",
        requires = "mcp"
    )]
    mcp_guard: String,
    /// With --mcp: over Streamable HTTP instead (`toolgate mcp
    /// --upstream` in front of the bench's own HTTP echo server, against a
    /// direct connection to it).
    #[arg(long, requires = "mcp", conflicts_with_all = ["server", "mcp_call"])]
    mcp_http: bool,
    /// With --mcp: the MCP revision the clients speak, a handshake one
    /// (`initialize` first) or the stateless 2026-07-28 (each call names
    /// it, and each result must say `resultType: complete`).
    #[arg(
        long,
        value_name = "REVISION",
        value_enum,
        default_value = "2025-06-18",
        requires = "mcp"
    )]
    mcp_revision: McpRevision,
    /// With --mcp: the server's command.
    #[arg(last = true, value_name = "SERVER", requires = "mcp")]
    server: Vec<String>,
    /// Instead, soak a real `toolgate serve` with N calls of a fixed mix
    /// (every binding, rewrites, denials, failures, timeouts) from several
    /// clients, sampling its memory, descriptors, threads, children and
    /// cache; fails (exit 1) if any grows more than 5 % after warm-up or a
    /// child or descriptor is left. Writes a JSON report and an SVG chart.
    #[arg(long, value_name = "N", conflicts_with = "agent")]
    soak: Option<usize>,
    /// With --soak: concurrent clients.
    #[arg(long, value_name = "N", default_value_t = 4, requires = "soak")]
    clients: usize,
    /// With --soak: calls between samples.
    #[arg(long, value_name = "N", default_value_t = 10_000, requires = "soak")]
    sample_every: usize,
    /// Instead, drive a real `toolgate serve` with many concurrent clients
    /// (each an agent session of its own) over its socket and over HTTP,
    /// every guest example and a subprocess hook in the mix: throughput,
    /// p50/p99/p99.9 per class, errors, fairness (the Rust guest's p99 in
    /// the mix against alone), the server's peak RSS and descriptors.
    /// Writes a JSON report and an SVG chart; exit 1 on any error.
    #[arg(long, conflicts_with_all = ["agent", "soak", "lean_client", "guards", "mcp"])]
    load: bool,
    /// With --load: the levels of concurrent clients.
    #[arg(long, value_name = "N,…", value_delimiter = ',', default_values_t = [1usize, 8, 32, 128], requires = "load")]
    load_clients: Vec<usize>,
    /// With --load: seconds per run (default 3; 1 with --quick).
    #[arg(long, value_name = "SECONDS", requires = "load")]
    load_window: Option<f64>,
    /// With --load: calls a second each client starts in the paced runs,
    /// where the goals are judged (0: closed loop only).
    #[arg(long, value_name = "PER_S", default_value_t = 5.0, requires = "load")]
    load_pace: f64,
    /// With --soak or --load: where the report and the chart go; default,
    /// $XDG_STATE_HOME/toolgate/bench (else ~/.local/state/toolgate/bench).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// With --soak or --load: this process already runs in the scratch
    /// environment under DIR (the bench runs itself so).
    #[arg(long, value_name = "DIR", hide = true)]
    soak_root: Option<PathBuf>,
}

pub(crate) fn run(args: Args) -> anyhow::Result<std::process::ExitCode> {
    if args.agent {
        return run_agent(args);
    }
    if let Some(calls) = args.soak {
        return run_soak(args, calls);
    }
    if args.load {
        return run_load(args);
    }
    if args.mcp {
        let mut options = toolgate_bench::McpOptions::new(std::env::current_exe()?);
        options.server = args.server;
        options.http = args.mcp_http;
        options.revision = match args.mcp_revision {
            McpRevision::Handshake => toolgate_bench::McpRevision::Handshake,
            McpRevision::Stateless => toolgate_bench::McpRevision::Stateless,
        };
        options.guard = (args.mcp_guard != "none").then_some(args.mcp_guard);
        if let Some([tool, arguments]) = args.mcp_call.as_deref() {
            options.tool.clone_from(tool);
            options.arguments = serde_json::from_str(arguments).map_err(|e| {
                anyhow::anyhow!("--mcp-call {tool}: the arguments are not JSON: {e}")
            })?;
        }
        options.calls = args
            .mcp_calls
            .unwrap_or(if args.quick { 200 } else { 2000 });
        if args.quick {
            options.warmup = 20;
        }
        let progress: fn(&str) = if args.json {
            |_| {}
        } else {
            |line| eprintln!("{line}")
        };
        let report = toolgate_bench::run_mcp(&options, progress)?;
        return print(args.json, &report, || report.render());
    }
    if args.guards {
        let mut options = toolgate_bench::GuardsOptions::default();
        if args.quick {
            options = options.quick();
        }
        if !args.json {
            options.progress = |line| eprintln!("{line}");
        }
        let report = toolgate_bench::run_guards(&options)?;
        return print(args.json, &report, || report.render(super::width()));
    }
    let mut options = toolgate_bench::Options::new(std::env::current_exe()?);
    options.rounds = args.rounds;
    options.quick = args.quick;
    options.guests = args.guests;
    for lean in &args.lean_client {
        anyhow::ensure!(
            lean.is_file(),
            "--lean-client {}: no such file",
            lean.display()
        );
    }
    options.lean_clients = args.lean_client;
    if !args.json {
        options.progress = |line| eprintln!("{line}");
    }
    let report = toolgate_bench::run(&options)?;
    print(args.json, &report, || report.render(super::width()))
}

/// `--agent`: the agent section, on its own.
fn run_agent(args: Args) -> anyhow::Result<std::process::ExitCode> {
    let mut options = toolgate_bench::AgentOptions::new(std::env::current_exe()?);
    if args.quick {
        options = options.quick();
    }
    if let Some(calls) = args.agent_calls {
        options.calls = calls.max(1);
    }
    options.claude = args.claude;
    options.agents = args.agents;
    options.pass_env = pass_env();
    if let Some(exe) = args.toolgate {
        options.exe = std::path::absolute(exe)?;
    }
    if !args.json {
        options.progress = |line| eprintln!("{line}");
    }
    let report = toolgate_bench::run_agent(&options)?;
    print(args.json, &report, || report.render(super::width()))
}

/// `--soak`: run again in a scratch environment (the agent commands'
/// client finds the server through it: see `toolgate_bench::SoakScratch`),
/// which then soaks.
fn run_soak(args: Args, calls: usize) -> anyhow::Result<std::process::ExitCode> {
    let (root, out, client) = match in_scratch(&args, |cmd| {
        cmd.args(["bench", "--soak", &calls.to_string()])
            .args(["--clients", &args.clients.to_string()])
            .args(["--sample-every", &args.sample_every.to_string()]);
    })? {
        Ran::Child(code) => return Ok(code),
        Ran::Inside(root, out, client) => (root, out, client),
    };
    let mut options =
        toolgate_bench::SoakOptions::new(calls, std::env::current_exe()?, root, out, client);
    options.clients = args.clients.max(1);
    options.sample_every = args.sample_every.max(1);
    options.guests = args.guests;
    if !args.json {
        options.progress = |line| eprintln!("{line}");
    }
    let report = toolgate_bench::run_soak(&options)?;
    print(args.json, &report, || report.render(super::width()))?;
    Ok(if report.passed {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::FAILURE
    })
}

/// `--load`: as `--soak`, in a scratch environment of its own.
fn run_load(args: Args) -> anyhow::Result<std::process::ExitCode> {
    let levels = args
        .load_clients
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let window = args
        .load_window
        .unwrap_or(if args.quick { 1.0 } else { 3.0 });
    if !(window.is_finite() && window > 0.0)
        || args.load_clients.contains(&0)
        || !(args.load_pace.is_finite() && args.load_pace >= 0.0)
    {
        anyhow::bail!(
            "--load-window must be a positive number of seconds, and each level at least 1 client"
        );
    }
    let (root, out, client) = match in_scratch(&args, |cmd| {
        cmd.args(["bench", "--load", "--load-clients", &levels])
            .args(["--load-window", &window.to_string()])
            .args(["--load-pace", &args.load_pace.to_string()]);
    })? {
        Ran::Child(code) => return Ok(code),
        Ran::Inside(root, out, client) => (root, out, client),
    };
    let mut options = toolgate_bench::LoadOptions::new(std::env::current_exe()?, root, out, client);
    options.levels = args.load_clients.clone();
    options.window = std::time::Duration::from_secs_f64(window);
    options.pace = args.load_pace;
    options.guests = args.guests;
    if !args.json {
        options.progress = |line| eprintln!("{line}");
    }
    let report = toolgate_bench::run_load(&options)?;
    print(args.json, &report, || report.render(super::width()))?;
    Ok(if report.errors == 0 {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::FAILURE
    })
}

/// A bench that drives a real server from a scratch environment: outside
/// it, runs this binary again inside one (its arguments set by `again`,
/// plus the common ones) and exits as it did; inside it, what the bench
/// needs to run.
fn in_scratch(args: &Args, again: impl FnOnce(&mut std::process::Command)) -> anyhow::Result<Ran> {
    let exe = std::env::current_exe()?;
    let Some(root) = args.soak_root.clone() else {
        let out = match args.out.clone() {
            Some(out) => out,
            None => super::env::dir("XDG_STATE_HOME")
                .map(|d| d.join("toolgate"))
                .or_else(|| super::env::dir("HOME").map(|h| h.join(".local/state/toolgate")))
                .ok_or_else(|| anyhow::anyhow!("no XDG_STATE_HOME or HOME: give --out DIR"))?
                .join("bench"),
        };
        let scratch = toolgate_bench::SoakScratch::new()?;
        let mut cmd = toolgate_bench::SoakScratch::command(scratch.path(), &exe, &pass_env());
        again(&mut cmd);
        cmd.arg("--guests")
            .arg(std::path::absolute(&args.guests)?)
            .arg("--out")
            .arg(std::path::absolute(out)?)
            .arg("--soak-root")
            .arg(scratch.path());
        if args.json {
            cmd.arg("--json");
        }
        let status = cmd.status()?;
        return match status.code() {
            Some(code) => Ok(Ran::Child(std::process::ExitCode::from(
                u8::try_from(code).unwrap_or(1),
            ))),
            None => anyhow::bail!("the bench was stopped by {status}"),
        };
    };
    // The hidden flag is the bench's own: a process whose environment does
    // not point into the scratch directory would drive the user's server.
    let scratch = root.join("soak-xdg");
    let inside = |p: Option<PathBuf>| p.is_some_and(|p| p.starts_with(&scratch));
    if !inside(super::env::socket_path()) || !inside(super::env::global_dir()) {
        anyhow::bail!(
            "--soak-root is for the bench's own use: this environment does not point into {}",
            scratch.display()
        );
    }
    let client: toolgate_bench::Client = std::sync::Arc::new(|workspace, input| {
        let ask = super::client::Ask::check(workspace, input, None, None);
        match super::client::ask(&ask) {
            None => toolgate_bench::Answered::NotTaken,
            Some(reply) => toolgate_bench::Answered::Taken(
                reply.into_check_answer().map_err(|e| format!("{e:#}")),
            ),
        }
    });
    let out = args
        .out
        .clone()
        .ok_or_else(|| anyhow::anyhow!("--soak-root without --out"))?;
    Ok(Ran::Inside(root, out, client))
}

/// Where [`in_scratch`] left this process.
enum Ran {
    /// It ran the bench in a child, which exited so.
    Child(std::process::ExitCode),
    /// It is the child: the scratch root, where the report goes, and the
    /// agent commands' client.
    Inside(PathBuf, PathBuf, toolgate_bench::Client),
}

/// What of this environment a scratch environment keeps: `PATH` and
/// `TMPDIR` (for `--agent`'s agents and hooks, and `--soak`'s bench process).
fn pass_env() -> Vec<(String, std::ffi::OsString)> {
    let path = std::env::var_os("PATH").map(|v| ("PATH".to_owned(), v));
    let tmpdir = std::env::var_os("TMPDIR").map(|v| ("TMPDIR".to_owned(), v));
    path.into_iter().chain(tmpdir).collect()
}

/// Prints `report` as JSON, or as the text `render` gives.
fn print(
    json: bool,
    report: &impl serde::Serialize,
    render: impl FnOnce() -> String,
) -> anyhow::Result<std::process::ExitCode> {
    if json {
        outln!("{}", serde_json::to_string_pretty(report)?);
    } else {
        outln!("{}", render());
    }
    Ok(std::process::ExitCode::SUCCESS)
}

/// The MCP revisions `bench --mcp` speaks.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum McpRevision {
    /// `initialize` first.
    #[value(name = "2025-06-18")]
    Handshake,
    /// Stateless: each request names it.
    #[value(name = "2026-07-28")]
    Stateless,
}
