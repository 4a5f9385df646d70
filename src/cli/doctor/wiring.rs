//! Whether each agent's settings run this toolgate, for every event, as
//! `install` writes them now: the entries read from the user's and the
//! project's settings, each problem with its fix.

use super::versions::{check_binary, check_cli};
use super::*;
use toolgate::agent::{Decided, HookSwitch, Read, Setting, Source};

pub(super) fn check_agent(
    agent: Outward,
    exe: &str,
    root: &Path,
    home: Option<&Path>,
) -> anyhow::Result<AgentReport> {
    let spec = agent.install();
    let wiring = Wiring::new(agent, exe);
    let mut problems = Problems::default();
    let mut notes = Vec::new();
    let user = Place::user(agent)?;
    let project = Place::project(agent, root)?;
    let mut scopes = vec![check_scope("user", &user, agent, &wiring, &mut problems)];
    if project.file != user.file {
        scopes.push(check_scope(
            "project",
            &project,
            agent,
            &wiring,
            &mut problems,
        ));
    }
    let installed = scopes.iter().any(|s| !s.entries.is_empty());
    let in_project = project.file != user.file
        && scopes
            .iter()
            .any(|s| s.scope == "project" && !s.entries.is_empty());
    // A file the agent does not read while its variable moves the
    // user's settings: toolgate's entries there guard nothing.
    if let Some((unread, var, moved)) = unread_user(agent) {
        let place = Place {
            file: unread.clone(),
            project: None,
        };
        let stale = check_scope("user", &place, agent, &wiring, &mut Problems::default());
        if !stale.entries.is_empty() {
            problems.add(
                format!(
                    "{}: toolgate's entries here are not read: {var} is set ({}), so the agent \
                     reads {} instead, and they guard nothing (checked with doctor's own \
                     environment: the agent's may differ)",
                    unread.display(),
                    moved.display(),
                    user.file.display()
                ),
                String::new(),
                format!(
                    "with {var} set as the agent has it, `toolgate install {agent}` writes {}; \
                     `env -u {var} toolgate uninstall {agent}` removes the stale entries",
                    user.file.display()
                ),
            );
        }
    }
    let (switched, skipped) = switches_set(&spec, &user, &project, root);
    notes.extend(skipped);
    for (switch, decided, overridden, managed) in &switched {
        let setting = switch.setting.dotted();
        for (file, by) in overridden {
            notes.push(format!(
                "{file}: {setting} would turn the agent's hooks off, but {by} sets it back, \
                 and the agent reads that one last"
            ));
        }
        // Closed world: a file doctor cannot read may set the switch.
        let (what, fix) = match decided {
            Decided::On => continue,
            Decided::CannotTell { file, why } => (
                format!(
                    "{file}: cannot tell whether {setting} turns the agent's hooks off ({why})"
                ),
                format!("fix {file} (JSON the agent can read), without {setting}"),
            ),
            Decided::Off { file } => {
                let is = match switch.setting {
                    Setting::Flag { off_when, .. } => format!("is {off_when}"),
                    Setting::Names { name, .. } => format!("names `{name}`"),
                };
                let fix = if managed.contains(file) {
                    format!(
                        "a machine-wide file: whoever manages {file} must remove {setting} \
                         from it"
                    )
                } else {
                    format!("remove {setting} from {file}")
                };
                (format!("{file}: {setting} {is}: {}", switch.effect), fix)
            }
        };
        if installed {
            problems.add(what, String::new(), fix);
        } else {
            notes.push(what);
        }
    }
    let cli = check_cli(agent);
    // A step that gates only a project's hooks matters only where toolgate
    // is installed in the project.
    let gated = |step: &toolgate::agent::TrustStep| {
        if step.project_only {
            in_project
        } else {
            installed
        }
    };
    let trust = spec.trust.filter(|step| gated(step)).map(|step| {
        let (done, error) = match (step.check, home) {
            (None, _) => (None, None),
            (Some(_), None) => (None, Some("HOME is not set".to_owned())),
            (Some(check), Some(home)) => match trust_done(&check, home, root) {
                Ok(done) => (Some(done), None),
                Err(e) => (
                    None,
                    Some(format!("{}: {e}", home.join(check.file).display())),
                ),
            },
        };
        TrustReport {
            step: step.fix,
            checked: step.check.is_some(),
            done,
            error,
        }
    });
    if installed {
        match (&cli.version, cli.tested) {
            (Some(version), Some(false)) => problems.add(
                format!(
                    "{} {version} is not a release toolgate was tested with",
                    cli.command
                ),
                String::new(),
                format!(
                    "use a tested release ({}), or check what its hooks honour against the \
                     README before relying on it",
                    spec.tested_versions.join(", ")
                ),
            ),
            (None, _) if cli.path.is_none() => notes.push(format!(
                "{} is not on PATH: its version was not checked",
                cli.command
            )),
            (None, _) => notes.push(format!(
                "{} --version said no version: it was not checked",
                cli.command
            )),
            _ => {}
        }
        if let Some(trust) = &trust {
            match (trust.done, &trust.error) {
                (_, Some(error)) => problems.add(
                    format!("cannot tell whether the agent's trust step is done: {error}"),
                    String::new(),
                    trust.step.to_owned(),
                ),
                (Some(false), None) => problems.add(
                    format!(
                        "the agent's own trust step is not done for {}",
                        root.display()
                    ),
                    String::new(),
                    trust.step.to_owned(),
                ),
                (None, None) => notes.push(format!("reminder: {}", trust.step)),
                (Some(true), None) => {}
            }
        }
    } else {
        notes.push(format!(
            "not installed: `toolgate install {agent}` installs it"
        ));
    }
    let mcp_servers = super::mcp::servers(agent, root, &mut notes, &mut problems);
    // Claude Code's mods can switch toolgate off (closed world: checked
    // whether it is installed or not).
    let (mods, found) = super::mods::for_agent(agent, root, &user, &cli, installed, &mut notes);
    found
        .into_iter()
        .for_each(|p| problems.add(p.problem, String::new(), p.fix));
    let called = mods.as_ref().is_none_or(|m| !m.bypassed)
        && installed
        && switched
            .iter()
            .all(|(_, decided, ..)| *decided == Decided::On)
        && trust.as_ref().is_none_or(|t| t.done != Some(false));
    Ok(AgentReport {
        agent: agent.name(),
        installed,
        called,
        scopes,
        cli,
        trust,
        problems: problems.into_list(),
        notes,
        mcp_servers,
        mods,
    })
}

