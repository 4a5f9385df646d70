//! What trusting a workspace pins, computed the same way when the user
//! reviews it, when a process loads the config, and just before each call.

use super::snapshot::Entry;
use crate::binding::{BindingConfig, WorkspaceTrust};
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
    /// The program exec'd (`argv[0]`, or the interpreter of its `#!` line): an interpreter outside the workspace by path, a program inside it by content.
    Program,
    /// The script handed to a known interpreter as its first file argument.
    Script,
    /// A file the hook lists in `trust_files`.
    Declared,
    /// A WebAssembly component.
    Component,
    /// A file in the folder pinned with the hook's code (or a `trust_files`
    /// folder): it runs from a copy of that folder.
    Tree,
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
    /// Whether it is executable (kept in the copy it runs from).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub executable: bool,
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
    /// The pin, how the hook starts, and the tree it runs from; or why
    /// toolgate cannot see what this hook runs (see `closed`).
    pub(crate) fn pin(&self) -> Result<Pinned, String> {
        let search = sanitized_path(self.search_path.as_deref(), &self.root);
        let lookup_fn = |name: &str| lookup(name, search.as_deref());
        let reading = super::closed::read(&self.argv, &self.program, &self.root, &lookup_fn)
            .map_err(|why| format!("{why}; {}", super::closed::HOW))?;
        let mut files = Vec::new();
        if let Some((written, found)) = &reading.interpreter {
            let canonical = found
                .canonicalize()
                .map_err(|e| format!("{written:?}: {e}"))?;
            files.push(FilePin {
                role: Role::Program,
                written: written.clone(),
                target: (canonical != *found).then_some(canonical),
                path: Some(found.clone()),
                digest: None,
                executable: false,
            });
        }
        let mut entries: Vec<Entry> = Vec::new();
        let mut pin_file = |role: Role, written: &str, rel: &Path| -> Result<(), String> {
            if entries.iter().any(|e| e.rel == rel) {
                return Ok(());
            }
            let path = self.root.join(rel);
            let digest = crate::safe_fs::digest(&path, MAX_PINNED_BYTES)
                .map_err(|e| format!("{written:?} {}", crate::text::error_chain(&e)))?;
            let executable = std::fs::metadata(&path)
                .map(|m| {
                    use std::os::unix::fs::PermissionsExt;
                    m.permissions().mode() & 0o111 != 0
                })
                .unwrap_or(false);
            entries.push(Entry {
                rel: rel.to_owned(),
                digest: digest.clone(),
                executable,
            });
            files.push(FilePin {
                role,
                written: written.to_owned(),
                path: Some(path),
                target: None,
                digest: Some(digest),
                executable,
            });
            Ok(())
        };
        let mut trees = Vec::new();
        {
            let code = reading.launch.code_file();
            // The program itself (a native binary, or a script with a #!
            // line) is pinned as argv[0] was written; a script an
            // interpreter is handed, by its path.
            let (role, written) = if reading.code_is_program {
                (Role::Program, self.argv[0].clone())
            } else {
                (Role::Script, code.display().to_string())
            };
            pin_file(role, &written, code)?;
            match code.parent() {
                Some(dir) if !dir.as_os_str().is_empty() => trees.push(dir.to_owned()),
                _ => {
                    return Err(format!(
                        "{} sits at the workspace root, so the folder pinned with it would be the \
                         whole workspace; move the hook's code into a folder of its own (such as \
                         hooks/)",
                        code.display()
                    ));
                }
            }
        }
        for (written, path) in &self.trust_files {
            let canonical = path
                .canonicalize()
                .map_err(|e| format!("trust_files {written:?}: {e}"))?;
            let rel = canonical
                .strip_prefix(&self.root)
                .map_err(|_| format!("trust_files {written:?} is outside the workspace"))?
                .to_owned();
            if canonical.is_dir() {
                trees.push(rel);
            } else {
                pin_file(Role::Declared, written, &rel)?;
            }
        }
        let mut listed = Vec::new();
        for dir in &trees {
            super::snapshot::list(&self.root, dir, &mut listed).map_err(|e| e.to_string())?;
        }
        listed.sort();
        listed.dedup();
        let mut total = 0u64;
        for rel in &listed {
            total += std::fs::metadata(self.root.join(rel))
                .map(|m| m.len())
                .unwrap_or(0);
            if total > super::snapshot::MAX_TREE_BYTES
                || listed.len() > super::snapshot::MAX_TREE_FILES
            {
                return Err(format!(
                    "the folders pinned with this hook ({}) hold more than {} files or {} MiB; \
                     give the hook's code a folder of its own",
                    trees
                        .iter()
                        .map(|t| t.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", "),
                    super::snapshot::MAX_TREE_FILES,
                    super::snapshot::MAX_TREE_BYTES >> 20
                ));
            }
            pin_file(Role::Tree, &rel.display().to_string(), rel)?;
        }
        Ok(Pinned {
            pin: HookPin {
                name: self.name.clone(),
                binding: "subprocess".into(),
                argv: Some(self.argv.clone()),
                files,
            },
            launch: Some(reading.launch),
            entries,
        })
    }
}

