//! The settings that turn an agent's hooks off: what `toolgate doctor`
//! looks for so a guard the agent silently skips is reported, not assumed.
//! A field of [`Install`](crate::Install) every agent must fill, so adding
//! an agent means saying which it has.
//!
//! # Why precedence, not "any file sets it"
//!
//! An agent reads a setting from several files and the most specific one
//! wins: a project's `"disableAllHooks": false` turns back on what the
//! user's `true` turned off, and a machine's managed file beats both. A
//! doctor that flagged any file setting the switch would cry wolf for the
//! first and, for a setting read only from the managed file (Claude Code's
//! `allowManagedHooksOnly`), would look in the wrong place. So each switch
//! lists its files in the agent's order, lowest first, and [`decide`]
//! walks them as the agent does. Lists of disabled hook names are the
//! other kind: the agents unite them across files, so any file naming
//! toolgate's hook turns it off.
//!
//! Closed world: a file that exists but cannot be read as JSON may set the
//! switch, so it decides "cannot tell", which doctor reports as a problem.
//!
//! [`decide`]: HookSwitch::decide

use serde_json::Value;

/// A setting that turns toolgate's hook off in an agent.
#[derive(Debug, Clone, Copy)]
pub struct HookSwitch {
    /// What is set, and which value turns toolgate off.
    pub setting: Setting,
    /// The files the agent reads it from, lowest precedence first.
    pub read_from: &'static [Source],
    /// What the agent does then, for the operator.
    pub effect: &'static str,
    /// The live test that set it in the real agent and saw toolgate
    /// skipped, or `None` where that was not shown live.
    pub shown_live_by: Option<&'static str>,
}

/// The shape of a switch.
#[derive(Debug, Clone, Copy)]
pub enum Setting {
    /// A boolean at a JSON pointer: the most specific file that sets it
    /// decides, and `off_when` turns the hooks off.
    Flag {
        /// `/disableAllHooks`.
        pointer: &'static str,
        /// The value that turns the hooks off.
        off_when: bool,
    },
    /// An array of hook names at a JSON pointer, united across files:
    /// toolgate's hook is off when any file names it.
    Names {
        /// `/hooksConfig/disabled`.
        pointer: &'static str,
        /// The name `install` gives toolgate's hook.
        name: &'static str,
    },
}

impl Setting {
    /// The setting as a user writes it (`hooksConfig.enabled`).
    pub fn dotted(&self) -> String {
        let (Setting::Flag { pointer, .. } | Setting::Names { pointer, .. }) = self;
        pointer.trim_start_matches('/').replace('/', ".")
    }
}

/// A file a switch is read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The user's settings file ([`Install::user_file`](crate::Install)).
    User,
    /// The project's settings file ([`Install::project_file`](crate::Install)).
    Project,
    /// Another file, relative to the project root
    /// (`.claude/settings.local.json`).
    InProject(&'static str),
    /// A machine-wide file an administrator manages.
    System {
        /// Where the agent looks by default on Linux.
        path: &'static str,
        /// The variable that moves it, where the agent has one (doctor
        /// reads its own environment: the agent's may differ).
        var: Option<&'static str>,
        /// Whether the agent skips the file unless it and every folder
        /// above it are owned by root and writable by nobody else (Gemini
        /// CLI 0.61.0, seen live: a file under `/tmp` is skipped with a
        /// warning).
        root_owned: bool,
    },
    /// A folder of machine-wide JSON files, read in name order after the
    /// source before it (Claude Code's `managed-settings.d`).
    SystemDropIns {
        /// The folder.
        dir: &'static str,
    },
}

/// What a switch's files say, read in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decided {
    /// toolgate's hook is not turned off by this switch.
    On,
    /// Turned off, by this file.
    Off {
        /// The file that decided.
        file: String,
    },
    /// A file that exists could not be read, and why: it may set it.
    CannotTell {
        /// The file.
        file: String,
        /// Why it could not be read.
        why: String,
    },
}

/// A file's contents as doctor read it: its name, and the JSON or why not.
pub type Read = (String, Result<Value, String>);