/// `$HOME/<user_file>` when the agent's variable moves the user's
/// settings elsewhere, with the variable and its value: a file the
/// agent does not read while it is set.
fn unread_user(agent: Outward) -> Option<(PathBuf, &'static str, PathBuf)> {
    let home = super::super::env::dir("HOME")?;
    let spec = agent.install();
    let toolgate::agent::UserDir::Var { var: agent_var, .. } = spec.user_dir else {
        return None;
    };
    let moved = super::super::env::dir(agent_var)?;
    let default = home.join(spec.user_file);
    let read = spec.user_dir.resolve(&home, spec.user_file, Some(&moved))?;
    (read != default).then_some((default, agent_var, moved))
}

/// A switch, what its files decide, the files whose "off" a more specific
/// file overrode (each with that file), and which of its files are
/// machine-wide (managed by an administrator, not the user).
type Switched = (HookSwitch, Decided, Vec<(String, String)>, Vec<String>);

/// Each of the agent's hook switches, decided from the files it is read
/// from, in the agent's order; and the files the agent skips, each with
/// why.
fn switches_set(
    spec: &toolgate::agent::Install,
    user: &Place,
    project: &Place,
    root: &Path,
) -> (Vec<Switched>, Vec<String>) {
    let mut skipped_all = Vec::new();
    let switched = spec
        .switches
        .iter()
        .map(|switch| {
            let (files, managed, skipped) = switch_files(switch, user, project, root);
            for note in skipped {
                if !skipped_all.contains(&note) {
                    skipped_all.push(note);
                }
            }
            let (decided, overridden) = switch.decide(&files);
            (*switch, decided, overridden, managed)
        })
        .collect();
    (switched, skipped_all)
}

