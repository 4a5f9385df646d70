//! What a workspace command runs, read closed-world: toolgate names every
//! workspace file the command will execute or load as code, or it refuses
//! the hook at review time and says what it could not see.
//!
//! # Why closed-world
//!
//! The first trust gate parsed argv to *guess* the script (skip options,
//! take the first word), and the repository controls what really runs: a
//! `-m` module, a value-taking option read as the script
//! (`python3 -uW ignore g.py` pinned `ignore`), a wrapper (`timeout 5 python3
//! g.py`, `env -S …`), a preload (`node -r ./pre.js`), an interpreter inside
//! the workspace (a virtualenv whose `site-packages/*.pth` runs on every
//! call). Each of those ran code the user never reviewed. So the reading
//! here accepts only what it understands completely and refuses the rest:
//!
//! - the program is an **interpreter toolgate knows** (Python 3, bash, sh,
//!   Node.js, Perl — the ones on the machines it is tested on), found
//!   outside the workspace, given only **options from its table** (which
//!   take a value, which cluster, which end the options), and then a
//!   **script inside the workspace**; or
//! - the program is a **file inside the workspace**: a native (ELF) binary,
//!   or a script whose `#!` line names a known interpreter outside the
//!   workspace (directly, or as `/usr/bin/env NAME`), which toolgate then
//!   starts itself, so no `PATH` lookup happens at run time; or
//!
//! Anything else — an unknown program or wrapper, an option not in the
//! table, `-m`, a preload, a shebang that cannot be followed, a script
//! outside the workspace, an interpreter inside it, and **inline code**
//! (`sh -c '…'`, `python3 -c`, `node -e`, `perl -e`) — is refused with what
//! was not understood and how to write the hook so it can be. Inline code is
//! pinned as text, but what it runs is not visible without parsing a shell
//! (`sh -c ./hooks/x.sh` runs a workspace file from the workspace, not from
//! a pinned copy; Python's `-c` and Node's `-e` also import from the
//! working directory first): closed world means refusing it, not guessing.
//!
//! The option tables list only what a guard needs; an option missing from a
//! table is refused, never skipped. `tests` checks each entry against the
//! interpreter's own `--help` and runs the interpreter on the argv shapes
//! the tables accept to see that the file it runs is the one named here.

mod tables;

use crate::safe_fs::{OwnershipError, ReadFileError};
use std::path::{Path, PathBuf};
use tables::{Family, Scan, ScanError, scan};

/// Why toolgate cannot see what a workspace command runs: what it did not
/// understand, for the trust review (which adds [`HOW`]).
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReadCommandError {
    /// The program (argv[0]).
    #[error("program {written:?}{why}")]
    Program {
        written: String,
        why: ProgramRefusal,
    },
    /// The `#!` line of a workspace script run as the program.
    #[error("program {written:?}: its #! line `#!{line}` {why}")]
    Shebang {
        written: String,
        line: String,
        why: ShebangRefusal,
    },
    /// The script handed to an interpreter.
    #[error("script {written:?}{why}")]
    Script { written: String, why: ScriptRefusal },
    /// The interpreter's options.
    #[error("{written}: {why}")]
    Options { written: String, why: ScanError },
}

/// What is wrong with a command's program (each says it after the name).
#[derive(Debug, thiserror::Error)]
pub(crate) enum ProgramRefusal {
    #[error(" does not exist")]
    Missing,
    #[error(" is not on the search path (outside the workspace)")]
    NotOnPath,
    #[error(": {0}")]
    Unreadable(std::io::Error),
    #[error(
        " is a link inside the workspace to {} outside it (a virtualenv's interpreter reads \
         the workspace's site-packages); name the interpreter outside the workspace",
        target.display()
    )]
    LinkOut { target: PathBuf },
    #[error(
        " is an interpreter inside the workspace (a virtualenv?); move it out of the \
         workspace or name the system interpreter"
    )]
    InterpreterInside,
    #[error(" is outside the workspace and could be changed by others: {0}")]
    Replaceable(OwnershipError),
    #[error(
        " is outside the workspace and is not an interpreter toolgate knows (python3, bash, \
         sh, node, perl), so toolgate cannot see what it runs{}",
        if *wrapper { " (a wrapper: it starts another program)" } else { "" }
    )]
    Unknown { wrapper: bool },
    #[error(" {}", crate::text::error_chain(.0))]
    NotRegular(ReadFileError),
    #[error(
        " is neither a native binary nor a script with a #! line, so toolgate cannot tell \
         what runs it"
    )]
    NeitherBinaryNorScript,
    #[error(": its #! line is longer than toolgate reads (255 bytes)")]
    LongShebang,
    #[error(": its #! line is not UTF-8")]
    ShebangNotUtf8,
}

