//! What trusting a workspace pins, computed the same way when the user
//! reviews it, when a process loads the config, and just before each call.

use super::snapshot::Entry;
use crate::binding::command::lookup;
use crate::binding::{Binding, WorkspaceTrust};
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

/// Why a hook's pin could not be computed: what toolgate could not see or
/// read of what it runs. Its text is the reason a review or the gate gives.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PinError {
    /// The argv is not one toolgate can read closed-world.
    #[error("{0}; {how}", how = super::closed::HOW)]
    Unreadable(#[from] super::closed::ReadCommandError),
    /// The interpreter found on `PATH` does not resolve.
    #[error("{written:?}: {source}")]
    Interpreter {
        written: String,
        #[source]
        source: std::io::Error,
    },
    /// A file to pin could not be hashed.
    #[error("{written:?} {}", crate::text::error_chain(source))]
    Unhashable {
        written: String,
        #[source]
        source: crate::safe_fs::ReadFileError,
    },
    /// A file pinned by its path as given could not be hashed.
    #[error("{} {}", path.display(), crate::text::error_chain(source))]
    UnhashableFile {
        path: PathBuf,
        #[source]
        source: crate::safe_fs::ReadFileError,
    },
    /// The code sits at the root: its folder would be the whole workspace.
    #[error(
        "{} sits at the workspace root, so the folder pinned with it would be the whole \
         workspace; move the hook's code into a folder of its own (such as hooks/)",
        code.display()
    )]
    AtRoot { code: PathBuf },
    /// A `trust_files` entry does not resolve.
    #[error("trust_files {written:?}: {source}")]
    TrustFile {
        written: String,
        #[source]
        source: std::io::Error,
    },
    /// A `trust_files` entry resolves outside the workspace.
    #[error("trust_files {written:?} is outside the workspace")]
    TrustFileOutside { written: String },
    /// A pinned folder could not be listed.
    #[error(transparent)]
    Tree(#[from] super::snapshot::ListTreeError),
    /// The pinned folders are past the bound.
    #[error(
        "the folders pinned with this hook ({trees}) hold more than {} files or {} MiB; give \
         the hook's code a folder of its own",
        super::snapshot::MAX_TREE_FILES,
        super::snapshot::MAX_TREE_BYTES >> 20
    )]
    TreeTooLarge { trees: String },
}

/// The files of one pin as they are gathered, each pinned once.
struct Gathered<'a> {
    root: &'a Path,
    files: Vec<FilePin>,
    entries: Vec<Entry>,
}

impl Gathered<'_> {
    /// Pins the workspace file at `rel` by content (it runs from a copy).
    fn file(&mut self, role: Role, written: &str, rel: &Path) -> Result<(), PinError> {
        if self.entries.iter().any(|e| e.rel == rel) {
            return Ok(());
        }
        let path = self.root.join(rel);
        let digest = crate::safe_fs::digest(&path, MAX_PINNED_BYTES).map_err(|source| {
            PinError::Unhashable {
                written: written.to_owned(),
                source,
            }
        })?;
        let executable = std::fs::metadata(&path).is_ok_and(|m| {
            use std::os::unix::fs::PermissionsExt;
            m.permissions().mode() & 0o111 != 0
        });
        self.entries.push(Entry {
            rel: rel.to_owned(),
            digest: digest.clone(),
            executable,
        });
        self.files.push(FilePin {
            role,
            written: written.to_owned(),
            path: Some(path),
            target: None,
            digest: Some(digest),
            executable,
        });
        Ok(())
    }

    /// Pins every file of the folders `trees`, within the bound.
    fn trees(&mut self, trees: &[PathBuf]) -> Result<(), PinError> {
        let mut listed = Vec::new();
        for dir in trees {
            super::snapshot::list(self.root, dir, &mut listed)?;
        }
        listed.sort();
        listed.dedup();
        let mut total = 0u64;
        for rel in &listed {
            total += std::fs::metadata(self.root.join(rel)).map_or(0, |m| m.len());
            if total > super::snapshot::MAX_TREE_BYTES
                || listed.len() > super::snapshot::MAX_TREE_FILES
            {
                let trees: Vec<String> = trees.iter().map(|t| t.display().to_string()).collect();
                return Err(PinError::TreeTooLarge {
                    trees: trees.join(", "),
                });
            }
            self.file(Role::Tree, &rel.display().to_string(), rel)?;
        }
        Ok(())
    }
}

