//! The hash chain that makes the decision log tamper-evident: each record
//! ends with its number, the hash of the record before it, and its own hash.
//!
//! # Why the hash sits in the line, last, over the text before it
//!
//! A record's hash is BLAKE3 over the record's own bytes as written, with
//! only the `"hash"` member taken off the end. The alternative, hashing a
//! canonical re-serialisation of the parsed JSON, would make a verifier
//! depend on one JSON library's canonical form (key order, number and
//! escape spelling); hashing the bytes means anyone can check a line with
//! `b3sum` and a text editor. `seq`, `prev` and `hash` are the last three
//! members, so a writer learns where the chain stands by reading the last
//! ~170 bytes of the file, not by parsing a line that may be 64 KiB: the
//! cost per decision stays a `pread` and one hash of the new line (measured
//! in `toolgate bench`, `decision log` scenario). BLAKE3 rather than
//! SHA-256: it is already how toolgate names files and trust pins, and
//! it is several times faster on a 2 KiB line without SHA extensions.
//!
//! # Where the chain stands, and a writer that died mid-line
//!
//! Writers append under the file's lock (see the parent module), so the
//! record before a new one is the file's last line, or, in a file just
//! rotated in, the last line of `<log>.1`: the chain continues across
//! rotation. A writer killed inside its `write` can leave part of a line
//! (a multi-page write is interruptible by `SIGKILL`). The next writer,
//! holding the lock, cuts that partial line off, chains to the last whole
//! record, and says in its own record how many bytes it cut
//! (`torn_bytes`): the partial record never was a record, and keeping it
//! would leave a line that is not JSON in the middle of the log; saying
//! what was cut keeps the evidence. `toolgate log verify` reports a
//! partial last line nobody has cut yet as a truncated tail.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// The hash before the first record.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// `,"hash":"` + 64 hex digits + `"}`.
const SEAL_LEN: usize = 9 + 64 + 2;
/// `,"prev":"` + 64 hex digits + `"`.
const PREV_LEN: usize = 9 + 64 + 1;
/// What a writer reads from the end of the file to find where the chain
/// stands: more than `,"seq":<20 digits>` + prev + seal + newline.
const TAIL: usize = 256;

/// Where the chain stands: the last record's number and hash (`0` and
/// [`GENESIS`] before the first).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Head {
    /// The record's number: one more than the record before it.
    pub seq: u64,
    /// The record's hash, hex.
    pub hash: String,
}

impl Head {
    /// Where a log with no record stands.
    pub fn genesis() -> Head {
        Head {
            seq: 0,
            hash: GENESIS.to_owned(),
        }
    }
}

/// The hash of a record's text without its `"hash"` member.
pub fn digest(body: &[u8]) -> String {
    blake3::hash(body).to_hex().to_string()
}

/// `body` (one JSON object, ending in `}`, its last members `seq` and
/// `prev`) sealed with its hash, as a line.
pub fn seal(body: &str) -> String {
    let hash = digest(body.as_bytes());
    let open = body.strip_suffix('}').unwrap_or(body);
    format!("{open},\"hash\":\"{hash}\"}}\n")
}

/// A sealed line (without its newline) split into the text its hash is
/// over and the hash it claims; `None` when it does not end in a seal.
pub fn unseal(line: &str) -> Option<(String, &str)> {
    let (open, hash) = split_seal(line)?;
    Some((format!("{open}}}"), hash))
}

/// The text before a line's seal (without its closing brace) and the hash
/// the seal claims; `None` when the line (or its tail) does not end in one.
pub(crate) fn split_seal(line: &str) -> Option<(&str, &str)> {
    let cut = line.len().checked_sub(SEAL_LEN)?;
    let hash = line
        .get(cut..)?
        .strip_prefix(",\"hash\":\"")?
        .strip_suffix("\"}")?;
    is_hex64(hash).then(|| (&line[..cut], hash))
}

