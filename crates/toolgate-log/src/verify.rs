//! `toolgate log verify`: walks the chain through the log and its
//! rotations, oldest first, and names the first record that breaks it.
//!
//! # What each break is called, and why it can be told apart
//!
//! Every record is checked against its own hash first (a byte changed and
//! the hash left alone: `edited`), then against the record before it.
//! When a record does not chain to its predecessor, the evidence around it
//! says what happened: the record after it chains past it (`inserted`);
//! the hash it names belongs to another record in the log (`reordered`);
//! its number skips ahead of its predecessor's (`removed`, with the
//! missing numbers); a chain that begins again at record 1 (`restarted`).
//! Otherwise the record before it was rewritten and resealed
//! (`edited`, named at the record whose `prev` no longer matches).
//! A last line without its newline is a `torn_tail`: a writer died in
//! it, or the file was cut; the next writer cuts it and records that.
//!
//! Whole records removed from the end leave no trace in the chain itself:
//! that is what signed checkpoints bound (a rewrite must forge one), and
//! the report says how many records no checkpoint covers yet.

use super::chain::{self, GENESIS, Head};
use super::witness::against_witness;
pub use super::witness::{WitnessError, Witnessed, read_witness};
use serde::Serialize;
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The largest file read: far past any log toolgate rotates.
const MAX_FILE: u64 = 256 << 20;

/// What broke the chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Break {
    /// A record's bytes no longer match its hash, or the record before it
    /// was rewritten and resealed.
    Edited,
    /// Records are missing between two that remain.
    Removed,
    /// A record that was never written by a writer in turn.
    Inserted,
    /// Records are out of order.
    Reordered,
    /// The chain begins again after records that were chained.
    Restarted,
    /// A line that is not a record (not JSON, or not sealed once the chain began).
    NotARecord,
    /// The last line is partial.
    TornTail,
    /// A checkpoint's signature does not verify with the given keys.
    BadSignature,
    /// Public keys were given and no checkpoint signed by them covers a record.
    Unsigned,
    /// The log ends before a checkpoint a witness kept: records were cut
    /// from its end (a rollback).
    RolledBack,
    /// A checkpoint a witness kept is not the log's record of that number
    /// (another hash, or not a checkpoint): the chain was rewritten and
    /// resealed through it.
    Rewritten,
}

/// The first break found.
#[derive(Debug, Serialize)]
pub struct Problem {
    /// What broke.
    pub kind: Break,
    /// The file it is in.
    pub file: PathBuf,
    /// Its line, from 1.
    pub line: usize,
    /// The record's number, when it has one.
    pub seq: Option<u64>,
    /// What was found, in words.
    pub message: String,
}

/// What `verify` found.
#[derive(Debug, Default, Serialize)]
pub struct Report {
    /// The files walked, oldest first.
    pub files: Vec<PathBuf>,
    /// Chained records read (decisions and checkpoints).
    pub records: u64,
    /// The first and last record numbers.
    pub first_seq: Option<u64>,
    /// See `first_seq`.
    pub last_seq: Option<u64>,
    /// Whether the oldest record is the chain's first (else older ones
    /// were rotated away).
    pub from_genesis: bool,
    /// Lines before the chain began (written by a toolgate without it).
    pub unchained_before: u64,
    /// Checkpoint records read.
    pub checkpoints: u64,
    /// Of those, verified with the given keys.
    pub checkpoints_verified: u64,
    /// The last record a verified checkpoint vouches for.
    pub signed_through: Option<u64>,
    /// Records after it.
    pub unsigned_after: u64,
    /// Partial records a writer cut off: (record number, bytes cut).
    pub torn_repaired: Vec<(u64, u64)>,
    /// Witnessed checkpoints found in the log as kept.
    pub witnessed: u64,
    /// The newest of them.
    pub witnessed_through: Option<u64>,
    /// The first break, if any.
    pub problem: Option<Problem>,
}

/// Why the log could not be verified at all.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// A file could not be read.
    #[error("{}: {}", .0.display(), .1)]
    Read(PathBuf, #[source] std::io::Error),
    /// A file is far larger than any log.
    #[error("{} is larger than {} MiB, which no decision log is", .0.display(), MAX_FILE >> 20)]
    TooLarge(PathBuf),
    /// A public key could not be read.
    #[error("public key {0}: {1}")]
    Key(String, String),
}