/// What is wrong with a `#!` line.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ShebangRefusal {
    #[error("does not name an absolute interpreter")]
    Relative,
    #[error("names env without a program")]
    EnvAlone,
    #[error(
        "passes options or settings to env, which toolgate does not read; name the \
         interpreter and nothing else"
    )]
    EnvOptions,
    #[error("names {0}, which is not on the search path outside the workspace")]
    NotOnPath(String),
    #[error("names an interpreter that cannot be found: {0}")]
    Missing(std::io::Error),
    #[error("names an interpreter inside the workspace; name one installed outside it")]
    InterpreterInside,
    #[error("names an interpreter others could change: {0}")]
    Replaceable(OwnershipError),
    #[error("names an interpreter toolgate does not know (python3, bash, sh, node, perl)")]
    Unknown,
    #[error("passes an argument toolgate does not read")]
    ExtraArgument,
    #[error("{0}")]
    Options(ScanError),
}

/// What is wrong with the script an interpreter is handed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ScriptRefusal {
    #[error(": {0}")]
    Unreadable(std::io::Error),
    #[error(
        " resolves to {}, outside the workspace, where toolgate cannot pin it; keep the \
         hook's code inside the workspace",
        target.display()
    )]
    Outside { target: PathBuf },
    #[error(" {}", crate::text::error_chain(.0))]
    NotRegular(ReadFileError),
}

/// How a workspace command starts, once understood.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Launch {
    /// A native program inside the workspace (workspace-relative), run with
    /// the argv's other words.
    Program {
        /// Its path relative to the workspace root.
        rel: PathBuf,
        /// argv[1..].
        args: Vec<String>,
    },
    /// A known interpreter (outside the workspace) running a workspace
    /// script.
    Script {
        /// The interpreter, as found (absolute).
        interpreter: PathBuf,
        /// Its options before the script.
        options: Vec<String>,
        /// The script, relative to the workspace root.
        rel: PathBuf,
        /// The script's own arguments.
        args: Vec<String>,
    },
}

impl Launch {
    /// The program to exec and its arguments, with workspace files taken
    /// from `base` (the pinned snapshot, or the workspace itself).
    pub(crate) fn command(&self, base: &Path) -> (PathBuf, Vec<String>) {
        match self {
            Launch::Program { rel, args } => (base.join(rel), args.clone()),
            Launch::Script {
                interpreter,
                options,
                rel,
                args,
            } => {
                let mut all = options.clone();
                all.push(base.join(rel).to_string_lossy().into_owned());
                all.extend(args.iter().cloned());
                (interpreter.clone(), all)
            }
        }
    }

    /// The workspace file it runs (relative to the root).
    pub(crate) fn code_file(&self) -> &Path {
        match self {
            Launch::Program { rel, .. } | Launch::Script { rel, .. } => rel,
        }
    }
}

/// What a reading found: how the command starts, and the programs outside
/// the workspace it starts (pinned by path).
#[derive(Clone, Debug)]
pub(crate) struct Reading {
    pub(crate) launch: Launch,
    /// (as written, as found) for the interpreter, when there is one.
    pub(crate) interpreter: Option<(String, PathBuf)>,
    /// Whether the workspace code is argv[0] itself (a native binary or a
    /// `#!` script) rather than a script handed to an interpreter.
    pub(crate) code_is_program: bool,
}

/// What to say after a refusal: how to write the hook so it can be read.
pub(crate) const HOW: &str = "name a script inside the workspace directly (\"command\": \
     [\"python3\", \"hooks/guard.py\"] or [\"hooks/guard.sh\"] with a #! line), with only \
     the interpreter options toolgate knows, and list other files it loads in `trust_files`";