/// What one gated hook's pin is computed from, by the way its binding pins
/// (`WorkspaceTrust`): kept by the gate so the pin can be computed again
/// before each call.
#[derive(Clone, Debug)]
pub(crate) enum Pinning {
    /// A program, read closed-world from its argv.
    Program(CommandInputs),
    /// A target named exactly and files by content.
    Exact {
        name: String,
        kind: &'static str,
        target: String,
        files: Vec<PathBuf>,
    },
}

impl Pinning {
    /// The pin now, or why it cannot be computed.
    pub(crate) fn pin(&self) -> Result<Pinned, String> {
        match self {
            Pinning::Program(inputs) => inputs.pin(),
            Pinning::Exact {
                name,
                kind,
                target,
                files,
            } => {
                let files = files
                    .iter()
                    .map(|path| {
                        let digest =
                            crate::safe_fs::digest(path, MAX_PINNED_BYTES).map_err(|e| {
                                format!("{} {}", path.display(), crate::text::error_chain(&e))
                            })?;
                        Ok(FilePin {
                            role: Role::Declared,
                            written: path.display().to_string(),
                            path: Some(path.clone()),
                            target: None,
                            digest: Some(digest),
                            executable: false,
                        })
                    })
                    .collect::<Result<Vec<_>, String>>()?;
                Ok(Pinned {
                    pin: HookPin {
                        name: name.clone(),
                        binding: (*kind).to_owned(),
                        argv: Some(vec![target.clone()]),
                        files,
                    },
                    launch: None,
                    entries: Vec::new(),
                })
            }
        }
    }
}

/// A hook's pin, with what running it from its snapshot needs (a program's).
#[derive(Clone, Debug)]
pub(crate) struct Pinned {
    pub(crate) pin: HookPin,
    pub(crate) launch: Option<super::closed::Launch>,
    pub(crate) entries: Vec<Entry>,
}

/// The search path a workspace hook sees, and its programs are looked up
/// on: `PATH` without empty or relative entries (which exec reads as the
/// working directory, the workspace) and without entries inside the
/// workspace.
pub(crate) fn sanitized_path(path: Option<&OsStr>, root: &Path) -> Option<OsString> {
    let kept: Vec<PathBuf> = std::env::split_paths(path?)
        .filter(|dir| dir.is_absolute())
        .filter(|dir| {
            let canonical = dir.canonicalize().unwrap_or_else(|_| dir.clone());
            !canonical.starts_with(root) && !dir.starts_with(root)
        })
        .collect();
    std::env::join_paths(kept).ok()
}

/// The pin of any workspace hook, as its binding says it pins: what a
/// review shows and records.
pub(crate) fn pin_of(
    name: &str,
    binding: &dyn BindingConfig,
    root: &Path,
    search_path: Option<&OsStr>,
) -> Result<HookPin, String> {
    let pinning = match binding.workspace_trust() {
        WorkspaceTrust::Sandboxed { reviewed } => {
            let files = reviewed
                .iter()
                .map(|written| {
                    let digest =
                        crate::safe_fs::digest(written, crate::safe_fs::MAX_COMPONENT_BYTES)
                            .map_err(|e| {
                                format!("{} {}", written.display(), crate::text::error_chain(&e))
                            })?;
                    Ok(FilePin {
                        role: Role::Component,
                        written: written.display().to_string(),
                        path: Some(written.to_owned()),
                        target: None,
                        digest: Some(digest),
                        executable: false,
                    })
                })
                .collect::<Result<Vec<_>, String>>()?;
            return Ok(HookPin {
                name: name.to_owned(),
                binding: binding.kind().as_str().to_owned(),
                argv: None,
                files,
            });
        }
        WorkspaceTrust::Program {
            argv,
            program,
            trust_files,
        } => Pinning::Program(CommandInputs {
            name: name.to_owned(),
            argv: argv.to_vec(),
            program: program.to_owned(),
            trust_files: trust_files.to_vec(),
            root: root.to_owned(),
            search_path: search_path.map(OsStr::to_owned),
        }),
        WorkspaceTrust::Exact { target, files } => Pinning::Exact {
            name: name.to_owned(),
            kind: binding.kind().as_str(),
            target,
            files,
        },
    };
    pinning.pin().map(|p| p.pin)
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
