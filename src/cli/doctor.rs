//! `toolgate doctor`: is every installed agent wired so that toolgate
//! actually guards it?
//!
//! # Why
//!
//! Most agents let a call through when their hook is missing, fails or
//! times out, and none of them says so where the user looks. A moved
//! binary, an entry written before the agent had a fail-closed switch, an
//! event left out, an agent upgraded past what toolgate was tested with, a
//! trust step never taken (Codex skips hooks nobody reviewed): each leaves
//! the agent unguarded while everything looks installed. Doctor reads the
//! same entries `install` writes (`toolgate::agent::Wiring`), from each
//! agent's spec, and says for each problem what fixes it. It runs nothing
//! a project chose: a binary inside the project is not asked its version.

use super::install::{Place, read, this_toolgate};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};
use toolgate::agent::AgentHook as _;
use toolgate::agent::{Entry, Outward, Wiring, trust_done};

/// Check every agent's toolgate wiring
///
/// For every agent, in the user's settings and the project's: whether
/// toolgate is installed and for which events, whether each entry runs
/// this toolgate and is what `toolgate install` writes now (the fail-closed
/// switch where the agent has one), the agent's version against the
/// releases toolgate was tested with (`<agent> --version`, found on PATH),
/// and the agent's own trust step. Each problem comes with its fix.
#[derive(clap::Args)]
#[command(
    after_help = "Exit status: 0 when no problem was found, 1 otherwise. An agent toolgate \
    is not installed for has none, unless its settings file cannot be read.\n\n\
    Examples:\n  \
    toolgate doctor\n  \
    toolgate doctor --project ~/src/app --json"
)]
pub(crate) struct Args {
    /// Print one JSON object (a stable format for scripts) instead of lines.
    #[arg(long)]
    json: bool,
    /// The project whose settings are checked (default: the current
    /// directory).
    #[arg(long, value_name = "DIR")]
    project: Option<PathBuf>,
}

/// How long an agent's (or another toolgate's) `--version` may take.
const VERSION_TIMEOUT: Duration = Duration::from_secs(10);

/// Everything doctor found: the `--json` format.
#[derive(Serialize)]
struct Report {
    /// This toolgate's canonical path.
    toolgate: String,
    /// Its version.
    version: &'static str,
    /// The project checked.
    project: String,
    /// Whether no agent has a problem.
    ok: bool,
    agents: Vec<AgentReport>,
}

#[derive(Serialize)]
struct AgentReport {
    agent: &'static str,
    /// Installed in at least one scope.
    installed: bool,
    scopes: Vec<ScopeReport>,
    cli: CliReport,
    /// The agent's own trust step, when it has one (and toolgate is
    /// installed).
    trust: Option<TrustReport>,
    problems: Vec<Problem>,
    /// Reminders that do not make doctor fail.
    notes: Vec<String>,
}

#[derive(Serialize)]
struct ScopeReport {
    /// `user` or `project`.
    scope: &'static str,
    file: String,
    /// `installed`, `partial`, `not-installed`, `no-file` or `unreadable`.
    status: &'static str,
    /// The events toolgate has an entry for.
    events: Vec<String>,
    /// The events the agent's spec lists that have none.
    missing_events: Vec<String>,
    entries: Vec<EntryReport>,
    /// Why the file could not be read.
    error: Option<String>,
}

#[derive(Serialize)]
struct EntryReport {
    event: String,
    command: Vec<String>,
    binary: BinaryReport,
    /// Whether it is what `toolgate install` writes now.
    current: bool,
    /// How it differs from that.
    differs: Vec<String>,
}

#[derive(Serialize)]
struct BinaryReport {
    path: String,
    exists: bool,
    this_toolgate: bool,
    /// Its `--version`, when it is another binary doctor could ask.
    version: Option<String>,
}

#[derive(Serialize)]
struct CliReport {
    command: &'static str,
    /// Where it was found on PATH.
    path: Option<String>,
    version: Option<String>,
    /// Whether `version` is one of `tested_versions` (`null`: unknown).
    tested: Option<bool>,
    tested_versions: &'static [&'static str],
}

#[derive(Serialize)]
struct TrustReport {
    /// What the user must do.
    step: &'static str,
    /// Whether toolgate can tell if it is done.
    checked: bool,
    /// Whether it is done (`null`: toolgate cannot tell).
    done: Option<bool>,
    error: Option<String>,
}

#[derive(Serialize)]
struct Problem {
    problem: String,
    fix: String,
}

pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let exe = this_toolgate()?;
    let root = match args.project {
        Some(dir) => dir,
        None => std::env::current_dir()?,
    };
    let root = root
        .canonicalize()
        .map_err(|e| anyhow::anyhow!("project {}: {e}", root.display()))?;
    let home = super::env::dir("HOME");
    let agents = Outward::ALL
        .iter()
        .map(|&agent| check_agent(agent, &exe, &root, home.as_deref()))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let report = Report {
        toolgate: exe,
        version: env!("CARGO_PKG_VERSION"),
        project: root.display().to_string(),
        ok: agents.iter().all(|a| a.problems.is_empty()),
        agents,
    };
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_report(&report);
    }
    Ok(if report.ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(super::EXIT_ERROR)
    })
}