impl CommandInputs {
    /// The pin, how the hook starts, and the tree it runs from; or why
    /// toolgate cannot see what this hook runs (see `closed`).
    pub(crate) fn pin(&self) -> Result<Pinned, PinError> {
        let search = sanitized_path(self.search_path.as_deref(), &self.root);
        let lookup_fn = |name: &str| lookup(name, search.as_deref());
        let reading = super::closed::read(&self.argv, &self.program, &self.root, &lookup_fn)?;
        let mut gathered = Gathered {
            root: &self.root,
            files: Vec::new(),
            entries: Vec::new(),
        };
        if let Some((written, found)) = &reading.interpreter {
            let canonical = found
                .canonicalize()
                .map_err(|source| PinError::Interpreter {
                    written: written.clone(),
                    source,
                })?;
            gathered.files.push(FilePin {
                role: Role::Program,
                written: written.clone(),
                target: (canonical != *found).then_some(canonical),
                path: Some(found.clone()),
                digest: None,
                executable: false,
            });
        }
        let code = reading.launch.code_file();
        // The program itself (a native binary, or a script with a #! line)
        // is pinned as argv[0] was written; a script an interpreter is
        // handed, by its path.
        let (role, written) = if reading.code_is_program {
            (Role::Program, self.argv[0].clone())
        } else {
            (Role::Script, code.display().to_string())
        };
        gathered.file(role, &written, code)?;
        let mut trees = match code.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => vec![dir.to_owned()],
            _ => {
                return Err(PinError::AtRoot {
                    code: code.to_owned(),
                });
            }
        };
        for (written, path) in &self.trust_files {
            let canonical = path.canonicalize().map_err(|source| PinError::TrustFile {
                written: written.clone(),
                source,
            })?;
            let rel = canonical
                .strip_prefix(&self.root)
                .map_err(|_| PinError::TrustFileOutside {
                    written: written.clone(),
                })?
                .to_owned();
            if canonical.is_dir() {
                trees.push(rel);
            } else {
                gathered.file(Role::Declared, written, &rel)?;
            }
        }
        gathered.trees(&trees)?;
        Ok(Pinned {
            pin: HookPin {
                name: self.name.clone(),
                binding: "subprocess".into(),
                argv: Some(self.argv.clone()),
                files: gathered.files,
            },
            launch: Some(reading.launch),
            entries: gathered.entries,
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

/// What a workspace hook of some binding needs, as the binding says.
pub(crate) enum Needs {
    /// Nothing: it runs without trust; `reviewed` is shown in a review.
    Nothing { reviewed: Vec<PathBuf> },
    /// The user's trust in what this pins.
    Trust(Pinning),
}

impl Pinning {
    /// How `binding`'s hook `name` is pinned, if it needs trust: the one
    /// place a binding's [`WorkspaceTrust`] answer is read.
    pub(crate) fn of(
        name: &str,
        binding: &dyn Binding,
        root: &Path,
        search_path: Option<&OsStr>,
    ) -> Needs {
        Needs::Trust(match binding.workspace_trust() {
            WorkspaceTrust::Sandboxed { reviewed } => return Needs::Nothing { reviewed },
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
        })
    }

    /// The pin now, or why it cannot be computed.
    pub(crate) fn pin(&self) -> Result<Pinned, PinError> {
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
                    .map(|path| by_content(Role::Declared, path, MAX_PINNED_BYTES))
                    .collect::<Result<Vec<_>, _>>()?;
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

/// A file pinned by content, as its path was given.
fn by_content(role: Role, path: &Path, limit: u64) -> Result<FilePin, PinError> {
    let digest =
        crate::safe_fs::digest(path, limit).map_err(|source| PinError::UnhashableFile {
            path: path.to_owned(),
            source,
        })?;
    Ok(FilePin {
        role,
        written: path.display().to_string(),
        path: Some(path.to_owned()),
        target: None,
        digest: Some(digest),
        executable: false,
    })
}

/// The pin of any workspace hook, as its binding says it pins (what a
/// review shows and records), and whether it runs only when trusted.
pub(crate) fn pin_of(
    name: &str,
    binding: &dyn Binding,
    root: &Path,
    search_path: Option<&OsStr>,
) -> Result<(HookPin, bool), PinError> {
    let reviewed = match Pinning::of(name, binding, root, search_path) {
        Needs::Trust(pinning) => return pinning.pin().map(|p| (p.pin, true)),
        Needs::Nothing { reviewed } => reviewed,
    };
    let files = reviewed
        .iter()
        .map(|path| by_content(Role::Component, path, crate::safe_fs::MAX_COMPONENT_BYTES))
        .collect::<Result<Vec<_>, _>>()?;
    let pin = HookPin {
        name: name.to_owned(),
        binding: binding.kind().as_str().to_owned(),
        argv: None,
        files,
    };
    Ok((pin, false))
}