fn is_hex64(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The `seq` and `hash` at the end of a sealed line's last bytes `tail`
/// (without the newline), read from the text alone; `None` when the line
/// does not end as a sealed record does.
fn head_of_tail(tail: &str) -> Option<Head> {
    let (rest, hash) = split_seal(tail)?;
    let prev = rest.get(rest.len().checked_sub(PREV_LEN)?..)?;
    prev.strip_prefix(",\"prev\":\"")?;
    let rest = &rest[..rest.len() - PREV_LEN];
    let at = rest.rfind(",\"seq\":")?;
    let seq = rest[at + 7..].parse().ok()?;
    Some(Head {
        seq,
        hash: hash.to_owned(),
    })
}

/// Where the chain stands at the end of the log `file` (`len` bytes, open
/// for reading and appending, its lock held): its last record, or when it
/// is empty the last record of `previous` (the file rotated out before it).
/// A partial last line is cut off first; the second value is how many
/// bytes were. One `pread` when the file ends with a whole record.
///
/// `previous` is `None` when the file beside the log is not this user's
/// (another user can create `<log>.1` in a shared sticky folder): a chain
/// is never continued from a file someone else wrote.
pub(crate) fn head(file: &File, len: u64, previous: Option<&Path>) -> io::Result<(Head, u64)> {
    if len == 0 {
        return Ok((head_of_file(previous)?, 0));
    }
    let start = len.saturating_sub(TAIL as u64);
    let mut buf = vec![0; (len - start) as usize];
    file.read_exact_at(&mut buf, start)?;
    if buf.last() == Some(&b'\n') {
        return Ok((head_in(&mut buf), 0));
    }
    let whole = whole_end(file, len)?;
    file.set_len(whole)?;
    if whole == 0 {
        return Ok((head_of_file(previous)?, len));
    }
    Ok((last_record(file, whole)?, len - whole))
}

/// The head at the end of a rotated file, read only: nothing is cut from a
/// file no writer appends to.
fn head_of_file(path: Option<&Path>) -> io::Result<Head> {
    let Some(path) = path else {
        return Ok(Head::genesis());
    };
    use std::os::unix::fs::OpenOptionsExt as _;
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Head::genesis()),
        Err(e) => return Err(e),
    };
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok(Head::genesis());
    }
    let whole = whole_end(&file, len)?;
    if whole == 0 {
        return Ok(Head::genesis());
    }
    last_record(&file, whole)
}

/// The head in the line that ends at `end` (just past its newline): a line
/// that is not a sealed record (written before the chain, or rewritten by
/// hand) starts the chain again, which `toolgate log verify` reports.
fn last_record(file: &File, end: u64) -> io::Result<Head> {
    let start = end.saturating_sub(TAIL as u64);
    let mut buf = vec![0; (end - start) as usize];
    file.read_exact_at(&mut buf, start)?;
    Ok(head_in(&mut buf))
}

/// The head in `buf`, the end of a file that ends with a newline.
fn head_in(buf: &mut Vec<u8>) -> Head {
    buf.pop(); // the newline
    let line_start = buf.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let tail = String::from_utf8_lossy(&buf[line_start..]);
    head_of_tail(&tail).unwrap_or_else(Head::genesis)
}

/// The offset just past the file's last newline: `len` when the file ends
/// with a whole line.
fn whole_end(file: &File, len: u64) -> io::Result<u64> {
    let mut last = [0u8];
    file.read_exact_at(&mut last, len - 1)?;
    if last[0] == b'\n' {
        return Ok(len);
    }
    let mut end = len;
    let mut buf = vec![0u8; 64 * 1024];
    while end > 0 {
        let start = end.saturating_sub(buf.len() as u64);
        let chunk = &mut buf[..(end - start) as usize];
        file.read_exact_at(chunk, start)?;
        if let Some(i) = chunk.iter().rposition(|&b| b == b'\n') {
            return Ok(start + i as u64 + 1);
        }
        end = start;
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_line_unseals_to_its_body_and_hash() {
        let body = r#"{"kind":"decision","seq":7,"prev":"0000000000000000000000000000000000000000000000000000000000000000"}"#;
        let line = seal(body);
        let (back, hash) = unseal(line.trim_end()).unwrap();
        assert_eq!(back, body);
        assert_eq!(hash, digest(body.as_bytes()));
        let head = head_of_tail(line.trim_end()).unwrap();
        assert_eq!(head.seq, 7);
        assert_eq!(head.hash, hash);
        assert!(unseal(&line.trim_end().replace("\"hash\"", "\"hasx\"")).is_none());
    }
}
