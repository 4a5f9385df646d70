//! Signed checkpoints: a record in the chain whose minisign signature
//! covers the hash of the record before it, so a rewrite of the whole
//! chain (every hash recomputed, which anyone with the user's permissions
//! can do) is caught by a signature the rewriter cannot make.
//!
//! # Why a record in the chain, written by a command the operator runs
//!
//! A checkpoint is appended like any record, under the log's lock, by
//! `toolgate log checkpoint --key <minisign secret key>`, which an operator
//! runs from a timer (systemd, cron), as the user or better as another
//! account that can append to the log but whose key the user cannot read;
//! or by `toolgate serve --checkpoint-key`, the one long-lived process,
//! which reads the key once at start and signs every
//! `--checkpoint-every` seconds when something was logged (and once more
//! as it stops). The alternative, every agent process signing now and
//! then, would put the secret key in every process an agent starts, next
//! to the hooks it runs. minisign, not a new format: it is what the fleet's component
//! signatures use, the key pair is `minisign -G -W`, and the public key is
//! one line the verifier is given.
//!
//! # What the key must be
//!
//! A regular file, not a symlink, the caller's own, readable by nobody
//! else (`0600` or stricter): a key others can read signs nothing anyone
//! should believe. Workspace hooks never see it: their sandbox starts
//! from no file of the user's (`SECURITY.md`), which a test pins. A key
//! with a password is read only at a terminal (the password is asked
//! for); a timer's key is made without one.
//!
//! What the signature covers is [`statement`]: the record number and hash
//! it vouches for, in words, so a signature made for one log position
//! vouches for no other.

use super::append;
use super::chain::{self, Head};
use serde::Serialize;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// The largest secret key file read (minisign's is two short lines).
const MAX_KEY_BYTES: u64 = 4 << 10;

/// What a checkpoint signs: that the record numbered `seq` has hash `hash`.
pub fn statement(head: &Head) -> String {
    format!(
        "toolgate decision log checkpoint\nseq {}\nhash {}\n",
        head.seq, head.hash
    )
}

/// Why a checkpoint was not written.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// The key file was refused or could not be read.
    #[error("the key {}: {why}", path.display())]
    Key {
        /// The key file.
        path: PathBuf,
        /// Why it was refused.
        why: String,
    },
    /// Signing failed.
    #[error("signing failed: {0}")]
    Sign(String),
    /// The log was not written.
    #[error("the decision log {}: {}", .0.display(), .1)]
    Log(PathBuf, String),
}

/// A loaded minisign secret key (its `Debug` shows the id only).
pub struct SigningKey {
    key: minisign::SecretKey,
    /// The key id, as minisign prints it.
    pub id: String,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SigningKey({})", self.id)
    }
}

impl SigningKey {
    /// Reads the minisign secret key at `path`, refusing a file that is not
    /// the caller's alone (see the module docs).
    pub fn load(path: &Path) -> Result<SigningKey, CheckpointError> {
        let refuse = |why: String| CheckpointError::Key {
            path: path.to_owned(),
            why,
        };
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_CLOEXEC)
            .open(path)
            .map_err(|e| match e.raw_os_error() {
                Some(nix::libc::ELOOP) => refuse("it is a symlink".into()),
                _ => refuse(format!("cannot open it: {e}")),
            })?;
        let meta = file
            .metadata()
            .map_err(|e| refuse(format!("cannot inspect it: {e}")))?;
        let me = nix::unistd::geteuid().as_raw();
        if !meta.file_type().is_file() {
            return Err(refuse("it is not a regular file".into()));
        }
        if meta.uid() != me {
            return Err(refuse(format!(
                "it belongs to uid {}, not to uid {me}",
                meta.uid()
            )));
        }
        if meta.mode() & 0o077 != 0 {
            return Err(refuse(format!(
                "others may read or change it (mode {:o}); chmod 600 it",
                meta.mode() & 0o7777
            )));
        }
        let mut text = String::new();
        (&mut file)
            .take(MAX_KEY_BYTES)
            .read_to_string(&mut text)
            .map_err(|e| refuse(format!("cannot read it: {e}")))?;
        let text = with_checksum(&text).unwrap_or(text);
        let boxed = minisign::SecretKeyBox::from_string(&text)
            .map_err(|e| refuse(format!("not a minisign secret key: {e}")))?;
        let key = match boxed.clone().into_unencrypted_secret_key() {
            Ok(key) => key,
            Err(_) if std::io::IsTerminal::is_terminal(&std::io::stdin()) => boxed
                .into_secret_key(None)
                .map_err(|e| refuse(e.to_string()))?,
            Err(e) => {
                return Err(refuse(format!(
                    "{e}; a key with a password is read only at a terminal (to ask for \
                     it): make a key for a timer with `minisign -G -W`"
                )));
            }
        };
        let mut id = [0u8; 8];
        id.copy_from_slice(key.keynum().get(..8).unwrap_or(&[0; 8]));
        Ok(SigningKey {
            id: format!("{:X}", u64::from_le_bytes(id)),
            key,
        })
    }

    fn sign(&self, head: &Head) -> Result<String, CheckpointError> {
        let comment = format!(
            "toolgate decision log checkpoint seq={} hash={}",
            head.seq, head.hash
        );
        minisign::sign(
            None,
            &self.key,
            statement(head).as_bytes(),
            Some(&comment),
            Some("toolgate decision log checkpoint"),
        )
        .map(|b| b.into_string())
        .map_err(|e| CheckpointError::Sign(e.to_string()))
    }
}

