//! What toolgate answered before each call ran, per agent session: so that
//! the answer after a call can tell one that ran past toolgate, and so that
//! a call asked about twice before it runs is judged once.
//!
//! # Why toolgate keeps it
//!
//! Claude Code runs settings hooks inside a chain of mods (see
//! `toolgate_agents::claude_mod`). A mod seated outside them can answer
//! `classic.PreToolUse` itself, or allow a call at `tool.check` that
//! toolgate denied, and the call runs; the settings hook after the call
//! (`PostToolUse`) still fires. A result for a call toolgate denied, or
//! never saw before it ran, is evidence that something ran it past the
//! guard: the answer after the call withholds the output from the model
//! (fail closed), says why, and the decision log and the server's metrics
//! record it ([`Before`]).
//!
//! # Across processes
//!
//! Claude Code may run one call's pre hook as a command (a one-shot
//! `toolgate claude-code`) and its post hook over HTTP (the server), or the
//! other way round: both are one session. So the record is a file per
//! session in the user's state directory (`$XDG_STATE_HOME/toolgate/calls`,
//! named by a hash of the session id), one JSON line per answer, appended
//! with one `write` on an `O_APPEND` descriptor (a line is far below
//! `PIPE_BUF`, so lines of concurrent writers never interleave). The
//! folder is private (0700) and each file the user's, 0600, never a
//! symlink: another user could otherwise plant an "allowed" record and
//! hide the evidence. Only the last [`MAX_READ`] bytes of a file are read
//! (recent calls are at the end); files untouched for [`KEEP`] are removed.
//!
//! # Judged once
//!
//! toolgate's own mod asks the server about a call at `tool.call`; the
//! classic hook beside it asks again about the same call when Claude Code
//! reaches `PreToolUse`. The server keeps, in memory, each answer it gave
//! before a call ran, keyed by session, call id and the input's digest;
//! the same question gets the same answer without running the chain again
//! (a changed input is a new question). Only in memory, and only the
//! server's: the file could be written by any process of the user (a mod
//! has `$.fs.write`), and an answer read from it would be a decision nobody
//! made.
//!
//! # What it does not prove
//!
//! A mod runs as the user: it can write these files as toolgate does. The
//! evidence holds against a mod that does not know toolgate is there;
//! against one that does, what holds is toolgate's own mod seated
//! outermost, which judges other mods' processes and requests before they
//! run.

use std::collections::{HashMap, VecDeque};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

/// The most of a session's file read: its last bytes.
const MAX_READ: u64 = 4 << 20;
/// How long a session's file is kept without a write.
const KEEP: Duration = Duration::from_secs(24 * 60 * 60);
/// The most answers the server remembers for judging once.
const MAX_REMEMBERED: usize = 4096;

/// What toolgate answered before a call ran, as the answer after it reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Before {
    /// toolgate let it run (allowed, rewrote it, or asked a person).
    Allowed,
    /// toolgate refused it: a result for it means something ran it anyway.
    Denied,
    /// toolgate was never asked: something ran it past the guard.
    NeverJudged,
}

impl Before {
    /// The evidence's name in the decision log and the metrics: `None`
    /// when the call was allowed.
    pub fn tamper(self) -> Option<&'static str> {
        match self {
            Before::Allowed => None,
            Before::Denied => Some("ran_after_deny"),
            Before::NeverJudged => Some("never_judged"),
        }
    }

    /// What the model and the operator read for the evidence.
    pub fn reason(self, tool: &str) -> Option<String> {
        let why = match self {
            Before::Allowed => return None,
            Before::Denied => "toolgate refused this call before it ran, and it ran anyway",
            Before::NeverJudged => "toolgate was never asked about this call before it ran",
        };
        Some(format!(
            "{tool}: {why}: something (a Claude Code mod or plugin) ran it past the guard, so \
             its output is withheld (recorded as tamper evidence; `toolgate doctor` names the \
             mods that can do this)"
        ))
    }
}

