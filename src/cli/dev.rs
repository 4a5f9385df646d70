//! `toolgate dev [--workspace DIR] [PROJECT]`: the author's loop in one
//! command — build a `toolgate new` project, put what it built where a
//! workspace may name it, and run its fixtures.
//!
//! # Why a copy into the workspace, not a path to the project
//!
//! A workspace config may only name files in its own tree (`safe_fs::beneath`:
//! a repository must not point the user's agent at files elsewhere on the
//! machine), so a workspace cannot name `~/src/my-guard/out/my-guard.wasm`.
//! The built file is copied to `<workspace>/.toolgate/hooks/<name>/<file>`,
//! and the entry that names it is printed (or written, when the workspace has
//! no hooks.json yet). A folder per hook, because trust pins the whole folder
//! a command hook's code lives in: placing one hook must not change the
//! pinned tree of another (which would block its calls until re-trusted). An existing hooks.json is never edited: any edit of it
//! revokes the trust of every command hook in it, which the user must see
//! coming. The global config may name an absolute path and needs no trust,
//! which makes it the place to iterate; `dev` says so.
//!
//! # Why `toolgate test` is run as a subprocess
//!
//! The fixtures are run by `toolgate test` itself (this executable, as a
//! child), so `dev` reports exactly what the author would see running it by
//! hand, with its exit code (`0` all passed, `100` a fixture failed).

use anyhow::{Context, anyhow, bail};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Build a `toolgate new` project, place it in a workspace, run its fixtures.
///
/// Runs the project's ./build.sh; with --workspace, copies what the
/// project's .toolgate/hooks.json names (the component, or the script and its folder) to
/// <workspace>/.toolgate/hooks/<name>/ and prints the entry that names it there
/// (writing <workspace>/.toolgate/hooks.json when there is none); then
/// runs `toolgate test` on the project's fixtures (tests/).
#[derive(clap::Args)]
#[command(after_help = "Examples:\n  \
    toolgate new --lang rust no-sudo && cd no-sudo\n  \
    toolgate dev                        # build, then run tests/*.json\n  \
    toolgate dev --workspace ~/src/app  # and copy it into the workspace\n\n\
    A workspace command hook (a script) runs only once trusted, and again after\n\
    each change: `toolgate trust --workspace DIR`. A component needs no trust;\n\
    neither does anything in the global config (~/.config/toolgate/hooks.json).")]
pub(crate) struct Args {
    /// The workspace to place the built hook in (its .toolgate/hooks/<name>/).
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// The project made by `toolgate new` [default: the current directory].
    #[arg(value_name = "PROJECT", default_value = ".")]
    project: PathBuf,
}

/// What the project's hooks.json names for its own hook.
struct Built {
    /// The project's hook entry, as written.
    entry: serde_json::Map<String, Value>,
    /// `wasm` or `command`.
    field: &'static str,
    /// The file it names, inside the project.
    file: PathBuf,
}

pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let project = args
        .project
        .canonicalize()
        .with_context(|| format!("{}: no such project folder", args.project.display()))?;
    let name = project
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_owned();
    if !project.join("build.sh").is_file() || !project.join(".toolgate/hooks.json").is_file() {
        bail!(
            "{} is not a hook project: it needs build.sh and .toolgate/hooks.json \
             (`toolgate new --lang <language> <dir>` makes one)",
            project.display()
        );
    }
    eprintln!("toolgate dev: building {name} (./build.sh)");
    let status = std::process::Command::new(project.join("build.sh"))
        .current_dir(&project)
        .status()
        .with_context(|| format!("cannot run {}/build.sh", project.display()))?;
    if !status.success() {
        bail!("./build.sh failed ({status}); nothing placed, no fixtures run");
    }
    let built = built(&project, &name)?;
    if let Some(ws) = &args.workspace {
        place(&project, &built, ws)?;
    } else {
        eprintln!(
            "toolgate dev: built {}; to use it, either name it in your global config \
             (~/.config/toolgate/hooks.json: an absolute path is fine there, and a global \
             hook needs no trust), or run `toolgate dev --workspace <dir>` to place it in a \
             workspace",
            built.file.display()
        );
    }
    let exe = std::env::current_exe().context("cannot tell where this toolgate is")?;
    eprintln!(
        "toolgate dev: running the fixtures (toolgate test --hooks {name}/.toolgate/hooks.json tests)"
    );
    let status = std::process::Command::new(exe)
        .args(["test", "--hooks"])
        .arg(project.join(".toolgate").join("hooks.json"))
        .arg(project.join("tests"))
        .current_dir(&project)
        // The project's own hooks only, as its test.sh runs them: no global
        // hooks from the user's config.
        .env("TOOLGATE_CONFIG_DIR", project.join("tests"))
        .status()
        .context("cannot run toolgate test")?;
    if built.field == "command" && !status.success() {
        eprintln!(
            "toolgate dev: a script hook in a workspace runs only once trusted, and again \
             after each edit: toolgate trust --workspace {}",
            project.display()
        );
    }
    Ok(ExitCode::from(
        status
            .code()
            .and_then(|c| u8::try_from(c).ok())
            .unwrap_or(1),
    ))
}

