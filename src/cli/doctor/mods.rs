//! Claude Code's mods, as doctor sees them: every mod Claude Code would
//! load for this user in this project, the events each hooks, and whether
//! one sits ahead of toolgate where it can switch it off.
//!
//! # Why
//!
//! A mod (a plugin whose `hooks/hooks.json` names a JS module) seated
//! outside toolgate's settings hooks can skip them, answer them or undo
//! them (`toolgate::agent::claude_mod`): live on 2.1.332 the command
//! toolgate denied ran while doctor said "no problems". So doctor lists
//! every mod with its tier and events — asked of Claude Code itself
//! (`claude plugin list --json` in the project, `claude plugin validate
//! --json` per mod) where its CLI is on PATH, else read from the files it
//! reads (the user's and the project's skills folders, the installed
//! plugins the settings enable) — and reports a mod that hooks an event in
//! `BYPASS_EVENTS` ahead of toolgate as a problem, and the agent as not
//! calling toolgate. A mod whose events cannot be read is such a mod
//! (closed world). `--plugin-dir` mods exist per run and cannot be seen.
//!
//! What protects the classic hooks without toolgate's mod, as doctor
//! reports it: managed settings make Claude Code seat its built-in
//! `cc-plugin-sec-default` outermost (live, every technique but a mod
//! answering `tool.call` itself then failed), and that mod's
//! `allowManagedModsOnly` option keeps every mod the organization did not
//! deliver from loading.

use super::Problem;
use serde::Serialize;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;
use toolgate::agent::claude_mod::{MOD_ID, MOD_JS, bypassing, events_in_source, selects};
use toolgate::agent::read_settings;

/// How long one `claude plugin …` question may take.
const CLI_TIMEOUT: Duration = Duration::from_secs(20);

/// Claude Code's managed settings and their drop-ins (Linux).
const MANAGED: &str = "/etc/claude-code/managed-settings.json";
const MANAGED_DROP_INS: &str = "/etc/claude-code/managed-settings.d";

/// The built-in mod managed settings seat outermost, and the key its
/// options sit under in managed `pluginConfigs`.
const SEC_DEFAULT: &str = "cc-plugin-sec-default@builtin";

/// The events a mod can still answer around the classic hooks while
/// `cc-plugin-sec-default` is seated (live: a mod answering `tool.call`
/// and running the command itself got through; `tool.run` answers in the
/// tool's place the same way).
const PAST_SEC_DEFAULT: &[&str] = &["tool.call", "tool.run"];

#[derive(Serialize, Default)]
pub(super) struct ModsReport {
    /// `claude plugin list` (Claude Code said which mods load), or
    /// `files` (read from the folders and settings it reads).
    found_by: &'static str,
    /// toolgate's own mod.
    toolgate: ToolgateMod,
    /// Whether Claude Code seats `cc-plugin-sec-default` outermost here
    /// (managed settings are present).
    sec_default_seated: bool,
    /// Whether managed settings turn on its `allowManagedModsOnly`.
    allow_managed_mods_only: bool,
    mods: Vec<ModReport>,
    /// Whether a mod can switch toolgate off: the agent is then not
    /// reported as calling toolgate.
    #[serde(skip)]
    pub(super) bypassed: bool,
}

#[derive(Serialize, Default)]
struct ToolgateMod {
    /// Its folder has toolgate's mod.
    installed: bool,
    folder: String,
    /// Its `mod.js` is this toolgate's.
    current: bool,
    /// `outermost` (first in the `prependPlugins` Claude Code reads),
    /// `prepend` (listed, not first), `not-seated`, `set-aside` (the user's
    /// list, which managed settings set aside).
    seat: &'static str,
}

#[derive(Serialize)]
struct ModReport {
    /// Claude Code's id (`name@skills-dir`, `name@marketplace`).
    id: String,
    /// `user`, `project`, `local`, `managed`, or where the files said.
    scope: String,
    folder: String,
    /// `prepend` (in the `prependPlugins` Claude Code reads) or `user`.
    tier: &'static str,
    /// The events it hooks (names, globs, negations), as read.
    events: Vec<String>,
    /// Those through which it can switch a settings hook off.
    bypassing: Vec<String>,
    /// `claude plugin validate`, or `source`.
    read_by: &'static str,
    /// Why its events could not be read.
    error: Option<String>,
    /// Whether it is ahead of toolgate where it can switch it off.
    ahead_of_toolgate: bool,
}