/// The files `switch` is read from, lowest precedence first, each read
/// as JSON (or why not); a file that does not exist is left out. Also
/// the names of the machine-wide ones, and what the agent skips and why.
fn switch_files(
    switch: &HookSwitch,
    user: &Place,
    project: &Place,
    root: &Path,
) -> (Vec<Read>, Vec<String>, Vec<String>) {
    let mut paths: Vec<PathBuf> = Vec::new();
    let mut out = Vec::new();
    let mut managed = Vec::new();
    let mut skipped = Vec::new();
    for source in switch.read_from {
        match *source {
            Source::User => paths.push(user.file.clone()),
            Source::Project if project.file != user.file => paths.push(project.file.clone()),
            Source::Project => {}
            Source::InProject(file) => paths.push(root.join(file)),
            Source::System {
                path,
                var,
                root_owned,
            } => {
                let moved = match var {
                    Some(agent_var) => super::super::env::dir(agent_var),
                    None => None,
                };
                let file = moved.unwrap_or_else(|| PathBuf::from(path));
                if root_owned
                    && file.exists()
                    && let Err(why) = toolgate::agent::root_owned_chain(&file)
                {
                    skipped.push(format!(
                        "{}: the agent skips this file ({})",
                        file.display(),
                        toolgate::text::sanitize(&why)
                    ));
                    continue;
                }
                managed.push(file.display().to_string());
                paths.push(file);
            }
            Source::SystemDropIns { dir } => match std::fs::read_dir(dir) {
                Ok(entries) => {
                    let mut found: Vec<PathBuf> = entries
                        .filter_map(|e| e.ok().map(|e| e.path()))
                        .filter(|p| p.extension().is_some_and(|x| x == "json"))
                        .collect();
                    found.sort();
                    managed.extend(found.iter().map(|f| f.display().to_string()));
                    paths.extend(found);
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => out.push((dir.to_owned(), Err(format!("cannot list it: {e}")))),
            },
        }
    }
    for file in paths {
        let name = file.display().to_string();
        let settings = match read(&file) {
            Ok(None) => continue,
            Ok(Some(text)) => serde_json::from_str::<serde_json::Value>(&text)
                .map_err(|e| format!("not JSON: {e}")),
            Err(e) => Err(format!("{e:#}")),
        };
        out.push((name, settings.map_err(|why| toolgate::text::sanitize(&why))));
    }
    (out, managed, skipped)
}

/// Problems, with those that differ only in their event said once.
#[derive(Default)]
pub(super) struct Problems(
    BTreeMap<(String, String), Vec<String>>,
    Vec<(String, String)>,
);

impl Problems {
    /// `what` (said of `event`, when not empty) and its `fix`.
    pub(super) fn add(&mut self, what: String, event: String, fix: String) {
        let key = (what, fix);
        if !self.0.contains_key(&key) {
            self.1.push(key.clone());
        }
        let events = self.0.entry(key).or_default();
        if !event.is_empty() && !events.contains(&event) {
            events.push(event);
        }
    }

    fn into_list(mut self) -> Vec<Problem> {
        self.1
            .iter()
            .map(|key| {
                let events = self.0.remove(key).unwrap_or_default();
                let (what, fix) = key.clone();
                let problem = match events.as_slice() {
                    [] => what,
                    [one] => format!("{what} (the {one} entry)"),
                    many => format!("{what} (the {} entries)", many.join(", ")),
                };
                Problem { problem, fix }
            })
            .collect()
    }
}

fn check_scope(
    scope: &'static str,
    place: &Place,
    agent: Outward,
    wiring: &Wiring,
    problems: &mut Problems,
) -> ScopeReport {
    let spec = agent.install();
    let file = place.file.display().to_string();
    let fix = place.install_command(agent);
    let mut report = ScopeReport {
        scope,
        file: file.clone(),
        status: "no-file",
        events: Vec::new(),
        missing_events: Vec::new(),
        entries: Vec::new(),
        error: None,
    };
    let entries = match read(&place.file).and_then(|text| match text {
        None => Ok(None),
        Some(text) => wiring
            .entries(&text)
            .map(Some)
            .map_err(|e| anyhow::anyhow!("{file}: {e}")),
    }) {
        Ok(None) => return report,
        Ok(Some(entries)) => entries,
        Err(e) => {
            let error = toolgate::text::sanitize(&format!("{e:#}"));
            problems.add(
                error.clone(),
                String::new(),
                format!("fix the file (the agent cannot read it either), then: {fix}"),
            );
            report.status = "unreadable";
            report.error = Some(error);
            return report;
        }
    };
    report.status = "not-installed";
    if entries.is_empty() {
        return report;
    }
    let exe = wiring.argv().remove(0);
    for Entry {
        event,
        argv,
        differs,
    } in entries
    {
        if !spec.events.contains(&event.as_str()) {
            problems.add(
                format!("{file}: toolgate has an entry for {event}, which it does not handle"),
                String::new(),
                fix.clone(),
            );
        }
        let over_http = argv[0].starts_with("http://");
        let binary = if over_http {
            let answered = toolgate_server::http::probe(&argv[0]);
            if let Err(why) = &answered {
                problems.add(
                    format!(
                        "{file}: the http hook's server does not answer ({}): Claude Code \
                         blocks every call (or, before 2.1.295, lets it through)",
                        toolgate::text::sanitize(why)
                    ),
                    event.clone(),
                    "toolgate serve --http <the URL's address> (with TOOLGATE_HTTP_TOKEN set \
                     for Claude Code)"
                        .into(),
                );
            }
            BinaryReport {
                path: argv[0].clone(),
                exists: answered.is_ok(),
                this_toolgate: answered.is_ok(),
                version: None,
            }
        } else {
            check_binary(&argv[0], &exe, place.project.as_deref())
        };
        let program = toolgate::text::sanitize(&argv[0]);
        // An http entry's server was asked above.
        if over_http {
            // Nothing runs: no program to check.
        } else if !Path::new(&argv[0]).is_absolute() {
            problems.add(
                format!(
                    "{file}: runs {program}, not an absolute path (where the agent does not \
                     find it, it lets calls through)"
                ),
                event.clone(),
                fix.clone(),
            );
        } else if !binary.exists {
            problems.add(
                format!("{file}: runs {program}, which does not exist"),
                event.clone(),
                fix.clone(),
            );
        } else if !binary.this_toolgate {
            let version = binary.version.as_deref().unwrap_or("version not asked");
            problems.add(
                format!("{file}: runs {program} ({version}), not this toolgate ({exe})"),
                event.clone(),
                fix.clone(),
            );
        }
        if !differs.is_empty() {
            problems.add(
                format!(
                    "{file}: not the entry install writes now: {}",
                    toolgate::text::sanitize(&differs.join("; "))
                ),
                event.clone(),
                fix.clone(),
            );
        }
        if !report.events.contains(&event) {
            report.events.push(event.clone());
        } else {
            problems.add(
                format!(
                    "{file}: more than one toolgate entry (toolgate runs more than once per call)"
                ),
                event.clone(),
                fix.clone(),
            );
        }
        report.entries.push(EntryReport {
            event,
            command: argv,
            binary,
            current: differs.is_empty(),
            differs,
        });
    }
    report.missing_events = spec
        .events
        .iter()
        .filter(|e| !report.events.iter().any(|have| have == *e))
        .map(|e| (*e).to_owned())
        .collect();
    if report.missing_events.is_empty() {
        report.status = "installed";
    } else {
        report.status = "partial";
        problems.add(
            format!(
                "{file}: toolgate is not installed for {} (those calls are not guarded)",
                report.missing_events.join(", ")
            ),
            String::new(),
            fix,
        );
    }
    report
}