/// The project's own hook (named as the project) in its hooks.json, and
/// the file it runs.
fn built(project: &Path, name: &str) -> anyhow::Result<Built> {
    let path = project.join(".toolgate/hooks.json");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let config: Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    let entry = config["hooks"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|h| h["name"] == name)
        .and_then(Value::as_object)
        .ok_or_else(|| anyhow!("{} has no hook named {name:?}", path.display()))?
        .clone();
    let (field, written) = match (&entry.get("wasm"), &entry.get("command")) {
        (Some(Value::String(w)), _) => ("wasm", w.clone()),
        (_, Some(Value::Array(argv))) => match argv.as_slice() {
            [Value::String(program)] if program.contains('/') => ("command", program.clone()),
            _ => bail!(
                "{}: hook {name:?} runs {argv:?}; `dev` places a hook that is one script \
                 or program of the project's (\"command\": [\"hooks/{name}.py\"])",
                path.display()
            ),
        },
        _ => bail!(
            "{}: hook {name:?} names neither a `wasm` component nor a `command`",
            path.display()
        ),
    };
    let file = project.join(&written);
    if !file.is_file() {
        bail!(
            "./build.sh succeeded but {} is not there: the project's hooks.json names {written:?}",
            file.display()
        );
    }
    Ok(Built { entry, field, file })
}

/// Copies the built file into `ws`'s `.toolgate/hooks/<name>/`, and says (or
/// writes, when there is no workspace config) the entry that names it.
fn place(project: &Path, built: &Built, ws: &Path) -> anyhow::Result<()> {
    let ws = ws
        .canonicalize()
        .with_context(|| format!("{}: no such workspace", ws.display()))?;
    if ws == project {
        bail!("the workspace is the project itself: give another --workspace");
    }
    let file_name = built
        .file
        .file_name()
        .ok_or_else(|| anyhow!("{} has no file name", built.file.display()))?;
    let name = built
        .entry
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let rel = Path::new(".toolgate/hooks").join(&name).join(file_name);
    let dest = ws.join(&rel);
    let dir = ws.join(".toolgate/hooks").join(&name);
    // A workspace is someone's repository: a link in it may point anywhere,
    // so nothing is written through one.
    for part in [".toolgate", ".toolgate/hooks"] {
        refuse_link(&ws.join(part))?;
    }
    refuse_link(&dir)?;
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    refuse_link(&dir)?;
    // A component is one file. A script runs from the folder it lives in
    // (trust pins and copies that folder), so its siblings come with it.
    let files = match built.field {
        "wasm" => vec![(PathBuf::from(file_name), built.file.clone())],
        _ => {
            let from = built.file.parent().unwrap_or(project);
            let mut files = Vec::new();
            siblings(from, Path::new(""), &mut files)?;
            files
        }
    };
    for (rel, from) in &files {
        put(&dir, rel, from)?;
    }
    let written = rel.display().to_string();
    let mut entry = built.entry.clone();
    entry.insert(
        built.field.to_owned(),
        match built.field {
            "wasm" => json!(written),
            _ => json!([written]),
        },
    );
    let entry = entry_text(&entry, built.field);
    eprintln!("toolgate dev: placed {}", dest.display());
    let config = ws.join(toolgate::config::WORKSPACE_FILE);
    refuse_link(&config)?;
    if std::fs::symlink_metadata(&config).is_err() {
        let text = format!("{{\n  \"schema\": 1,\n  \"hooks\": [\n    {entry}\n  ]\n}}\n");
        super::write_file(&config, &text, false)?;
        eprintln!(
            "toolgate dev: wrote {} naming it ({written})",
            config.display()
        );
    } else if !names(&config, &name, built.field, &written) {
        eprintln!(
            "toolgate dev: {} does not name it yet; add this entry to its \"hooks\" \
             (an edit of hooks.json revokes the trust of the workspace's command hooks: \
             `toolgate trust --workspace {}` again after it):\n{}",
            config.display(),
            ws.display(),
            entry
        );
    }
    if built.field == "command" {
        eprintln!(
            "toolgate dev: a script in a workspace runs only once trusted, and each edit \
             blocks its calls until trusted again: toolgate trust --workspace {}\n\
             (a global hook needs no trust: name {} in ~/.config/toolgate/hooks.json \
             while you iterate)",
            ws.display(),
            built.file.display()
        );
    }
    Ok(())
}

