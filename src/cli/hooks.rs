//! `toolgate hooks`: list and validate the configured hooks.
//!
//! The listing is in consultation order and says where each hook came from, so
//! an operator can see exactly which guards a call in this workspace meets and
//! in what order. `--check` validates only, for CI and pre-commit use.

use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use toolgate::config::HookSpec;
use toolgate::{BindingSpec, CommandSpec};
use toolgate::{Config, Source};

/// List the hooks a call in this workspace meets, in order; or validate them.
///
/// Exit code 0: the configuration is valid. 1: it is not; every problem is
/// printed on stderr, naming the file, the hook and the field.
#[derive(clap::Args)]
#[command(after_help = "Examples:\n  \
    toolgate hooks --workspace examples/demo\n  \
    toolgate hooks --workspace . --json | jq '.hooks[].name'\n  \
    toolgate hooks --check        # validate only; non-zero exit on any problem")]
pub(crate) struct Args {
    /// The workspace whose .toolgate/hooks.json applies [default: the
    /// nearest ancestor of the working directory with a .toolgate/].
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Validate only: print a one-line summary, exit non-zero on any problem.
    #[arg(long)]
    check: bool,
}

pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let workspace = super::workspace(args.workspace)?;
    let config = super::env::load(&workspace.root, true)?;
    let missing: Vec<String> = config
        .hooks()
        .iter()
        .filter_map(|h| {
            missing_program(h).map(|p| {
                format!(
                    "{}: hooks[{}] ({:?}): field `command`: program {p:?} is not on PATH",
                    h.file.display(),
                    h.index,
                    h.name
                )
            })
        })
        .collect();
    if args.check {
        if !missing.is_empty() {
            anyhow::bail!("{}", missing.join("\n"));
        }
        for warning in cache_warnings(&config) {
            eprintln!("{warning}");
        }
        let count = |s: Source| config.hooks().iter().filter(|h| h.source == s).count();
        outln!(
            "ok: {} hooks ({} global, {} workspace; workspace {})",
            config.hooks().len(),
            count(Source::Global),
            count(Source::Workspace),
            toolgate::text::one_line(&workspace.root.display().to_string())
        );
        return Ok(ExitCode::SUCCESS);
    }
    let has_wasm = config
        .hooks()
        .iter()
        .any(|h| h.binding_kind() == toolgate::BindingKind::Wasm);
    let engine = has_wasm
        .then(|| toolgate::wasm::engine_info(&super::env::wasm(true)))
        .transpose()
        .map_err(anyhow::Error::msg)?;
    if args.json {
        let mut out =
            json!({ "workspace": workspace, "files": config.files(), "hooks": config.hooks() });
        if let Some(engine) = &engine {
            out["wasm_engine"] = engine.clone();
        }
        outln!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        outln!(
            "workspace: {} ({})",
            toolgate::text::one_line(&workspace.root.display().to_string()),
            toolgate::text::one_line(&workspace.how)
        );
        print_table(&config);
        if let Some(engine) = &engine {
            outln!(
                "wasm engine: wasmtime {}, {} allocator{}",
                engine["wasmtime"].as_str().unwrap_or("?"),
                engine["allocator"]["kind"].as_str().unwrap_or("?"),
                engine["allocator"]["fallback_reason"]
                    .as_str()
                    .map(|r| format!(" ({r})"))
                    .unwrap_or_default()
            );
        }
    }
    for m in &missing {
        eprintln!("warning: {}", toolgate::text::one_line(m));
    }
    Ok(ExitCode::SUCCESS)
}

fn print_table(config: &Config) {
    let mut table = Table::new();
    table.load_style(UTF8_FULL_CONDENSED).set_header([
        "#",
        "name",
        "source",
        "binding",
        "events",
        "tools",
        "timeout",
        "limits",
        "on_failure",
        "runs",
    ]);
    for (i, hook) in config.hooks().iter().enumerate() {
        let tools = match (&hook.tools, &hook.matcher) {
            (None, None) => "all".to_owned(),
            (tools, matcher) => [
                tools.as_ref().map(|t| t.join(", ")),
                matcher.as_ref().map(|m| format!("/{m}/")),
            ]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(" or "),
        };
        let events: Vec<&str> = hook.events.iter().map(|e| e.as_str()).collect();
        let (runs, limits) = (
            hook.binding.runs(),
            hook.binding.limits().unwrap_or_else(|| "-".to_owned()),
        );
        // Every cell may carry text a workspace wrote: one line, no
        // terminal control sequences.
        table.add_row(
            [
                (i + 1).to_string(),
                hook.name.clone(),
                hook.source.to_string(),
                hook.binding_kind().to_string(),
                events.join(", "),
                tools,
                format!("{} ms", hook.timeout_ms),
                limits,
                hook.on_failure.to_string(),
                runs,
            ]
            .map(|cell| toolgate::text::one_line(&cell)),
        );
    }
    if config.hooks().is_empty() {
        outln!("no hooks configured");
    } else {
        outln!("{table}");
    }
    for file in config.files() {
        outln!(
            "{:<9} {} ({})",
            format!("{}:", file.source),
            toolgate::text::one_line(&file.path.display().to_string()),
            if file.found { "read" } else { "not present" }
        );
    }
    for warning in cache_warnings(config) {
        outln!("{warning}");
    }
    let chain = config
        .chain_timeout()
        .unwrap_or(toolgate::runner::DEFAULT_CHAIN_TIMEOUT);
    outln!(
        "chain deadline: {} ms{}",
        chain.as_millis(),
        if config.chain_timeout().is_some() {
            " (chain_timeout_ms in the global config)"
        } else {
            " (default)"
        }
    );
    for hook in config.hooks() {
        if u128::from(hook.timeout_ms) > chain.as_millis() {
            outln!(
                "note: {}'s timeout_ms ({} ms) is longer than the chain deadline; the chain's wins",
                toolgate::text::one_line(&hook.name),
                hook.timeout_ms
            );
        }
    }
}

/// One line per wasm hook whose compile cache was not trusted.
fn cache_warnings(config: &Config) -> Vec<String> {
    config
        .hooks()
        .iter()
        .filter_map(|hook| {
            hook.binding.warning().map(|w| {
                format!(
                    "warning: {}: {}",
                    toolgate::text::one_line(&hook.name),
                    toolgate::text::one_line(w)
                )
            })
        })
        .collect()
}

/// A bare program name that is not on `PATH`: every call would fail to spawn.
fn missing_program(hook: &HookSpec) -> Option<String> {
    let BindingSpec::Subprocess(CommandSpec { program, .. }) = &hook.binding else {
        return None;
    };
    if program.components().count() != 1 || program.is_absolute() {
        return None;
    }
    let path = std::env::var_os("PATH")?;
    let found = std::env::split_paths(&path).any(|dir| is_executable(&dir.join(program)));
    (!found).then(|| program.display().to_string())
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