/// One mod found, before it is judged.
struct Found {
    id: String,
    scope: String,
    folder: PathBuf,
}

/// Every mod Claude Code would load for this user in `root`, judged.
pub(super) fn check(
    root: &Path,
    claude_dir: &Path,
    cli: Option<&str>,
    problems: &mut Vec<Problem>,
    notes: &mut Vec<String>,
) -> ModsReport {
    let managed = managed_settings();
    let user = settings_at(&claude_dir.join("settings.json"));
    // The list Claude Code seats: managed settings', else the user's.
    let prepend: Vec<String> = match (&managed, &user) {
        (Some(m), _) => strings(&m["prependPlugins"]),
        (None, Some(u)) => strings(&u["prependPlugins"]),
        (None, None) => Vec::new(),
    };
    let ours = claude_dir
        .join("skills")
        .join(toolgate::agent::claude_mod::MOD_NAME);
    let mut report = ModsReport {
        sec_default_seated: managed.is_some(),
        allow_managed_mods_only: managed.as_ref().is_some_and(allow_managed_mods_only),
        toolgate: toolgates_mod(&ours, &prepend, &managed, &user, problems),
        ..ModsReport::default()
    };
    let (found, found_by) = found(root, claude_dir, cli, &managed, &user);
    report.found_by = found_by;
    for mod_ in found {
        if mod_.id == MOD_ID && mod_.folder == ours {
            continue;
        }
        // A plugin without a hooks module is not a mod.
        if let Some(modules) = modules_of(&mod_.folder) {
            let judged = judge(&report, &prepend, mod_, modules, cli, problems, notes);
            report.bypassed |= judged.ahead_of_toolgate;
            report.mods.push(judged);
        }
    }
    notes.push(format!(
        "mods: {} found by {found_by}; toolgate's mod is {}{}; a `--plugin-dir` mod exists \
         only for its run and is not seen here",
        report.mods.len(),
        match (report.toolgate.installed, report.toolgate.seat) {
            (false, _) => "not installed (`toolgate install claude-code --mod`)",
            (true, "outermost") => "seated outermost",
            (true, _) => "installed but not outermost",
        },
        protection(&report),
    ));
    report
}

/// toolgate's own mod in `ours`: installed, current, and where it is
/// seated in `prepend`; its problems added to `problems`.
fn toolgates_mod(
    ours: &Path,
    prepend: &[String],
    managed: &Option<Value>,
    user: &Option<Value>,
    problems: &mut Vec<Problem>,
) -> ToolgateMod {
    let js = std::fs::read_to_string(ours.join("hooks/mod.js")).ok();
    let in_users = user
        .as_ref()
        .is_some_and(|u| strings(&u["prependPlugins"]).iter().any(|id| id == MOD_ID));
    let toolgate = ToolgateMod {
        installed: js.is_some(),
        folder: ours.display().to_string(),
        current: js.as_deref() == Some(MOD_JS),
        seat: match prepend.iter().position(|id| id == MOD_ID) {
            Some(0) => "outermost",
            Some(_) => "prepend",
            None if managed.is_some() && in_users => "set-aside",
            None => "not-seated",
        },
    };
    if !toolgate.installed {
        return toolgate;
    }
    match toolgate.seat {
        "outermost" => {}
        "set-aside" => problems.push(Problem {
            problem: format!(
                "{MANAGED}: managed settings set the user's prependPlugins aside, so toolgate's \
                 mod ({}) is not seated outermost: a mod ahead of it can answer around it",
                toolgate.folder
            ),
            fix: format!("whoever manages {MANAGED} lists {MOD_ID} first in its prependPlugins"),
        }),
        _ => problems.push(Problem {
            problem: format!(
                "toolgate's mod ({}) is not first in prependPlugins: a mod ahead of it can \
                 answer around it",
                toolgate.folder
            ),
            fix: "`toolgate install claude-code --mod` seats it first".into(),
        }),
    }
    if !toolgate.current {
        problems.push(Problem {
            problem: format!(
                "{}/hooks/mod.js is not this toolgate's mod (an older toolgate's, or changed)",
                toolgate.folder
            ),
            fix: "`toolgate install claude-code --mod` writes this toolgate's".into(),
        });
    }
    toolgate
}

