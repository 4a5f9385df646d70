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
    toolgate bench --json > bench.json\n\n\
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
}

pub(crate) fn run(args: Args) -> anyhow::Result<std::process::ExitCode> {
    let mut options = toolgate::bench::Options::new(std::env::current_exe()?);
    options.rounds = args.rounds;
    options.quick = args.quick;
    options.guests = args.guests;
    if !args.json {
        options.progress = |line| eprintln!("{line}");
    }
    let report = toolgate::bench::run(&options)?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        outln!("{}", report.render(super::width()));
    }
    Ok(std::process::ExitCode::SUCCESS)
}
