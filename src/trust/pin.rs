//! What trusting a workspace pins, computed the same way when the user
//! reviews it, when a process loads the config, and just before each call.

use crate::binding::BindingSpec;
use crate::binding::command::CommandSpec;
use crate::config::HookSpec;
use serde::{Deserialize, Serialize};
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

/// The most of one pinned file that is hashed (a program in a workspace
/// may be a compiled binary): 256 MiB.
const MAX_PINNED_BYTES: u64 = 256 << 20;

/// What one pinned file is to its hook.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, strum::Display)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
#[non_exhaustive]
pub enum Role {
    /// The program exec'd (argv[0]), or the interpreter `env` starts.
    Program,
    /// The script handed to a known interpreter as its first file argument.
    Script,
    /// A file the hook lists in `trust_files`.
    Declared,
    /// A WebAssembly component.
    Component,
}

/// One file a hook runs or reads, as pinned.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FilePin {
    /// What it is to the hook.
    pub role: Role,
    /// As written in hooks.json.
    pub written: String,
    /// Where it resolved (a workspace file after symlinks; a program found
    /// on `PATH` as found, so a virtualenv's interpreter stays itself);
    /// absent when nothing is there.
    pub path: Option<PathBuf>,
    /// Where a program outside the workspace finally resolves, when that is
    /// not `path`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<PathBuf>,
    /// The content digest, for a file inside the workspace and for a
    /// component. A program outside the workspace is pinned by path: its
    /// bytes change with every system upgrade, and it must not be writable
    /// by anyone but its owner (root or the user).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
}

impl FilePin {
    /// Whether it lies inside the workspace (pinned by content).
    pub fn inside(&self, root: &Path) -> bool {
        self.path.as_ref().is_some_and(|p| p.starts_with(root))
    }
}

/// One hook, as pinned.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HookPin {
    /// Its name.
    pub name: String,
    /// `subprocess` or `wasm`.
    pub binding: String,
    /// A command hook's argv, exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argv: Option<Vec<String>>,
    /// The files it runs or reads.
    pub files: Vec<FilePin>,
}

/// What a command hook's pin is computed from: kept by the gate so the
/// pin can be computed again before each call.
#[derive(Clone, Debug)]
pub(crate) struct CommandInputs {
    pub(crate) name: String,
    pub(crate) argv: Vec<String>,
    /// The program as the loader resolved it (a path) or as written.
    pub(crate) program: PathBuf,
    pub(crate) trust_files: Vec<(String, PathBuf)>,
    /// The canonical workspace root.
    pub(crate) root: PathBuf,
    pub(crate) search_path: Option<OsString>,
}

impl CommandInputs {
    pub(crate) fn of(
        spec: &CommandSpec,
        name: &str,
        root: &Path,
        search_path: Option<&OsStr>,
    ) -> Self {
        CommandInputs {
            name: name.to_owned(),
            argv: spec.command.clone(),
            program: spec.program.clone(),
            trust_files: spec.trust_files.clone(),
            root: root.to_owned(),
            search_path: search_path.map(OsStr::to_owned),
        }
    }

    /// The pin, or why this hook cannot be pinned (a program outside the
    /// workspace that others can write).
    pub(crate) fn pin(&self) -> Result<HookPin, String> {
        let mut files = Vec::new();
        let program_written = self.argv.first().cloned().unwrap_or_default();
        files.push(self.locate(Role::Program, &program_written, &self.program, true)?);
        let name = file_name(&program_written);
        let mut args = &self.argv[1.min(self.argv.len())..];
        let mut interpreter = name.clone();
        if name == "env" {
            // `env [-opts] [VAR=value ...] interpreter script`: env starts
            // the interpreter, so it is pinned too.
            let skip = args
                .iter()
                .take_while(|a| a.starts_with('-') || a.contains('='))
                .count();
            args = &args[skip..];
            if let Some(first) = args.first() {
                files.push(self.locate(Role::Program, first, Path::new(first), true)?);
                interpreter = file_name(first);
                args = &args[1..];
            }
        }
        if let Some(script) = script_argument(&interpreter, args) {
            files.push(self.locate(Role::Script, script, Path::new(script), false)?);
        }
        for (written, path) in &self.trust_files {
            files.push(self.locate(Role::Declared, written, path, false)?);
        }
        Ok(HookPin {
            name: self.name.clone(),
            binding: "subprocess".into(),
            argv: Some(self.argv.clone()),
            files,
        })
    }

    /// Pins one file. A program named without a `/` is looked up on the
    /// search path, as exec does; anything else resolves against the
    /// workspace root (the hook's working directory).
    fn locate(
        &self,
        role: Role,
        written: &str,
        path: &Path,
        program: bool,
    ) -> Result<FilePin, String> {
        let found = if program && !written.contains('/') {
            lookup(written, self.search_path.as_deref())
        } else {
            let joined = self.root.join(path);
            joined.exists().then_some(joined)
        };
        let Some(found) = found else {
            return Ok(FilePin {
                role,
                written: written.to_owned(),
                path: None,
                target: None,
                digest: None,
            });
        };
        let canonical = found
            .canonicalize()
            .map_err(|e| format!("{written:?}: {e}"))?;
        if canonical.starts_with(&self.root) {
            let digest = crate::safe_fs::digest(&canonical, MAX_PINNED_BYTES)
                .map_err(|e| format!("{written:?} {}", crate::text::error_chain(&e)))?;
            return Ok(FilePin {
                role,
                written: written.to_owned(),
                path: Some(canonical),
                target: None,
                digest: Some(digest),
            });
        }
        crate::safe_fs::writable_only_by_owner(&canonical).map_err(|why| {
            format!("{written:?} is outside the workspace and could be changed by others: {why}")
        })?;
        let path = if program && !written.contains('/') {
            std::path::absolute(&found).unwrap_or(found)
        } else {
            canonical.clone()
        };
        Ok(FilePin {
            role,
            written: written.to_owned(),
            target: (path != canonical).then_some(canonical),
            path: Some(path),
            digest: None,
        })
    }
}