/// The mods Claude Code would load, and who said so: Claude Code itself
/// (with the repository's own mods it leaves out until the folder is
/// trusted), else the files.
fn found(
    root: &Path,
    claude_dir: &Path,
    cli: Option<&str>,
    managed: &Option<Value>,
    user: &Option<Value>,
) -> (Vec<Found>, &'static str) {
    let from_files = found_in_files(root, claude_dir, managed, user);
    let Some(mut found) = cli.and_then(|cli| listed_by_cli(cli, root)) else {
        return (from_files, "files");
    };
    // A repository's own mods load once the folder is trusted: the user
    // trusts every folder they work in, so they count now.
    for file in from_files {
        if file.scope == "project" && !found.iter().any(|f| f.folder == file.folder) {
            found.push(Found {
                scope: "project (loads once this folder is trusted)".into(),
                ..file
            });
        }
    }
    (found, "claude plugin list")
}

/// One mod, judged: its events, and whether it sits ahead of toolgate
/// where it can switch it off (a problem, added to `problems`).
fn judge(
    report: &ModsReport,
    prepend: &[String],
    mod_: Found,
    modules: Result<Vec<String>, String>,
    cli: Option<&str>,
    problems: &mut Vec<Problem>,
    notes: &mut Vec<String>,
) -> ModReport {
    let (events, read_by, error) = match cli.and_then(|cli| events_by_cli(cli, &mod_.folder)) {
        Some(events) => (events, "claude plugin validate", None),
        None => match modules.and_then(|modules| events_in_files(&mod_.folder, &modules)) {
            Ok(events) => (events, "source", None),
            Err(e) => (Vec::new(), "source", Some(e)),
        },
    };
    let tier = if prepend.contains(&mod_.id) {
        "prepend"
    } else {
        "user"
    };
    let mut through: Vec<String> = if error.is_some() {
        vec!["(events that could not be read)".to_owned()]
    } else {
        bypassing(&events).into_iter().map(str::to_owned).collect()
    };
    if report.sec_default_seated && error.is_none() {
        through.retain(|pattern| PAST_SEC_DEFAULT.iter().any(|e| selects(pattern, e)));
    }
    let outermost = report.toolgate.installed && report.toolgate.seat == "outermost";
    let loads = !(report.allow_managed_mods_only && mod_.scope != "managed");
    // Beneath toolgate's mod, outermost, it hears every call after toolgate
    // judged it.
    let ahead = loads && !through.is_empty() && !outermost;
    let id = toolgate::text::sanitize(&mod_.id);
    if ahead {
        problems.push(Problem {
            problem: format!(
                "{}: Claude Code loads the mod {id} ({} scope, {tier} tier), which hooks {} \
                 ahead of toolgate: it can run a call toolgate denied, skip toolgate or show the \
                 model an output toolgate withheld",
                mod_.folder.display(),
                mod_.scope,
                through.join(", "),
            ),
            fix: "`toolgate install claude-code --mod` seats toolgate's own mod outermost (it \
                  judges every call before any other mod); or remove this mod"
                .to_owned(),
        });
    } else if !through.is_empty() && !loads {
        notes.push(format!(
            "{}: the mod {id} hooks {} but does not load: managed settings set \
             allowManagedModsOnly",
            mod_.folder.display(),
            through.join(", ")
        ));
    }
    ModReport {
        id,
        scope: mod_.scope,
        folder: mod_.folder.display().to_string(),
        tier,
        events: events.iter().map(|e| toolgate::text::sanitize(e)).collect(),
        bypassing: through,
        read_by,
        error,
        ahead_of_toolgate: ahead,
    }
}

/// Claude Code's mods in `root` for `agent` (`None` for an agent without
/// mods), their problems added to `problems` where toolgate is
/// `installed` (to the notes otherwise).
pub(super) fn for_agent(
    agent: toolgate::agent::Outward,
    root: &Path,
    user: &crate::cli::install::Place,
    cli: &super::CliReport,
    installed: bool,
    notes: &mut Vec<String>,
) -> (Option<ModsReport>, Vec<Problem>) {
    let claude_dir = user.file.parent().unwrap_or(Path::new("."));
    let cli = cli.path.as_deref();
    use toolgate::agent::Outward;
    match agent {
        Outward::ClaudeCode => {}
        Outward::Codex
        | Outward::Gemini
        | Outward::QwenCode
        | Outward::Copilot
        | Outward::Cursor
        | Outward::OpenCode => return (None, Vec::new()),
    }
    let mut found = Vec::new();
    let report = check(root, claude_dir, cli, &mut found, notes);
    if installed {
        (Some(report), found)
    } else {
        notes.extend(found.into_iter().map(|p| p.problem));
        (Some(report), Vec::new())
    }
}