fn check_agent(
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
    Ok(AgentReport {
        agent: agent.name(),
        installed,
        scopes,
        cli,
        trust,
        problems: problems.into_list(),
        notes,
    })
}

/// Problems, with those that differ only in their event said once.
#[derive(Default)]
struct Problems(
    BTreeMap<(String, String), Vec<String>>,
    Vec<(String, String)>,
);

impl Problems {
    /// `what` (said of `event`, when not empty) and its `fix`.
    fn add(&mut self, what: String, event: String, fix: String) {
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

/// The binary an entry runs: whether it is this toolgate, else its
/// version (unless it lies inside the project: doctor runs nothing a
/// repository chose).
fn check_binary(program: &str, exe: &str, project: Option<&Path>) -> BinaryReport {
    let path = Path::new(program);
    let canonical = path.canonicalize().ok();
    let exists = path.is_absolute() && path.is_file();
    // The lean client beside this toolgate (what install writes while a
    // server runs) is this toolgate too.
    let lean = Path::new(exe).with_file_name(toolgate::agent::LEAN_CLIENT);
    let this_toolgate = canonical
        .as_deref()
        .is_some_and(|c| c == Path::new(exe) || c == lean);
    let inside_project = project
        .zip(canonical.as_deref())
        .is_some_and(|(root, binary)| binary.starts_with(root));
    let version = (exists && !this_toolgate && !inside_project)
        .then(|| version_output(path))
        .flatten()
        .and_then(|out| {
            out.lines()
                .next()
                .map(|l| toolgate::text::sanitize(l.trim()))
        });
    BinaryReport {
        path: program.to_owned(),
        exists,
        this_toolgate,
        version,
    }
}

/// The version of `agent`'s CLI on PATH, when it answers.
pub(crate) fn agent_version(agent: Outward) -> Option<String> {
    check_cli(agent).version
}

fn check_cli(agent: Outward) -> CliReport {
    let spec = agent.install();
    let path = on_path(spec.agent_cli);
    let version = path
        .as_deref()
        .and_then(version_output)
        .and_then(|out| first_version(&out));
    CliReport {
        command: spec.agent_cli,
        path: path.map(|p| p.display().to_string()),
        tested: version
            .as_ref()
            .map(|v| spec.tested_versions.contains(&v.as_str())),
        version,
        tested_versions: spec.tested_versions,
    }
}

/// `program` found in an absolute directory of `PATH`, as an executable
/// file.
fn on_path(program: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = super::env::search_path()?;
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(program))
        .find(|candidate| {
            std::fs::metadata(candidate)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// What `program --version` prints (stdout, else stderr), within
/// [`VERSION_TIMEOUT`].
fn version_output(program: &Path) -> Option<String> {
    let mut child = Command::new(program)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    let deadline = Instant::now() + VERSION_TIMEOUT;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let out = child.wait_with_output().ok()?;
    let text = if out.stdout.iter().any(|b| !b.is_ascii_whitespace()) {
        out.stdout
    } else {
        out.stderr
    };
    Some(String::from_utf8_lossy(&text).into_owned())
}

/// The first `x.y.z` in `text`.
fn first_version(text: &str) -> Option<String> {
    regex::Regex::new(r"\d+\.\d+\.\d+")
        .ok()?
        .find(text)
        .map(|m| m.as_str().to_owned())
}

fn print_report(report: &Report) {
    use super::colour::decision;
    outln!("toolgate {} ({})", report.toolgate, report.version);
    outln!("project  {}", report.project);
    let mut count = 0;
    for agent in &report.agents {
        outln!("");
        let state = if agent.installed {
            decision("allow", "installed")
        } else {
            "not installed".to_owned()
        };
        outln!("{}: {state}", agent.agent);
        for scope in &agent.scopes {
            let what = match scope.status {
                "installed" => scope.events.join(", "),
                "partial" => format!(
                    "{}; missing {}",
                    scope.events.join(", "),
                    scope.missing_events.join(", ")
                ),
                "not-installed" => "no toolgate entry".to_owned(),
                "no-file" => "no file".to_owned(),
                _ => scope.error.clone().unwrap_or_default(),
            };
            outln!("  {:<8} {}: {what}", scope.scope, scope.file);
        }
        let cli = &agent.cli;
        let version = match (&cli.path, &cli.version, cli.tested) {
            (None, _, _) => format!("{}: not found on PATH", cli.command),
            (Some(path), None, _) => format!("{} ({path}): version unknown", cli.command),
            (Some(path), Some(v), Some(true)) => format!("{} {v} ({path}): tested", cli.command),
            (Some(path), Some(v), _) => format!(
                "{} {v} ({path}): not tested; tested are {}",
                cli.command,
                cli.tested_versions.join(", ")
            ),
        };
        outln!("  {:<8} {version}", "agent");
        if let Some(trust) = &agent.trust
            && trust.done == Some(true)
        {
            outln!("  {:<8} done", "trust");
        }
        for problem in &agent.problems {
            count += 1;
            outln!("  {} {}", decision("deny", "problem "), problem.problem);
            outln!("  {:<8} {}", "fix", problem.fix);
        }
        for note in &agent.notes {
            outln!("  {:<8} {note}", "note");
        }
    }
    outln!("");
    match count {
        0 => outln!("no problems"),
        1 => outln!("1 problem: its fix is above"),
        n => outln!("{n} problems: each fix is above"),
    }
}