/// A component hook's pin: its digest, for the user's review (components
/// are sandboxed and run without trust).
pub(crate) fn component_pin(hook: &HookSpec, written: &Path) -> Result<HookPin, String> {
    let digest = crate::safe_fs::digest(written, crate::safe_fs::MAX_COMPONENT_BYTES)
        .map_err(|e| format!("{} {}", written.display(), crate::text::error_chain(&e)))?;
    Ok(HookPin {
        name: hook.name.clone(),
        binding: "wasm".into(),
        argv: None,
        files: vec![FilePin {
            role: Role::Component,
            written: written.display().to_string(),
            path: Some(written.to_owned()),
            target: None,
            digest: Some(digest),
        }],
    })
}

/// The pin of any workspace hook.
pub(crate) fn pin_hook(
    hook: &HookSpec,
    root: &Path,
    search_path: Option<&OsStr>,
) -> Result<HookPin, String> {
    match &hook.binding {
        BindingSpec::Subprocess(spec) => {
            CommandInputs::of(spec, &hook.name, root, search_path).pin()
        }
        BindingSpec::Wasm(spec) => component_pin(hook, &spec.wasm),
    }
}

fn file_name(written: &str) -> String {
    Path::new(written)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// `program` looked up on `search_path` as exec does: the first entry
/// holding an executable regular file of that name.
fn lookup(program: &str, search_path: Option<&OsStr>) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(search_path?)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join(program))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// Interpreters whose first file argument is the program that really runs,
/// with the flags that take code inline (no script file follows) and the
/// flags that take a value.
struct Interpreter {
    names: &'static [&'static str],
    inline: &'static [&'static str],
    valued: &'static [&'static str],
}

const INTERPRETERS: &[Interpreter] = &[
    Interpreter {
        names: &["python", "python2", "python3", "pypy", "pypy3"],
        inline: &["-c", "-m"],
        valued: &["-W", "-X", "-Q"],
    },
    Interpreter {
        names: &[
            "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox", "fish",
        ],
        inline: &["-c"],
        valued: &["-o", "-O", "+o", "+O", "--rcfile", "--init-file"],
    },
    Interpreter {
        names: &["node", "nodejs", "bun", "deno", "tsx", "ts-node"],
        inline: &["-e", "--eval", "-p", "--print"],
        valued: &["-r", "--require", "--import", "--loader", "--conditions"],
    },
    Interpreter {
        names: &["perl", "ruby", "php", "lua", "luajit", "Rscript", "tclsh"],
        inline: &["-e", "-E", "-r"],
        valued: &["-I", "-M", "-d"],
    },
];

/// The script a known interpreter would run from `args`: the first
/// argument that is not an option (or the one after `--`), unless code is
/// given inline first. `python3.12` counts as `python3`.
fn script_argument<'a>(interpreter: &str, args: &'a [String]) -> Option<&'a str> {
    let base = interpreter.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    let known = INTERPRETERS
        .iter()
        .find(|i| i.names.contains(&interpreter) || i.names.contains(&base))?;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        if arg == "--" {
            return args.next().map(String::as_str);
        }
        if arg.len() > 1 && (arg.starts_with('-') || arg.starts_with('+')) {
            if known
                .inline
                .iter()
                .any(|f| arg == f || arg.starts_with(&format!("{f}=")))
            {
                return None;
            }
            // `deno run x.ts`: a subcommand word is not an option; it is
            // skipped below as a non-file only for deno.
            if known.valued.contains(&arg.as_str()) {
                args.next();
            }
            continue;
        }
        if interpreter == "deno" && arg == "run" {
            continue;
        }
        return Some(arg);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::script_argument;

    fn argv(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_script_is_the_first_file_argument_of_a_known_interpreter() {
        let cases: &[(&str, &[&str], Option<&str>)] = &[
            ("python3", &["hooks/a.py", "x"], Some("hooks/a.py")),
            ("python3.12", &["-u", "-W", "ignore", "a.py"], Some("a.py")),
            ("python3", &["-c", "print(1)"], None),
            ("python3", &["-m", "mod"], None),
            ("bash", &["-e", "-o", "pipefail", "x.sh"], Some("x.sh")),
            ("sh", &["-c", "echo"], None),
            ("node", &["--require", "r.js", "main.js"], Some("main.js")),
            ("node", &["-e", "1"], None),
            ("deno", &["run", "--allow-read", "x.ts"], Some("x.ts")),
            ("python3", &["--", "-odd.py"], Some("-odd.py")),
            ("mytool", &["hooks/a.py"], None),
        ];
        for (interp, args, want) in cases {
            assert_eq!(
                script_argument(interp, &argv(args)),
                *want,
                "{interp} {args:?}"
            );
        }
    }
}