/// A public key to check checkpoints with: the base64 line, or a `.pub` file.
pub fn public_key(text_or_file: &str) -> Result<minisign_verify::PublicKey, VerifyError> {
    let fail = |e: String| VerifyError::Key(text_or_file.to_owned(), e);
    if Path::new(text_or_file).is_file() {
        return minisign_verify::PublicKey::from_file(text_or_file)
            .map_err(|e| fail(e.to_string()));
    }
    minisign_verify::PublicKey::from_base64(text_or_file.trim()).map_err(|e| fail(e.to_string()))
}

/// One line as read.
enum Seen {
    Record {
        seq: u64,
        prev: String,
        hash: String,
        body: Value,
    },
    /// Valid JSON without a seal.
    Unchained,
    /// Sealed, but its bytes do not match its hash.
    Edited,
    NotJson,
    Torn(u64),
}

struct Line {
    file: usize,
    /// The file's name, for messages.
    file_name: String,
    number: usize,
    seen: Seen,
}

/// Walks the chain through `files` (oldest first), checking checkpoints
/// with `keys` when any are given.
pub fn verify(
    files: &[PathBuf],
    keys: &[minisign_verify::PublicKey],
    witnessed: &[Witnessed],
) -> Result<Report, VerifyError> {
    let mut lines = Vec::new();
    for (i, file) in files.iter().enumerate() {
        read(file, i, &mut lines)?;
    }
    let mut walk = Walk {
        report: Report {
            files: files.to_vec(),
            ..Report::default()
        },
        by_hash: HashMap::new(),
        last: None,
        lines: &lines,
        keys,
        chained: HashMap::new(),
    };
    for (i, l) in lines.iter().enumerate() {
        if let Seen::Record { hash, .. } = &l.seen {
            walk.by_hash.entry(hash.as_str()).or_default().push(i);
        }
    }
    for (i, line) in lines.iter().enumerate() {
        if let Err((kind, seq, message)) = walk.step(i) {
            walk.report.problem = Some(Problem {
                kind,
                file: files[line.file].clone(),
                line: line.number,
                seq,
                message,
            });
            break;
        }
    }
    let chained = std::mem::take(&mut walk.chained);
    let mut report = walk.report;
    if report.problem.is_none()
        && let Some(file) = files.last()
    {
        report.problem = against_witness(&mut report, &chained, witnessed, file);
    }
    if let (Some(last), Some(through)) = (report.last_seq, report.signed_through) {
        report.unsigned_after = last - through;
    } else if let Some(last) = report.last_seq {
        report.unsigned_after = last - report.first_seq.unwrap_or(1) + 1;
    }
    if report.problem.is_none()
        && !keys.is_empty()
        && report.signed_through.is_none()
        && report.records > 0
        && let Some(file) = files.last()
    {
        report.problem = Some(Problem {
            kind: Break::Unsigned,
            file: file.clone(),
            line: 0,
            seq: None,
            message: "no checkpoint signed by the given keys covers any record: a chain \
                      rewritten from its first record would look like this"
                .into(),
        });
    }
    Ok(report)
}

/// A break found at a line: its kind, the record's number, what was found.
type Found = (Break, Option<u64>, String);

/// Where a walk stands.
struct Walk<'a> {
    report: Report,
    /// Every record's line index, by hash.
    by_hash: HashMap<&'a str, Vec<usize>>,
    /// The last record that chained.
    last: Option<Head>,
    lines: &'a [Line],
    keys: &'a [minisign_verify::PublicKey],
    /// Each chained record: its hash, and whether it is a checkpoint whose
    /// signature verified (or, without keys, a checkpoint).
    chained: HashMap<u64, (String, bool)>,
}