/// What protects the classic hooks on this machine besides toolgate's mod.
fn protection(report: &ModsReport) -> &'static str {
    match (report.sec_default_seated, report.allow_managed_mods_only) {
        (_, true) => {
            "; managed settings set allowManagedModsOnly: only mods the organization delivers \
             load"
        }
        (true, false) => {
            "; managed settings seat cc-plugin-sec-default outermost: it keeps mods off the \
             classic hooks, but not a mod that answers tool.call itself"
        }
        (false, false) => {
            "; no managed settings: nothing but toolgate's own mod keeps a mod off the classic \
             hooks"
        }
    }
}

/// The merged managed settings (the file, then its drop-ins in name
/// order, later keys over earlier), when they set anything.
fn managed_settings() -> Option<Value> {
    let mut merged: Option<serde_json::Map<String, Value>> = None;
    let mut files = vec![PathBuf::from(MANAGED)];
    if let Ok(entries) = std::fs::read_dir(MANAGED_DROP_INS) {
        let mut drop_ins: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        drop_ins.sort();
        files.extend(drop_ins);
    }
    for file in files {
        if let Some(Value::Object(map)) = settings_at(&file) {
            merged.get_or_insert_with(Default::default).extend(map);
        }
    }
    // Live on 2.1.332: a managed file holding `{}` seats nothing; one
    // setting in it seats `cc-plugin-sec-default`.
    merged.filter(|m| !m.is_empty()).map(Value::Object)
}

fn allow_managed_mods_only(managed: &Value) -> bool {
    [SEC_DEFAULT, "sec-default@builtin"].iter().any(|key| {
        let option = &managed["pluginConfigs"][key]["options"]["allowManagedModsOnly"];
        !option.is_null() && *option != Value::Bool(false)
    })
}

