//! `toolgate hooks`: list and validate the configured hooks.
//!
//! The listing is in consultation order and says where each hook came from, so
//! an operator can see exactly which guards a call in this workspace meets and
//! in what order. `--check` validates only, for CI and pre-commit use.

use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use toolgate::config::{FoundWorkspace, HookSpec};
use toolgate::trust::{TrustState, UntrustedPolicy};
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
    toolgate hooks --check        # validate only; non-zero exit on any problem\n  \
    toolgate hooks --schema > hooks.schema.json   # for an editor's \"$schema\"")]
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
    /// Print the JSON Schema of hooks.json (for editors; the repository's
    /// docs/hooks.schema.json is this output) and exit.
    #[arg(long, conflicts_with_all = ["json", "check", "workspace"])]
    schema: bool,
}

pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    if args.schema {
        let schema = toolgate::config::json_schema();
        outln!("{}", serde_json::to_string_pretty(&schema)?);
        return Ok(ExitCode::SUCCESS);
    }
    let workspace = super::workspace(args.workspace)?;
    let config = load_reporting_all(&workspace.root)?;
    let missing: Vec<String> = config
        .hooks()
        .iter()
        .filter_map(|h| {
            let BindingSpec::Subprocess(CommandSpec { program, .. }) = &h.binding else {
                return None;
            };
            not_on_path(program).then(|| missing_message(&h.file, h.index, &h.name, program))
        })
        .collect();
    if args.check {
        return check(&config, &workspace.root, &missing);
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
        let out = listing_json(&config, &workspace, engine);
        outln!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        print_listing(&config, &workspace, engine.as_ref());
    }
    for m in &missing {
        eprintln!("warning: {}", toolgate::text::one_line(m));
    }
    Ok(ExitCode::SUCCESS)
}

/// Loads the configuration; its own step because when it does not load, every
/// problem is reported at once, not only the loader's first.
fn load_reporting_all(root: &Path) -> anyhow::Result<Config> {
    super::env::load(root, true).map_err(|e| {
        // Every problem at once: the loader's, and the bare programs
        // not on PATH (which only this command checks) in the same files.
        let files = [
            Some(super::env::managed_dir().join("hooks.json")),
            super::env::global_dir().map(|d| d.join("hooks.json")),
            Some(root.join(toolgate::config::WORKSPACE_FILE)),
        ];
        let mut problems = vec![e.to_string()];
        problems.extend(missing_in_files(files.iter().flatten()));
        // A running server keeps answering with its last good config.
        problems.extend(server_note(root));
        anyhow::anyhow!("{}", problems.join("\n"))
    })
}

/// `--check`: its own step because it prints only a one-line summary (and
/// warnings on stderr) and fails on a program not on `PATH`.
fn check(config: &Config, root: &Path, missing: &[String]) -> anyhow::Result<ExitCode> {
    if !missing.is_empty() {
        anyhow::bail!("{}", missing.join("\n"));
    }
    for warning in cache_warnings(config)
        .into_iter()
        .chain(trust_notes(config))
    {
        eprintln!("{warning}");
    }
    let count = |s: Source| config.hooks().iter().filter(|h| h.source == s).count();
    outln!(
        "{} {} hooks ({} managed, {} global, {} workspace; workspace {})",
        super::colour::decision("allow", "ok:"),
        config.hooks().len(),
        count(Source::Managed),
        count(Source::Global),
        count(Source::Workspace),
        toolgate::text::one_line(&root.display().to_string())
    );
    Ok(ExitCode::SUCCESS)
}

/// `--json`: every field on its own, plus the engine, a running server and
/// whether confinement is available, for scripts.
fn listing_json(
    config: &Config,
    workspace: &FoundWorkspace,
    engine: Option<serde_json::Value>,
) -> serde_json::Value {
    let mut out =
        json!({ "workspace": workspace, "files": config.files(), "hooks": config.hooks() });
    out["managed"] = managed_json(config);
    if let Some(engine) = engine {
        out["wasm_engine"] = engine;
    }
    if let Some(status) = super::serve::query_status() {
        out["server"] = status;
    }
    out["confinement"] = match super::env::confinement() {
        Ok(()) => json!({"available": true, "how": "landlock"}),
        Err(why) => json!({
            "available": false,
            "why": why.to_string(),
            "required": config.require_confinement(),
        }),
    };
    out
}

/// The managed layer for `--json`: where it is looked for, whether it was
/// read, what it enforces, and the configs it made toolgate ignore.
fn managed_json(config: &Config) -> serde_json::Value {
    let file = config.files().iter().find(|f| f.source == Source::Managed);
    let ignored: Vec<_> = config
        .ignored()
        .iter()
        .map(|f| json!({"source": f.source, "path": f.path, "found": f.found, "why": IGNORED_WHY}))
        .collect();
    json!({
        "path": file.map(|f| f.path.clone())
            .unwrap_or_else(|| super::env::managed_dir().join("hooks.json")),
        "found": file.is_some_and(|f| f.found),
        "settings": config.managed(),
        "in_force": config.managed().map(|m| m.in_force()).unwrap_or_default(),
        "ignored": ignored,
    })
}