impl Walk<'_> {
    /// Takes in line `i`, or says how it breaks the chain.
    fn step(&mut self, i: usize) -> Result<(), Found> {
        let (seq, prev, hash, body) = match &self.lines[i].seen {
            Seen::Record {
                seq,
                prev,
                hash,
                body,
            } => (*seq, prev, hash, body),
            Seen::Unchained if self.last.is_none() => {
                self.report.unchained_before += 1;
                return Ok(());
            }
            other => return Err(not_a_record(other)),
        };
        match &self.last {
            None => {
                self.report.first_seq = Some(seq);
                self.report.from_genesis = seq == 1 && *prev == GENESIS;
                // Only rotation drops the oldest records, and it leaves
                // `<log>.1` behind.
                if !self.report.from_genesis && self.report.files.len() == 1 {
                    return Err((
                        Break::Removed,
                        Some(seq),
                        format!(
                            "records 1..={} are missing from the start, and the log was \
                             never rotated (or its rotated files were deleted)",
                            seq - 1
                        ),
                    ));
                }
            }
            Some(head) if seq == head.seq + 1 && *prev == head.hash => {}
            Some(head) => {
                let (kind, message) = why_broken(self.lines, &self.by_hash, i, seq, prev, head);
                return Err((kind, Some(seq), message));
            }
        }
        if let Some(torn) = body.get("torn_bytes").and_then(Value::as_u64) {
            self.report.torn_repaired.push((seq, torn));
        }
        self.report.records += 1;
        self.report.last_seq = Some(seq);
        let checkpoint = body.get("kind").and_then(Value::as_str) == Some("checkpoint");
        if checkpoint {
            self.checkpoint(seq, prev, body)?;
        }
        self.chained.insert(seq, (hash.clone(), checkpoint));
        self.last = Some(Head {
            seq,
            hash: hash.clone(),
        });
        Ok(())
    }

    /// A checkpoint record numbered `seq`, vouching for the record before
    /// it (`prev`): checked when keys were given.
    fn checkpoint(&mut self, seq: u64, prev: &str, body: &Value) -> Result<(), Found> {
        self.report.checkpoints += 1;
        if self.keys.is_empty() {
            return Ok(());
        }
        let covered = Head {
            seq: seq - 1,
            hash: prev.to_owned(),
        };
        check_signature(body, &covered, self.keys)
            .map_err(|why| (Break::BadSignature, Some(seq), why))?;
        self.report.checkpoints_verified += 1;
        self.report.signed_through = Some(seq - 1);
        Ok(())
    }
}

/// A line that is not a chained record, as a break.
fn not_a_record(seen: &Seen) -> Found {
    let message = match seen {
        Seen::Edited => {
            return (
                Break::Edited,
                None,
                "its bytes do not match its hash: the record was edited".into(),
            );
        }
        Seen::Torn(bytes) => {
            return (
                Break::TornTail,
                None,
                format!(
                    "the last {bytes} bytes are a partial record: a writer died while \
                     writing it, or the file was cut (the next write cuts it off and \
                     records that)"
                ),
            );
        }
        Seen::Unchained => {
            "a record without a hash after the chain began (written by hand, or by a \
             toolgate older than the chain)"
        }
        Seen::NotJson | Seen::Record { .. } => "not JSON",
    };
    (Break::NotARecord, None, message.into())
}

/// What the record at `i` (number `seq`, naming `prev`) shows happened,
/// given that it does not follow `head`.
///
/// Why one function: each branch is one kind of break, tried in the order
/// that tells them apart (a copy before a reorder, a reorder before an
/// insertion a later record chains past, …); the order is the logic.
fn why_broken(
    lines: &[Line],
    by_hash: &HashMap<&str, Vec<usize>>,
    i: usize,
    seq: u64,
    prev: &str,
    head: &Head,
) -> (Break, String) {
    let seq_at = |j: usize| match &lines[j].seen {
        Seen::Record { seq, .. } => *seq,
        _ => 0,
    };
    let own = match &lines[i].seen {
        Seen::Record { hash, .. } => by_hash.get(hash.as_str()),
        _ => None,
    };
    if prev == head.hash {
        return (
            Break::Edited,
            format!(
                "it follows record {} but is numbered {seq}: it was rewritten and resealed",
                head.seq
            ),
        );
    }
    if let Some(copies) = own.filter(|c| c.len() > 1) {
        let other = copies.iter().find(|&&j| j != i).copied().unwrap_or(i);
        return (
            Break::Inserted,
            format!(
                "it is a copy of the record at {}:{}: it was inserted",
                lines[other].file_name, lines[other].number
            ),
        );
    }
    if let Some(&j) = by_hash.get(prev).and_then(|p| p.iter().find(|&&j| j > i)) {
        return (
            Break::Reordered,
            format!(
                "it follows record {}, which comes after it: records were reordered",
                seq_at(j)
            ),
        );
    }
    let next_chains_past = matches!(
        lines.get(i + 1).map(|l| &l.seen),
        Some(Seen::Record { seq: s, prev: p, .. }) if *s == head.seq + 1 && *p == head.hash
    );
    if next_chains_past {
        return (
            Break::Inserted,
            format!(
                "the record after it follows record {}: this one was inserted",
                head.seq
            ),
        );
    }
    if seq == 1 && prev == GENESIS {
        return (
            Break::Restarted,
            format!(
                "the chain begins again here, after record {}: the log was cut or written over",
                head.seq
            ),
        );
    }
    if seq > head.seq + 1 && !by_hash.contains_key(prev) {
        return (
            Break::Removed,
            format!(
                "records {}..={} are missing after record {}",
                head.seq + 1,
                seq - 1,
                head.seq
            ),
        );
    }
    if let Some(&j) = by_hash.get(prev).and_then(|p| p.first()) {
        return (
            Break::Reordered,
            format!(
                "it follows record {}, not record {}: records were reordered",
                seq_at(j),
                head.seq
            ),
        );
    }
    (
        Break::Edited,
        format!(
            "it does not follow record {} (number {seq}, expected {}): the record before \
             it was rewritten and resealed, or this one's link was",
            head.seq,
            head.seq + 1
        ),
    )
}