/// A password-less secret key as Debian's minisign 0.11 writes it (`-G
/// -W`), with the checksum rust-minisign requires filled in: minisign 0.11
/// leaves it zero for a key it does not encrypt, and rust-minisign 0.10
/// then calls the key corrupted (seen with `minisign -G -W` on this
/// machine; a test signs with such a key). `None` for any other key, which
/// is read as it is.
fn with_checksum(text: &str) -> Option<String> {
    use base64::Engine as _;
    use blake2::Digest as _;
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut lines = text.lines();
    let comment = lines.next()?;
    let mut bytes = b64.decode(lines.next()?.trim()).ok()?;
    // sig_alg 2, kdf_alg 2, chk_alg 2, salt 32, opslimit 8, memlimit 8,
    // keynum 8, secret key 64, checksum 32.
    let (kdf, chk) = (bytes.get(2..4)?, bytes.get(126..158)?);
    if bytes.len() != 158 || kdf != [0, 0] || chk.iter().any(|&b| b != 0) {
        return None;
    }
    let mut hash = blake2::Blake2b::<blake2::digest::consts::U32>::new();
    hash.update(&bytes[0..2]);
    hash.update(&bytes[54..126]);
    let sum = hash.finalize();
    bytes[126..158].copy_from_slice(&sum);
    Some(format!("{comment}\n{}\n", b64.encode(&bytes)))
}

/// A checkpoint record; `seq` and `prev` last, as in every record.
#[derive(Serialize)]
struct Line<'a> {
    kind: &'static str,
    time: String,
    pid: u32,
    key_id: &'a str,
    signature: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    torn_bytes: Option<u64>,
    seq: u64,
    prev: &'a str,
}

/// What one checkpoint wrote: the record it vouches for, and itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Written {
    /// The record the checkpoint's signature covers.
    pub covered: Head,
    /// The checkpoint record: its number and hash, what a witness keeps
    /// (see [`witness_line`]).
    pub checkpoint: Head,
}

/// Appends a checkpoint signed by `key` to the log at `path`, covering its
/// last record.
pub fn write(path: &Path, key: &SigningKey) -> Result<Written, CheckpointError> {
    let mut own = None;
    write_own(path, key, None, &mut own)?;
    let (covered, checkpoint) =
        own.ok_or_else(|| CheckpointError::Log(path.to_owned(), "nothing was written".into()))?;
    Ok(Written {
        covered,
        checkpoint,
    })
}

/// The line a witness file keeps for a checkpoint: one JSON object (the
/// checkpoint's number and hash, the record it covers, when).
pub fn witness_line(written: &Written) -> String {
    serde_json::json!({
        "checkpoint": written.checkpoint.seq,
        "hash": written.checkpoint.hash,
        "covers": written.covered.seq,
        "time": toolgate_contract::text::rfc3339(SystemTime::now()),
    })
    .to_string()
}

/// [`write`], unless the log's last record is numbered `unless` (the
/// checkpoint written last time: nothing was logged since, and a
/// checkpoint over a checkpoint vouches for nothing new). Returns the
/// record vouched for and the checkpoint's own number, or `None` when
/// nothing was written. How `toolgate serve --checkpoint-key` signs
/// periodically without filling a quiet log with checkpoints.
pub fn write_unless(
    path: &Path,
    key: &SigningKey,
    unless: Option<u64>,
) -> Result<(Head, Option<u64>), CheckpointError> {
    let mut own = None;
    write_own(path, key, unless, &mut own)
}

/// [`write_unless`], keeping in `own` the record covered and the
/// checkpoint record's own head when one was written.
fn write_own(
    path: &Path,
    key: &SigningKey,
    unless: Option<u64>,
    own: &mut Option<(Head, Head)>,
) -> Result<(Head, Option<u64>), CheckpointError> {
    let mut failed = None;
    let mut covered = Head::genesis();
    let mut wrote = None;
    let mut next = |head: &Head, torn: u64| {
        covered = head.clone();
        if unless == Some(head.seq) && torn == 0 {
            return String::new();
        }
        wrote = Some(head.seq + 1);
        let signature = match key.sign(head) {
            Ok(s) => s,
            Err(e) => {
                // Nothing is written: an empty line is no write at all.
                failed = Some(e);
                return String::new();
            }
        };
        let line = Line {
            kind: "checkpoint",
            time: toolgate_contract::text::rfc3339(SystemTime::now()),
            pid: std::process::id(),
            key_id: &key.id,
            signature,
            torn_bytes: (torn > 0).then_some(torn),
            seq: head.seq + 1,
            prev: &head.hash,
        };
        let sealed = chain::seal(&serde_json::to_string(&line).unwrap_or_default());
        if let Some((_, hash)) = chain::unseal(sealed.trim_end()) {
            *own = Some((
                head.clone(),
                Head {
                    seq: head.seq + 1,
                    hash: hash.to_owned(),
                },
            ));
        }
        sealed
    };
    let written = append(path, None, &mut next, super::max_bytes());
    if let Some(e) = failed {
        return Err(e);
    }
    let written = written.map_err(|e| CheckpointError::Log(path.to_owned(), e.to_string()))?;
    for note in written.notes {
        super::warn(Some(format!("the decision log {}: {note}", path.display())));
    }
    Ok((covered, wrote))
}
