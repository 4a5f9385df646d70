//! `toolgate bench`: flags and printing; the measuring is `toolgate::bench`.

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
    toolgate bench --agent      # inside the real Claude Code, a few minutes\n\n\
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
    /// Measure instead what a hook costs per tool call inside the real
    /// Claude Code (no hook, the HTTP hook, the command hook fresh and
    /// through the server, a Python hook), against a mock model API. Its
    /// own section: `--quick` alone leaves it out.
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
}

pub(crate) fn run(args: Args) -> anyhow::Result<std::process::ExitCode> {
    if args.agent {
        return run_agent(args);
    }
    let mut options = toolgate::bench::Options::new(std::env::current_exe()?);
    options.rounds = args.rounds;
    options.quick = args.quick;
    options.guests = args.guests;
    if !args.json {
        options.progress = |line| eprintln!("{line}");
    }
    let report = toolgate::bench::run(&options)?;
    print(args.json, &report, || report.render(super::width()))
}

/// `--agent`: the agent section, on its own.
fn run_agent(args: Args) -> anyhow::Result<std::process::ExitCode> {
    let mut options = toolgate::bench::AgentOptions::new(std::env::current_exe()?);
    if args.quick {
        options = options.quick();
    }
    if let Some(calls) = args.agent_calls {
        options.calls = calls.max(1);
    }
    options.claude = args.claude;
    options.agents = args.agents;
    let path = std::env::var_os("PATH").map(|v| ("PATH".to_owned(), v));
    let tmpdir = std::env::var_os("TMPDIR").map(|v| ("TMPDIR".to_owned(), v));
    options.pass_env = path.into_iter().chain(tmpdir).collect();
    if let Some(exe) = args.toolgate {
        options.exe = std::path::absolute(exe)?;
    }
    if !args.json {
        options.progress = |line| eprintln!("{line}");
    }
    let report = toolgate::bench::run_agent(&options)?;
    print(args.json, &report, || report.render(super::width()))
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