fn check_signature(
    body: &Value,
    covered: &Head,
    keys: &[minisign_verify::PublicKey],
) -> Result<(), String> {
    let text = body
        .get("signature")
        .and_then(Value::as_str)
        .ok_or("a checkpoint without a signature")?;
    let signature = minisign_verify::Signature::decode(text)
        .map_err(|e| format!("its signature does not parse: {e}"))?;
    let statement = super::checkpoint::statement(covered);
    if keys
        .iter()
        .any(|k| k.verify(statement.as_bytes(), &signature, false).is_ok())
    {
        Ok(())
    } else {
        Err(format!(
            "its signature does not verify with the given keys over record {} \
             (hash {}): forged, made with another key, or moved from another place",
            covered.seq, covered.hash
        ))
    }
}

/// Reads `path`'s lines into `lines`.
fn read(path: &Path, index: usize, lines: &mut Vec<Line>) -> Result<(), VerifyError> {
    let meta = std::fs::metadata(path).map_err(|e| VerifyError::Read(path.to_owned(), e))?;
    if meta.len() > MAX_FILE {
        return Err(VerifyError::TooLarge(path.to_owned()));
    }
    let bytes = std::fs::read(path).map_err(|e| VerifyError::Read(path.to_owned(), e))?;
    let mut rest = &bytes[..];
    let mut number = 0;
    while !rest.is_empty() {
        number += 1;
        let (line, torn) = match rest.iter().position(|&b| b == b'\n') {
            Some(n) => {
                let line = &rest[..n];
                rest = &rest[n + 1..];
                (line, false)
            }
            None => {
                let line = rest;
                rest = &[];
                (line, true)
            }
        };
        let seen = if torn {
            Seen::Torn(line.len() as u64)
        } else {
            classify(line)
        };
        lines.push(Line {
            file: index,
            file_name: path.display().to_string(),
            number,
            seen,
        });
    }
    Ok(())
}

fn classify(line: &[u8]) -> Seen {
    let Ok(text) = std::str::from_utf8(line) else {
        return Seen::NotJson;
    };
    let Some((body, hash)) = chain::unseal(text) else {
        return match serde_json::from_str::<Value>(text) {
            Ok(v) if v.is_object() && v.get("hash").is_none() => Seen::Unchained,
            _ => Seen::NotJson,
        };
    };
    if chain::digest(body.as_bytes()) != hash {
        return Seen::Edited;
    }
    let Ok(value) = serde_json::from_str::<Value>(&body) else {
        return Seen::NotJson;
    };
    let seq = value.get("seq").and_then(Value::as_u64);
    let prev = value.get("prev").and_then(Value::as_str);
    match (seq, prev) {
        (Some(seq), Some(prev)) if seq > 0 => Seen::Record {
            seq,
            prev: prev.to_owned(),
            hash: hash.to_owned(),
            body: value,
        },
        _ => Seen::NotJson,
    }
}