/// Reads one command: `program` as the loader resolved it (`root`-joined
/// when written as a path), `search` the search path for bare names and
/// `#!/usr/bin/env NAME`.
pub(crate) fn read(
    argv: &[String],
    program: &Path,
    root: &Path,
    search: &dyn Fn(&str) -> Option<PathBuf>,
) -> Result<Reading, ReadCommandError> {
    let written = argv.first().map(String::as_str).unwrap_or_default();
    let rest = &argv[1.min(argv.len())..];
    let refuse = |why| ReadCommandError::Program {
        written: written.to_owned(),
        why,
    };
    let found = if written.contains('/') {
        let joined = root.join(program);
        if !joined.exists() {
            return Err(refuse(ProgramRefusal::Missing));
        }
        joined
    } else {
        search(written).ok_or_else(|| refuse(ProgramRefusal::NotOnPath))?
    };
    let inside_as_written = std::path::absolute(&found)
        .map(|p| p.starts_with(root))
        .unwrap_or(false);
    let canonical = found
        .canonicalize()
        .map_err(|e| refuse(ProgramRefusal::Unreadable(e)))?;
    let inside = canonical.starts_with(root);
    if inside_as_written && !inside {
        return Err(refuse(ProgramRefusal::LinkOut { target: canonical }));
    }
    if inside {
        let name = file_name(&canonical);
        if Family::of(&name).is_some() || Family::of(&file_name(Path::new(written))).is_some() {
            return Err(refuse(ProgramRefusal::InterpreterInside));
        }
        let rel = canonical
            .strip_prefix(root)
            .map(Path::to_owned)
            .unwrap_or_default();
        return read_workspace_program(written, &canonical, rel, rest, root, search);
    }
    crate::safe_fs::writable_only_by_owner(&canonical)
        .map_err(|why| refuse(ProgramRefusal::Replaceable(why)))?;
    let family = Family::of(&file_name(Path::new(written)))
        .or_else(|| Family::of(&file_name(&canonical)))
        .ok_or_else(|| {
            refuse(ProgramRefusal::Unknown {
                wrapper: WRAPPERS.contains(&file_name(Path::new(written)).as_str()),
            })
        })?;
    let interpreter = std::path::absolute(&found).unwrap_or(found);
    import_roots_owned(family, &interpreter, &canonical)
        .map_err(|why| refuse(ProgramRefusal::Replaceable(why)))?;
    let Scan(at) = scan(family.table(), rest).map_err(|why| ReadCommandError::Options {
        written: written.to_owned(),
        why,
    })?;
    let launch = Launch::Script {
        interpreter: interpreter.clone(),
        options: rest[..at].to_vec(),
        rel: workspace_script(&rest[at], root)?,
        args: rest[at + 1..].to_vec(),
    };
    Ok(Reading {
        launch,
        interpreter: Some((written.to_owned(), interpreter)),
        code_is_program: false,
    })
}

/// Where the script is in `argv` when `argv[0]` is an interpreter toolgate
/// knows (by the name written) and its options are all ones the tables
/// read: the file a review would pin as the hook's script. `None` when
/// toolgate cannot tell (another program, inline code, `-m`, an option it
/// does not read, the script read from stdin as `-`): then nothing is
/// claimed about a script. The loader uses it to report a missing script
/// when the config is loaded, as it reports a missing program, with the
/// same list of interpreters and the same reading of their options as
/// trust (one list, so the two cannot disagree about which word is the
/// script).
pub(crate) fn interpreter_script(argv: &[String]) -> Option<usize> {
    let (first, rest) = argv.split_first()?;
    let family = Family::of(&file_name(Path::new(first)))?;
    let Scan(at) = scan(family.table(), rest).ok()?;
    (rest[at] != "-").then_some(at + 1)
}

/// Programs that start another program from their arguments: refused with
/// a word that says so.
const WRAPPERS: &[&str] = &[
    "env",
    "timeout",
    "nice",
    "nohup",
    "stdbuf",
    "xargs",
    "sudo",
    "doas",
    "setsid",
    "ionice",
    "taskset",
    "chrt",
    "time",
    "flock",
    "busybox",
    "exec",
    "strace",
    "ltrace",
    "unshare",
    "nsenter",
    "chroot",
    "runuser",
    "su",
    "script",
    "watch",
    "parallel",
    "firejail",
    "bwrap",
    "systemd-run",
    "prlimit",
    "setpriv",
    "caffeinate",
    "uv",
    "poetry",
    "pipenv",
    "npx",
    "pnpm",
    "yarn",
    "npm",
    "make",
    "direnv",
];