impl HookSwitch {
    /// Walks `files` (this switch's [`read_from`](Self::read_from),
    /// resolved, lowest precedence first; files that do not exist left
    /// out) as the agent does. Also returns the files whose "off" a more
    /// specific file overrode, each with the file that did, for doctor to
    /// say why it does not flag them.
    pub fn decide(&self, files: &[Read]) -> (Decided, Vec<(String, String)>) {
        if let Some((file, Err(why))) = files.iter().find(|(_, r)| r.is_err()) {
            let decided = Decided::CannotTell {
                file: file.clone(),
                why: why.clone(),
            };
            return (decided, Vec::new());
        }
        let parsed = files
            .iter()
            .filter_map(|(file, r)| r.as_ref().ok().map(|v| (file, v)));
        match self.setting {
            Setting::Flag { pointer, off_when } => {
                let mut last: Option<(&String, bool)> = None;
                let mut overridden = Vec::new();
                for (file, settings) in parsed {
                    let Some(value) = settings.pointer(pointer).and_then(Value::as_bool) else {
                        continue;
                    };
                    if let Some((earlier, was)) = last
                        && was == off_when
                        && value != off_when
                    {
                        overridden.push((earlier.clone(), file.clone()));
                    }
                    last = Some((file, value));
                }
                let decided = match last {
                    Some((file, value)) if value == off_when => Decided::Off { file: file.clone() },
                    _ => Decided::On,
                };
                (decided, overridden)
            }
            Setting::Names { pointer, name } => {
                let naming = parsed
                    .into_iter()
                    .find(|(_, settings)| {
                        settings
                            .pointer(pointer)
                            .and_then(Value::as_array)
                            .is_some_and(|names| names.iter().any(|n| n.as_str() == Some(name)))
                    })
                    .map(|(file, _)| file.clone());
                match naming {
                    Some(file) => (Decided::Off { file }, Vec::new()),
                    None => (Decided::On, Vec::new()),
                }
            }
        }
    }
}

/// Whether `file`, every folder above it, and the same for the path it
/// resolves to, are owned by root and writable by neither group nor
/// others: Gemini CLI's rule for a system settings file it reads
/// (`isFileAndDirectorySecureSync`, 0.61.0; the sticky bit does not
/// exempt `/tmp`). Why not, when it fails.
pub fn root_owned_chain(file: &std::path::Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let check = |path: &std::path::Path| -> Result<(), String> {
        let meta = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
        if meta.uid() != 0 {
            return Err(format!(
                "{} is owned by uid {}, not root",
                path.display(),
                meta.uid()
            ));
        }
        if meta.mode() & 0o022 != 0 {
            return Err(format!(
                "{} is writable by group or others (mode {:o})",
                path.display(),
                meta.mode() & 0o7777
            ));
        }
        Ok(())
    };
    let mut paths = vec![file.to_path_buf()];
    if let Ok(real) = file.canonicalize()
        && real != file
    {
        paths.push(real);
    }
    for path in paths {
        for at in path.ancestors().filter(|a| !a.as_os_str().is_empty()) {
            check(at)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const FLAG: HookSwitch = HookSwitch {
        setting: Setting::Flag {
            pointer: "/disableAllHooks",
            off_when: true,
        },
        read_from: &[Source::User, Source::Project],
        effect: "",
        shown_live_by: None,
    };

    fn read(file: &str, v: Value) -> Read {
        (file.to_owned(), Ok(v))
    }

    #[test]
    fn the_most_specific_file_that_sets_a_flag_decides() {
        let off = json!({"disableAllHooks": true});
        let on = json!({"disableAllHooks": false});
        let (d, over) = FLAG.decide(&[read("user", off.clone()), read("project", on.clone())]);
        assert_eq!(d, Decided::On);
        assert_eq!(over, vec![("user".to_owned(), "project".to_owned())]);
        let (d, _) = FLAG.decide(&[read("user", on), read("project", off.clone())]);
        assert_eq!(
            d,
            Decided::Off {
                file: "project".into()
            }
        );
        let (d, _) = FLAG.decide(&[read("user", off), read("project", json!({}))]);
        assert_eq!(
            d,
            Decided::Off {
                file: "user".into()
            }
        );
    }

    #[test]
    fn a_flag_that_is_not_a_boolean_is_not_read_as_one() {
        let (d, _) = FLAG.decide(&[read("user", json!({"disableAllHooks": "true"}))]);
        assert_eq!(d, Decided::On);
    }

    #[test]
    fn a_name_in_any_files_list_turns_the_hook_off() {
        let names = HookSwitch {
            setting: Setting::Names {
                pointer: "/hooksConfig/disabled",
                name: "toolgate",
            },
            ..FLAG
        };
        let files = [
            read("user", json!({"hooksConfig": {"disabled": ["toolgate"]}})),
            read("project", json!({"hooksConfig": {"disabled": []}})),
        ];
        assert_eq!(
            names.decide(&files).0,
            Decided::Off {
                file: "user".into()
            }
        );
        let other = [read("user", json!({"hooksConfig": {"disabled": ["x"]}}))];
        assert_eq!(names.decide(&other).0, Decided::On);
    }

    #[test]
    fn a_file_that_cannot_be_read_cannot_be_told_apart_from_one_that_turns_hooks_off() {
        let files = [
            ("user".to_owned(), Err("not JSON".to_owned())),
            read("project", json!({"disableAllHooks": false})),
        ];
        assert!(matches!(FLAG.decide(&files).0, Decided::CannotTell { .. }));
    }
}