const IGNORED_WHY: &str = "the managed layer sets managed_hooks_only";

/// What the managed layer enforces, and what it made toolgate ignore.
fn print_managed(config: &Config) {
    let Some(managed) = config.managed() else {
        return;
    };
    for line in managed.in_force() {
        outln!("managed:  enforces {}", toolgate::text::one_line(&line));
    }
    for file in config.ignored() {
        outln!(
            "{:<9} {} (IGNORED: {IGNORED_WHY})",
            format!("{}:", file.source),
            toolgate::text::one_line(&file.path.display().to_string()),
        );
    }
    for hook in config.hooks().iter().filter(|h| h.on_failure_forced) {
        outln!(
            "note: {}'s on_failure \"allow\" runs as \"deny\" (the managed layer sets \
             forbid_on_failure_allow)",
            toolgate::text::one_line(&hook.name)
        );
    }
}

/// The listing for a person: the workspace, the table, then one line each
/// for the engine, confinement and a running server.
fn print_listing(config: &Config, workspace: &FoundWorkspace, engine: Option<&serde_json::Value>) {
    outln!(
        "workspace: {} ({})",
        toolgate::text::one_line(&workspace.root.display().to_string()),
        toolgate::text::one_line(&workspace.how)
    );
    print_table(config);
    if let Some(engine) = engine {
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
    if let Some(note) = confinement_note(config) {
        outln!("{note}");
    }
    if let Some(note) = server_note(&workspace.root) {
        outln!("{note}");
    }
}

fn print_table(config: &Config) {
    // Six columns, related facts stacked in one cell, so the table reads at
    // 80 columns; `--json` has every field on its own.
    let mut table = super::table(&["#", "hook", "from", "applies to", "limits", "runs"]);
    for column in 0..3 {
        if let Some(c) = table.column_mut(column) {
            c.set_constraint(comfy_table::ColumnConstraint::ContentWidth);
        }
    }
    for (i, hook) in config.hooks().iter().enumerate() {
        table.add_row(hook_row(i + 1, hook));
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
    print_managed(config);
    for warning in cache_warnings(config)
        .into_iter()
        .chain(trust_notes(config))
    {
        outln!("{warning}");
    }
    print_deadline(config);
    if let Some(note) = signing_note(config) {
        outln!("{note}");
    }
}

/// Whether components must be signed, by which keys, and that commands are
/// not: its own step because it binds hooks the table lists one by one.
fn signing_note(config: &Config) -> Option<String> {
    let rule = config.signing().below;
    let ids: Vec<String> = rule.keys.iter().map(|k| k.id().to_string()).collect();
    match (rule.required_by, ids.is_empty()) {
        (Some(by), _) => Some(format!(
            "signing: required by {by}: every component must carry a .minisig by key {} \
             (command hooks are not signed: a global command is the operator's own, a \
             workspace command runs only once trusted and pinned)",
            ids.join(", ")
        )),
        (None, false) => Some(format!(
            "signing: not required; hooks that give `signed` are checked against key {}",
            ids.join(", ")
        )),
        (None, true) => None,
    }
}

/// One hook's row: its own step because each cell stacks several facts, and
/// every cell may carry text a workspace wrote.
fn hook_row(position: usize, hook: &HookSpec) -> [String; 6] {
    let tools = match (&hook.tools, &hook.matcher) {
        (None, None) => "every tool".to_owned(),
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
    let mut limits = vec![format!("{} ms", hook.timeout_ms)];
    limits.extend(hook.binding.limits());
    limits.push(format!(
        "on failure: {}{}",
        hook.on_failure,
        if hook.on_failure_forced {
            " (forced by managed)"
        } else {
            ""
        }
    ));
    // Every cell may carry text a workspace wrote: one line each, no
    // terminal control sequences.
    let one = |text: &str| toolgate::text::one_line(text);
    let trust = match &hook.trust {
        Some(TrustState::Trusted) => "\ntrusted",
        Some(TrustState::Untrusted { policy, .. }) => match policy {
            UntrustedPolicy::Skip => "\nUNTRUSTED: skip",
            _ => "\nUNTRUSTED: deny",
        },
        _ => "",
    };
    [
        position.to_string(),
        one(&hook.name),
        format!("{}\n{}{trust}", hook.source, hook.binding_kind()),
        format!("{}\n{}", events.join(", "), one(&tools)),
        limits.iter().map(|l| one(l)).collect::<Vec<_>>().join("\n"),
        one(&hook.binding.runs()),
    ]
}

/// The chain deadline and each hook whose own timeout it cuts short: its own
/// step because a hook's `timeout_ms` alone does not say how long it may run.
fn print_deadline(config: &Config) {
    let chain = config
        .chain_timeout()
        .unwrap_or(toolgate::runner::DEFAULT_CHAIN_TIMEOUT);
    outln!(
        "chain deadline: {} ms{}",
        chain.as_millis(),
        if config.chain_timeout().is_some() {
            " (chain_timeout_ms in the global or managed config)"
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

/// What a running `toolgate serve` has loaded for this workspace, and the
/// error of its last reload when the files no longer load.
fn server_note(workspace: &Path) -> Option<String> {
    let status = super::serve::query_status()?;
    let root = workspace
        .canonicalize()
        .unwrap_or_else(|_| workspace.to_owned());
    let here = status["workspaces"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|w| w["workspace"].as_str().map(Path::new) == Some(root.as_path()));
    Some(format!(
        "server: running (pid {}, {} requests){}",
        status["pid"],
        status["requests"],
        match here {
            None => "; this workspace not loaded yet".to_owned(),
            Some(w) => match w["error"].as_str() {
                Some(e) => format!("; this workspace: {}", toolgate::text::one_line(e)),
                None => format!("; this workspace: {} hooks loaded", w["hooks"]),
            },
        }
    ))
}

/// Whether workspace command hooks run confined here, when there are any.
fn confinement_note(config: &Config) -> Option<String> {
    let confined = config.hooks().iter().any(|h| {
        h.source == Source::Workspace && h.binding_kind() == toolgate::BindingKind::Subprocess
    });
    if !confined {
        return None;
    }
    Some(match super::env::confinement() {
        Ok(()) => {
            "confinement: Landlock + seccomp (workspace commands: no network, writes only to a \
                   per-call scratch folder, no signals outside the hook)"
                .to_owned()
        }
        Err(why) if config.require_confinement() => format!(
            "confinement: NOT AVAILABLE ({}); require_confinement is set, so workspace \
             commands fail closed",
            toolgate::text::one_line(&why.to_string())
        ),
        Err(why) => format!(
            "confinement: NOT AVAILABLE ({}); workspace commands run unconfined (set \
             require_confinement in the global config to make them fail closed)",
            toolgate::text::one_line(&why.to_string())
        ),
    })
}

/// One line per workspace command hook that will not run, and what to do.
fn trust_notes(config: &Config) -> Vec<String> {
    let untrusted: Vec<String> = config
        .hooks()
        .iter()
        .filter_map(|hook| match &hook.trust {
            Some(TrustState::Untrusted { reason, policy }) => Some(format!(
                "untrusted: {} will not run ({}; its calls: {policy})",
                toolgate::text::one_line(&hook.name),
                toolgate::text::one_line(reason)
            )),
            _ => None,
        })
        .collect();
    let mut notes = untrusted.clone();
    if let (false, Some((root, _))) = (untrusted.is_empty(), config.workspace_config()) {
        notes.push(format!(
            "review and trust them with: toolgate trust --workspace {}",
            toolgate::text::one_line(&root.display().to_string())
        ));
    }
    notes
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

/// Whether `program` is a bare name that is not on `PATH`: every call would
/// fail to spawn.
fn not_on_path(program: &Path) -> bool {
    if program.components().count() != 1 || program.is_absolute() {
        return false;
    }
    let Some(path) = std::env::var_os("PATH") else {
        return true;
    };
    !std::env::split_paths(&path).any(|dir| is_executable(&dir.join(program)))
}

fn missing_message(file: &Path, index: usize, name: &str, program: &Path) -> String {
    format!(
        "{}: hooks[{index}] ({name:?}): field `command`: program {:?} is not on PATH",
        file.display(),
        program.display().to_string()
    )
}

/// The bare programs not on `PATH` in config files that did not load, read
/// leniently (regular files of at most 1 MiB only; anything else the loader
/// has already reported).
fn missing_in_files<'a>(files: impl Iterator<Item = &'a PathBuf>) -> Vec<String> {
    let mut out = Vec::new();
    for file in files {
        let small_regular = std::fs::symlink_metadata(file)
            .is_ok_and(|m| m.file_type().is_file() && m.len() <= 1 << 20);
        let Some(value) = small_regular
            .then(|| std::fs::read(file).ok())
            .flatten()
            .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        else {
            continue;
        };
        let hooks = value["hooks"].as_array().cloned().unwrap_or_default();
        for (index, hook) in hooks.iter().enumerate() {
            let program = hook["command"][0].as_str().unwrap_or_default();
            if !program.is_empty() && !program.contains('/') && not_on_path(Path::new(program)) {
                let name = hook["name"].as_str().unwrap_or_default();
                out.push(missing_message(file, index, name, Path::new(program)));
            }
        }
    }
    out
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