/// The most files `dev` copies with a script.
const MAX_FILES: usize = 200;

/// Every regular file under `dir` (as `(relative path, path)`), leaving out
/// bytecode (trust leaves it out too) and refusing links.
fn siblings(dir: &Path, rel: &Path, out: &mut Vec<(PathBuf, PathBuf)>) -> anyhow::Result<()> {
    let here = dir.join(rel);
    for entry in
        std::fs::read_dir(&here).with_context(|| format!("cannot read {}", here.display()))?
    {
        let entry = entry.with_context(|| format!("cannot read {}", here.display()))?;
        let name = entry.file_name();
        let text = name.to_string_lossy();
        if text == "__pycache__" || text.ends_with(".pyc") || text.ends_with(".pyo") {
            continue;
        }
        let kind = entry.file_type()?;
        let child = rel.join(&name);
        if kind.is_dir() {
            siblings(dir, &child, out)?;
        } else if kind.is_file() {
            out.push((child, entry.path()));
            if out.len() > MAX_FILES {
                bail!(
                    "{} holds more than {MAX_FILES} files: give the script a folder of its own",
                    dir.display()
                );
            }
        } else {
            bail!("{} is not a regular file or folder", entry.path().display());
        }
    }
    Ok(())
}

/// Copies `from` to `dir/rel`, keeping whether it is executable: written
/// aside and renamed, so an agent loading the workspace meanwhile reads the
/// old file or the new one, never half of one; never through a link.
fn put(dir: &Path, rel: &Path, from: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let dest = dir.join(rel);
    let parent = dest.parent().unwrap_or(dir);
    for sub in rel.parent().into_iter().flat_map(Path::ancestors) {
        refuse_link(&dir.join(sub))?;
    }
    std::fs::create_dir_all(parent)
        .with_context(|| format!("cannot create {}", parent.display()))?;
    for sub in rel.parent().into_iter().flat_map(Path::ancestors) {
        refuse_link(&dir.join(sub))?;
    }
    let bytes = std::fs::read(from).with_context(|| format!("cannot read {}", from.display()))?;
    let executable = std::fs::metadata(from).is_ok_and(|m| m.permissions().mode() & 0o111 != 0);
    let mut tmp = tempfile::NamedTempFile::new_in(parent)
        .with_context(|| format!("cannot write in {}", parent.display()))?;
    std::io::Write::write_all(&mut tmp, &bytes)
        .with_context(|| format!("cannot write in {}", parent.display()))?;
    let mode = if executable { 0o755 } else { 0o644 };
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(mode))
        .with_context(|| format!("cannot set the mode of {}", dest.display()))?;
    tmp.persist(&dest)
        .map_err(|e| e.error)
        .with_context(|| format!("cannot write {}", dest.display()))?;
    Ok(())
}

/// An error if `path` is a symbolic link (a missing path is fine).
fn refuse_link(path: &Path) -> anyhow::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => bail!(
            "{} is a symbolic link; toolgate dev writes nothing through one (replace it with \
             a folder or file)",
            path.display()
        ),
        _ => Ok(()),
    }
}

/// One hooks.json entry on one line, `name` and the field that names the
/// file first (serde_json's map would sort `config` before `name`).
fn entry_text(entry: &serde_json::Map<String, Value>, field: &str) -> String {
    let first = ["name", field];
    let keys = first.iter().copied().chain(
        entry
            .keys()
            .map(String::as_str)
            .filter(|k| !first.contains(k)),
    );
    let fields: Vec<String> = keys
        .filter_map(|k| Some(format!("{}: {}", json!(k), entry.get(k)?)))
        .collect();
    format!("{{{}}}", fields.join(", "))
}

/// Whether the workspace config at `path` has hook `name` naming `written`.
fn names(path: &Path, name: &str, field: &str, written: &str) -> bool {
    let Ok(config) = std::fs::read_to_string(path)
        .map_err(|_| ())
        .and_then(|t| serde_json::from_str::<Value>(&t).map_err(|_| ()))
    else {
        return false;
    };
    config["hooks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|h| h["name"] == name)
        .any(|h| match &h[field] {
            Value::String(w) => w == written,
            Value::Array(argv) => argv.first().and_then(Value::as_str) == Some(written),
            _ => false,
        })
}