/// A script named on an interpreter's command line: must be a regular file
/// inside the workspace. Returns it relative to the root.
fn workspace_script(written: &str, root: &Path) -> Result<PathBuf, ReadCommandError> {
    let refuse = |why| ReadCommandError::Script {
        written: written.to_owned(),
        why,
    };
    let joined = root.join(written);
    let canonical = joined
        .canonicalize()
        .map_err(|e| refuse(ScriptRefusal::Unreadable(e)))?;
    let Ok(rel) = canonical.strip_prefix(root) else {
        return Err(refuse(ScriptRefusal::Outside { target: canonical }));
    };
    crate::safe_fs::regular_file(&canonical).map_err(|e| refuse(ScriptRefusal::NotRegular(e)))?;
    Ok(rel.to_owned())
}

/// A program inside the workspace: a native binary, or a script whose `#!`
/// names a known interpreter outside the workspace.
fn read_workspace_program(
    written: &str,
    path: &Path,
    rel: PathBuf,
    rest: &[String],
    root: &Path,
    search: &dyn Fn(&str) -> Option<PathBuf>,
) -> Result<Reading, ReadCommandError> {
    use std::io::Read;
    let refuse = |why| ReadCommandError::Program {
        written: written.to_owned(),
        why,
    };
    crate::safe_fs::regular_file(path).map_err(|e| refuse(ProgramRefusal::NotRegular(e)))?;
    let mut head = [0u8; 256];
    let n = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut head))
        .map_err(|e| refuse(ProgramRefusal::Unreadable(e)))?;
    let head = &head[..n];
    if head.starts_with(b"\x7fELF") {
        return Ok(Reading {
            launch: Launch::Program {
                rel,
                args: rest.to_vec(),
            },
            interpreter: None,
            code_is_program: true,
        });
    }
    let Some(line) = head.strip_prefix(b"#!") else {
        return Err(refuse(ProgramRefusal::NeitherBinaryNorScript));
    };
    let end = line
        .iter()
        .position(|&b| b == b'\n')
        .ok_or_else(|| refuse(ProgramRefusal::LongShebang))?;
    let line = std::str::from_utf8(&line[..end])
        .map_err(|_| refuse(ProgramRefusal::ShebangNotUtf8))?
        .trim();
    let (found, options) =
        read_shebang(line, root, search).map_err(|why| ReadCommandError::Shebang {
            written: written.to_owned(),
            line: line.to_owned(),
            why,
        })?;
    Ok(Reading {
        launch: Launch::Script {
            interpreter: found.clone(),
            options,
            rel,
            args: rest.to_vec(),
        },
        interpreter: Some((format!("#!{line}"), found)),
        code_is_program: true,
    })
}