/// A settings file as JSON (`None`: missing or unreadable; the switches
/// doctor checks elsewhere report an unreadable file).
fn settings_at(file: &Path) -> Option<Value> {
    let text = read_settings(file).ok()??;
    serde_json::from_str(&text).ok()
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The enabled plugins Claude Code lists for this user in `root`, with a
/// folder (built-ins have none: they are Claude Code's own).
fn listed_by_cli(cli: &str, root: &Path) -> Option<Vec<Found>> {
    let out = super::versions::run_bounded(cli, &["plugin", "list", "--json"], root, CLI_TIMEOUT)?;
    let listed: Value = serde_json::from_str(&out).ok()?;
    Some(
        listed
            .as_array()?
            .iter()
            .filter(|p| p["enabled"] != false)
            .filter_map(|p| {
                // A folder marketplace's plugin runs from that folder, not
                // from the copy install made (2.1.332: `readFromFolder`).
                let folder = p["readFromFolder"].as_str().or(p["installPath"].as_str())?;
                Some(Found {
                    id: p["id"].as_str()?.to_owned(),
                    scope: p["scope"].as_str().unwrap_or("unknown").to_owned(),
                    folder: PathBuf::from(folder),
                })
            })
            .collect(),
    )
}

/// The events `claude plugin validate --json` says a plugin's hooks
/// modules hook.
fn events_by_cli(cli: &str, folder: &Path) -> Option<Vec<String>> {
    let folder = folder.to_str()?;
    let out = super::versions::run_bounded(
        cli,
        &["plugin", "validate", "--json", folder],
        Path::new("/"),
        CLI_TIMEOUT,
    )?;
    let report: Value = serde_json::from_str(&out).ok()?;
    let mut events = Vec::new();
    let sections = std::iter::once(&report["manifest"])
        .chain(report["contents"].as_array().into_iter().flatten());
    let mut modules_seen = false;
    for section in sections {
        for module in section["modules"].as_array().into_iter().flatten() {
            modules_seen = true;
            for event in strings(&module["uses"]["events"]) {
                if !events.contains(&event) {
                    events.push(event);
                }
            }
        }
    }
    modules_seen.then_some(events)
}

/// The hooks modules `folder/hooks/hooks.json` names (`None`: not a mod).
///
/// Closed world: a `hooks.json` doctor cannot read, or whose `modules` is
/// not a list of paths, may name a module Claude Code loads: it is a mod
/// whose events cannot be read (`Err`), never "not a mod".
fn modules_of(folder: &Path) -> Option<Result<Vec<String>, String>> {
    let file = folder.join("hooks/hooks.json");
    let text = match read_settings(&file) {
        Ok(None) => return None,
        Ok(Some(text)) => text,
        Err(e) => return Some(Err(format!("{}: {e}", file.display()))),
    };
    let hooks: Value = match serde_json::from_str(&text) {
        Ok(hooks) => hooks,
        Err(e) => {
            return Some(Err(format!(
                "{}: not JSON doctor can read: {e}",
                file.display()
            )));
        }
    };
    match &hooks["modules"] {
        Value::Null => None,
        Value::Array(items) if items.iter().all(Value::is_string) => {
            let modules = strings(&hooks["modules"]);
            (!modules.is_empty()).then_some(Ok(modules))
        }
        _ => Some(Err(format!(
            "{}: `modules` is not a list of paths",
            file.display()
        ))),
    }
}

/// The events a mod's modules hook, read from their source (with the
/// files they sit beside: a helper may call `on`).
fn events_in_files(folder: &Path, modules: &[String]) -> Result<Vec<String>, String> {
    let mut events = Vec::new();
    for module in modules {
        let path = folder.join("hooks").join(module);
        let text = read_settings(&path)
            .map_err(|e| format!("{}: {e}", path.display()))?
            .ok_or_else(|| format!("{}: missing", path.display()))?;
        for event in events_in_source(&text).map_err(|e| format!("{}: {e}", path.display()))? {
            if !events.contains(&event) {
                events.push(event);
            }
        }
    }
    Ok(events)
}

/// The mods Claude Code would load, read from the folders and settings it
/// reads: the user's and the project's skills folders, and the installed
/// plugins a settings file enables.
fn found_in_files(
    root: &Path,
    claude_dir: &Path,
    managed: &Option<Value>,
    user: &Option<Value>,
) -> Vec<Found> {
    let mut found = Vec::new();
    for (dir, scope) in [
        (claude_dir.join("skills"), "user"),
        (root.join(".claude/skills"), "project"),
    ] {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut folders: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        folders.sort();
        for folder in folders {
            // Closed world: a folder with a hooks.json but no manifest
            // doctor can read is still listed (by the folder's name).
            let manifest = settings_at(&folder.join(".claude-plugin/plugin.json"));
            let named = manifest.as_ref().and_then(|m| m["name"].as_str());
            let name = match named {
                Some(name) => name.to_owned(),
                None if folder.join("hooks/hooks.json").exists() => folder
                    .file_name()
                    .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
                None => continue,
            };
            found.push(Found {
                id: format!("{name}@skills-dir"),
                scope: scope.to_owned(),
                folder,
            });
        }
    }
    let project = settings_at(&root.join(".claude/settings.json"));
    let local = settings_at(&root.join(".claude/settings.local.json"));
    let installed = settings_at(&claude_dir.join("plugins/installed_plugins.json"));
    for (settings, scope) in [
        (user, "user"),
        (&project, "project"),
        (&local, "local"),
        (managed, "managed"),
    ] {
        let Some(enabled) = settings
            .as_ref()
            .and_then(|s| s["enabledPlugins"].as_object())
        else {
            continue;
        };
        for (id, on) in enabled {
            if *on == Value::Bool(false) || found.iter().any(|f| f.id == *id) {
                continue;
            }
            let installs = installed
                .as_ref()
                .map(|i| &i["plugins"][id])
                .and_then(Value::as_array);
            for install in installs.into_iter().flatten() {
                if let Some(path) = install["installPath"].as_str() {
                    found.push(Found {
                        id: id.clone(),
                        scope: scope.to_owned(),
                        folder: PathBuf::from(path),
                    });
                }
            }
        }
    }
    found
}