/// Why the record could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    /// The folder is missing and cannot be made, or is not private.
    #[error("the call record's folder: {0}")]
    Dir(#[from] toolgate_fs::PrivateDirError),
    /// A session's file is refused.
    #[error("the call record: {0}")]
    File(#[from] toolgate_fs::OpenPrivateError),
    /// A session's file could not be read or written.
    #[error("the call record {}: {error}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
}

/// One line of a session's file.
#[derive(serde::Serialize, serde::Deserialize)]
struct Line {
    /// The agent's call id.
    id: String,
    /// `allow`, `deny`, `modify`, `ask` (`Decision::name`).
    verdict: String,
}

/// The record: a folder of session files, and in the server, the answers
/// it gave.
#[derive(Debug)]
pub struct Ledger {
    dir: PathBuf,
    remembered: Option<Mutex<Remembered>>,
}

/// The server's answers before calls ran, by (session, call id, input
/// digest), oldest first out.
#[derive(Debug, Default)]
struct Remembered {
    answers: HashMap<(String, String, String), Option<serde_json::Value>>,
    order: VecDeque<(String, String, String)>,
}

impl Ledger {
    /// The record in `dir`, for a one-shot process: the file only.
    pub fn file(dir: impl Into<PathBuf>) -> Ledger {
        Ledger {
            dir: dir.into(),
            remembered: None,
        }
    }

    /// The record in `dir`, for the server: the file, and the answers it
    /// gave, so a call asked about twice is judged once.
    pub fn served(dir: impl Into<PathBuf>) -> Ledger {
        Ledger {
            dir: dir.into(),
            remembered: Some(Mutex::new(Remembered::default())),
        }
    }

    /// The answer the server already gave to this very question (same
    /// session, call and input), when it remembers one.
    pub fn recall(
        &self,
        session: &str,
        id: &str,
        input: &serde_json::Value,
    ) -> Option<Option<serde_json::Value>> {
        let remembered = self.remembered.as_ref()?.lock().ok()?;
        let key = (session.to_owned(), id.to_owned(), digest(input));
        remembered.answers.get(&key).cloned()
    }

    /// Records toolgate's answer before call `id` of `session` ran: its
    /// verdict in the session's file, and in the server the rendered answer
    /// for `input`.
    pub fn record(
        &self,
        session: &str,
        id: &str,
        input: &serde_json::Value,
        verdict: &str,
        answer: &Option<serde_json::Value>,
    ) -> Result<(), LedgerError> {
        if let Some(remembered) = &self.remembered
            && let Ok(mut remembered) = remembered.lock()
        {
            let key = (session.to_owned(), id.to_owned(), digest(input));
            if remembered
                .answers
                .insert(key.clone(), answer.clone())
                .is_none()
            {
                remembered.order.push_back(key);
            }
            while remembered.order.len() > MAX_REMEMBERED {
                if let Some(old) = remembered.order.pop_front() {
                    remembered.answers.remove(&old);
                }
            }
        }
        let mut line = serde_json::to_string(&Line {
            id: id.to_owned(),
            verdict: verdict.to_owned(),
        })
        .unwrap_or_default();
        line.push('\n');
        let (mut file, path) = self.open(session)?;
        file.write_all(line.as_bytes())
            .map_err(|error| LedgerError::Io { path, error })
    }

    /// What toolgate answered before call `id` of `session` ran: the last
    /// answer recorded for it (a call judged again after a rewrite beneath
    /// toolgate's mod is what it was last judged).
    pub fn before(&self, session: &str, id: &str) -> Result<Before, LedgerError> {
        let (mut file, path) = self.open(session)?;
        let io = |error| LedgerError::Io {
            path: path.clone(),
            error,
        };
        let len = file.seek(SeekFrom::End(0)).map_err(io)?;
        let from = len.saturating_sub(MAX_READ);
        file.seek(SeekFrom::Start(from)).map_err(io)?;
        let mut text = String::new();
        file.take(MAX_READ).read_to_string(&mut text).map_err(io)?;
        let mut lines = text.lines();
        if from > 0 {
            // A line cut by where the read started.
            lines.next();
        }
        let last = lines
            .rev()
            .filter_map(|line| serde_json::from_str::<Line>(line).ok())
            .find(|line| line.id == id);
        Ok(match last {
            None => Before::NeverJudged,
            Some(line) if line.verdict == "deny" => Before::Denied,
            Some(_) => Before::Allowed,
        })
    }

    /// The session's file, opened for reading and appending (the folder
    /// made private first); a new file first removes those expired.
    fn open(&self, session: &str) -> Result<(std::fs::File, PathBuf), LedgerError> {
        toolgate_fs::private_dir(&self.dir)?;
        let name = blake3::hash(session.as_bytes()).to_hex();
        let path = self.dir.join(format!("{}.jsonl", &name[..32]));
        if std::fs::symlink_metadata(&path).is_err() {
            self.expire();
        }
        let file = toolgate_fs::open_private(&path)?;
        Ok((file, path))
    }

    /// Removes the session files untouched for [`KEEP`].
    fn expire(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let now = SystemTime::now();
        for entry in entries.flatten() {
            let old = entry
                .metadata()
                .ok()
                .filter(|m| m.is_file())
                .and_then(|m| m.modified().ok())
                .and_then(|t| now.duration_since(t).ok())
                .is_some_and(|age| age > KEEP);
            if old && entry.file_name().to_string_lossy().ends_with(".jsonl") {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// The digest of a tool input: BLAKE3 of its JSON with every object's keys
/// sorted (two inputs are one question exactly when their digests agree).
fn digest(input: &serde_json::Value) -> String {
    fn canonical(value: &serde_json::Value, out: &mut String) {
        match value {
            serde_json::Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                out.push('{');
                for (i, key) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&serde_json::Value::from(key.as_str()).to_string());
                    out.push(':');
                    canonical(&map[key], out);
                }
                out.push('}');
            }
            serde_json::Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    canonical(item, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut text = String::new();
    canonical(input, &mut text);
    blake3::hash(text.as_bytes()).to_hex().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_call_is_allowed_denied_or_never_judged_by_its_last_record() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = Ledger::file(dir.path().join("calls"));
        let input = json!({"command": "ls"});
        assert_eq!(ledger.before("s", "a").unwrap(), Before::NeverJudged);
        ledger.record("s", "a", &input, "allow", &None).unwrap();
        ledger.record("s", "b", &input, "deny", &None).unwrap();
        assert_eq!(ledger.before("s", "a").unwrap(), Before::Allowed);
        assert_eq!(ledger.before("s", "b").unwrap(), Before::Denied);
        // Another session's record is not this one's.
        assert_eq!(ledger.before("t", "a").unwrap(), Before::NeverJudged);
        // Judged again (a rewrite beneath the mod): the last answer counts.
        ledger.record("s", "a", &input, "deny", &None).unwrap();
        assert_eq!(ledger.before("s", "a").unwrap(), Before::Denied);
    }

    #[test]
    fn one_shot_processes_and_the_server_read_one_record() {
        let dir = tempfile::tempdir().unwrap();
        let input = json!({"command": "ls"});
        Ledger::file(dir.path().join("calls"))
            .record("s", "a", &input, "allow", &None)
            .unwrap();
        assert_eq!(
            Ledger::served(dir.path().join("calls"))
                .before("s", "a")
                .unwrap(),
            Before::Allowed
        );
    }

    #[test]
    fn only_the_server_remembers_answers_and_only_for_the_same_input() {
        let dir = tempfile::tempdir().unwrap();
        let served = Ledger::served(dir.path().join("calls"));
        let answer = Some(json!({"x": 1}));
        served
            .record("s", "a", &json!({"b": 1, "a": [2]}), "allow", &answer)
            .unwrap();
        assert_eq!(
            served.recall("s", "a", &json!({"a": [2], "b": 1})),
            Some(answer)
        );
        assert_eq!(served.recall("s", "a", &json!({"a": [3], "b": 1})), None);
        // The file is never read as an answer: a one-shot process judges.
        assert_eq!(
            Ledger::file(dir.path().join("calls")).recall("s", "a", &json!({"a": [2], "b": 1})),
            None
        );
    }

    #[test]
    fn a_record_another_user_could_write_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let calls = dir.path().join("calls");
        let ledger = Ledger::file(&calls);
        ledger.record("s", "a", &json!({}), "deny", &None).unwrap();
        let file = std::fs::read_dir(&calls)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
        let e = ledger.before("s", "a").unwrap_err().to_string();
        assert!(e.contains("call record"), "{e}");
        std::fs::set_permissions(&calls, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = ledger.before("s", "a").unwrap_err().to_string();
        assert!(e.contains("folder"), "{e}");
    }
}
