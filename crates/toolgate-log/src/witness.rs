//! What an auditor holds that the user cannot rewrite: the checkpoints a
//! witness kept (`toolgate log checkpoint --witness`), and the check of a
//! walked chain against them (`toolgate log verify --witness`).
//!
//! # Why a witness
//!
//! Signatures protect what comes before the last checkpoint still in the
//! file: a record a later checkpoint covered can be rewritten, the chain
//! resealed and that checkpoint dropped, or the log cut back to an earlier
//! checkpoint, and every remaining signature verifies. Nothing in the log
//! says it was ever longer; only something kept elsewhere can. The witness
//! file is that: one line per checkpoint, its number and hash, written by
//! the account that signs (and worth it when the user cannot write it).

use super::verify::{Break, Problem, Report};
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// A checkpoint as a witness kept it (`toolgate log checkpoint --witness`,
/// one JSON line per checkpoint): what the auditor holds that the user
/// cannot rewrite, when the witness file is another account's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Witnessed {
    /// The checkpoint record's number.
    pub seq: u64,
    /// Its hash.
    pub hash: String,
}

/// Why a witness file could not be read.
#[derive(Debug, thiserror::Error)]
#[error("the witness file {}, line {line}: {why}", path.display())]
pub struct WitnessError {
    /// The file.
    pub path: PathBuf,
    /// The line, from 1 (0: the file itself).
    pub line: usize,
    /// What is wrong.
    pub why: String,
}

/// Reads a witness file: one `{"checkpoint": N, "hash": "…"}` per line
/// (other members ignored, blank lines skipped).
pub fn read_witness(path: &Path) -> Result<Vec<Witnessed>, WitnessError> {
    let fail = |line: usize, why: String| WitnessError {
        path: path.to_owned(),
        line,
        why,
    };
    let text = std::fs::read_to_string(path).map_err(|e| fail(0, e.to_string()))?;
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let value: Value =
            serde_json::from_str(line).map_err(|e| fail(n + 1, format!("not JSON ({e})")))?;
        let seq = value.get("checkpoint").and_then(Value::as_u64);
        let hash = value.get("hash").and_then(Value::as_str);
        match (seq, hash) {
            (Some(seq), Some(hash)) if seq > 0 && hash.len() == 64 => out.push(Witnessed {
                seq,
                hash: hash.to_owned(),
            }),
            _ => {
                return Err(fail(
                    n + 1,
                    "not a checkpoint (`checkpoint`: its number, `hash`: its 64 hex digits)".into(),
                ));
            }
        }
    }
    Ok(out)
}

/// Checks the walked chain against what a witness kept. A checkpoint the
/// witness kept must be the log's record of that number, with its hash,
/// and a checkpoint (verified, when keys were given: the walk stops at a
/// bad signature). Without a witness, a rewrite resealed from before the
/// last checkpoint with that checkpoint dropped, or a log cut back to an
/// earlier checkpoint, verifies: nothing the user cannot rewrite says the
/// log was ever longer. Witnessed checkpoints older than the oldest
/// record kept were rotated away, and are passed over.
pub(super) fn against_witness(
    report: &mut Report,
    chained: &HashMap<u64, (String, bool)>,
    witnessed: &[Witnessed],
    file: &Path,
) -> Option<Problem> {
    let first = report.first_seq.unwrap_or(1);
    let last = report.last_seq.unwrap_or(0);
    let problem = |kind, seq, message| Problem {
        kind,
        file: file.to_owned(),
        line: 0,
        seq: Some(seq),
        message,
    };
    for w in witnessed {
        if w.seq < first && !report.from_genesis {
            continue;
        }
        if w.seq > last {
            return Some(problem(
                Break::RolledBack,
                w.seq,
                format!(
                    "a witness kept checkpoint {} (hash {}), but the log ends at record                      {last}: records were cut from its end",
                    w.seq, w.hash
                ),
            ));
        }
        match chained.get(&w.seq) {
            Some((hash, true)) if *hash == w.hash => {
                report.witnessed += 1;
                report.witnessed_through = report.witnessed_through.max(Some(w.seq));
            }
            Some((hash, is_checkpoint)) => {
                return Some(problem(
                    Break::Rewritten,
                    w.seq,
                    format!(
                        "a witness kept checkpoint {} with hash {}; the log's record {} {}:                          the chain was rewritten and resealed through it",
                        w.seq,
                        w.hash,
                        w.seq,
                        if *is_checkpoint {
                            format!("has hash {hash}")
                        } else {
                            "is not a checkpoint".to_owned()
                        }
                    ),
                ));
            }
            None => {
                return Some(problem(
                    Break::Rewritten,
                    w.seq,
                    format!(
                        "a witness kept checkpoint {}, which the log does not hold",
                        w.seq
                    ),
                ));
            }
        }
    }
    None
}