/// The interpreter a `#!` line names (as found) and its option, if the
/// line can be followed: an absolute path or `/usr/bin/env NAME`, outside
/// the workspace, of a known family, with an option its table knows.
fn read_shebang(
    line: &str,
    root: &Path,
    search: &dyn Fn(&str) -> Option<PathBuf>,
) -> Result<(PathBuf, Vec<String>), ShebangRefusal> {
    // The kernel splits a #! line into the interpreter and at most one
    // argument (the rest of the line, spaces included).
    let (interp, arg) = match line.split_once([' ', '\t']) {
        Some((i, a)) => (i, Some(a.trim())),
        None => (line, None),
    };
    if !interp.starts_with('/') {
        return Err(ShebangRefusal::Relative);
    }
    let (name, found, options) = if file_name(Path::new(interp)) == "env" {
        let name = arg.ok_or(ShebangRefusal::EnvAlone)?;
        if name.starts_with('-') || name.contains([' ', '\t', '=']) {
            return Err(ShebangRefusal::EnvOptions);
        }
        let found = search(name).ok_or_else(|| ShebangRefusal::NotOnPath(name.to_owned()))?;
        (name.to_owned(), found, Vec::new())
    } else {
        let found = PathBuf::from(interp);
        (
            file_name(&found),
            found,
            arg.map(|a| vec![a.to_owned()]).unwrap_or_default(),
        )
    };
    let canonical = found.canonicalize().map_err(ShebangRefusal::Missing)?;
    if canonical.starts_with(root) {
        return Err(ShebangRefusal::InterpreterInside);
    }
    crate::safe_fs::writable_only_by_owner(&canonical).map_err(ShebangRefusal::Replaceable)?;
    let family = Family::of(&name).ok_or(ShebangRefusal::Unknown)?;
    let absolute = std::path::absolute(&found).unwrap_or_else(|_| found.clone());
    import_roots_owned(family, &absolute, &canonical).map_err(ShebangRefusal::Replaceable)?;
    // The #! argument is an option (the script follows it): it must be one
    // the table knows. `scan` sees it followed by a stand-in script.
    if !options.is_empty() {
        let probe: Vec<String> = options.iter().cloned().chain(["script".into()]).collect();
        match scan(family.table(), &probe) {
            Ok(Scan(at)) if at == options.len() => {}
            Ok(_) => return Err(ShebangRefusal::ExtraArgument),
            Err(why) => return Err(ShebangRefusal::Options(why)),
        }
    }
    Ok((found, options))
}

/// The folders an interpreter loads code from before (and besides) the
/// script, found from where it is installed, as written and resolved:
/// for `<prefix>/bin/python3`, `<prefix>/lib/python3*/{site,dist}-packages`,
/// `<prefix>/lib/python3/dist-packages`, `<prefix>/local/lib/python3*/…`;
/// for a version manager's `<root>/shims/python3` (pyenv), every installed
/// version's; for node, `<prefix>/lib/node_modules` and `<prefix>/lib/node`.
/// Bash, sh and perl: none toolgate reads (their start-up files are the
/// environment's, which a confined hook does not inherit).
fn import_roots(family: Family, written: &Path, canonical: &Path) -> Vec<PathBuf> {
    let mut prefixes = Vec::new();
    for program in [written, canonical] {
        let Some(dir) = program.parent() else {
            continue;
        };
        match (dir.file_name().and_then(|n| n.to_str()), dir.parent()) {
            (Some("bin" | "sbin"), Some(prefix)) => prefixes.push(prefix.to_owned()),
            (Some("shims"), Some(root)) => {
                for version in std::fs::read_dir(root.join("versions"))
                    .into_iter()
                    .flatten()
                {
                    prefixes.extend(version.ok().map(|v| v.path()));
                }
            }
            _ => {}
        }
    }
    prefixes.sort();
    prefixes.dedup();
    let children = |dir: PathBuf| -> Vec<PathBuf> {
        std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .collect()
    };
    let mut roots = Vec::new();
    for prefix in prefixes {
        match family {
            Family::Python => {
                for lib in [
                    prefix.join("lib"),
                    prefix.join("lib64"),
                    prefix.join("local/lib"),
                ] {
                    for version in children(lib) {
                        let name = file_name(&version);
                        if name.starts_with("python3") {
                            roots.push(version.join("site-packages"));
                            roots.push(version.join("dist-packages"));
                        }
                    }
                }
            }
            Family::Node => {
                roots.push(prefix.join("lib/node_modules"));
                roots.push(prefix.join("lib/node"));
            }
            Family::Bash | Family::Sh | Family::Perl => {}
        }
    }
    roots.retain(|r| r.is_dir());
    roots
}

/// Every import root of the interpreter ([`import_roots`]), each `.pth`
/// file and each entry directly in it, is the user's or root's and
/// writable by nobody else, as the interpreter itself must be: another
/// user's `.pth` in `site-packages` ran before a reviewed hook and decided
/// the call.
fn import_roots_owned(
    family: Family,
    written: &Path,
    canonical: &Path,
) -> Result<(), OwnershipError> {
    for root in import_roots(family, written, canonical) {
        crate::safe_fs::owner_only(&root, false)?;
        for entry in std::fs::read_dir(&root).into_iter().flatten().flatten() {
            // A folder in it too: no sticky bit lets others in.
            crate::safe_fs::owner_only(&entry.path(), false)?;
        }
    }
    Ok(())
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests;
