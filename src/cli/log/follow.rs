//! `toolgate log --json --follow`: the log as a stream of JSON lines, for a
//! collector (Vector, Fluent Bit, a shell loop) that wants each decision as
//! it is made.
//!
//! # Why poll, and how rotation is seen
//!
//! The log is appended to by many processes and renamed to `.1` when it
//! reaches its size (`decision_log`'s rotation). A follower that holds the
//! file open keeps reading the renamed file to its end, then opens the new
//! one at the path from its first byte: each record is printed once, in
//! the order written, across a rotation, as `tail -F` does. It polls (every
//! [`POLL`]) rather than asking the kernel to notify it: one `stat` a tick
//! is nothing next to a decision, and it needs no watch a container or a
//! network filesystem may not give. Only whole lines are printed: a record
//! being written is printed once its newline is there.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::Duration;

/// How often the log is looked at for new records.
const POLL: Duration = Duration::from_millis(200);

/// Returns once a file is at `path`.
pub(super) fn wait_for(path: &Path) {
    while !path.exists() {
        std::thread::sleep(POLL);
    }
}

/// Opens the log at `path` to follow it, and reads what it holds now (at
/// most its last `max` bytes, from a whole line): the text, and the
/// follower that goes on from its end.
pub(super) fn start(path: &Path, max: u64) -> anyhow::Result<(Follower, String)> {
    let mut f = Follower::open(path)?;
    let len = f.file.metadata().map(|m| m.len()).unwrap_or(0);
    let cut = len > max;
    if cut {
        f.skip_to(len - max);
    }
    let mut text = f.read_new()?;
    if cut {
        // Started mid-line: drop its end.
        text = text
            .split_once('\n')
            .map(|(_, r)| r.to_owned())
            .unwrap_or_default();
    }
    Ok((f, text))
}

/// The log file at `path`, open, where reading stopped, and the bytes of a
/// line not yet whole.
pub(super) struct Follower {
    file: File,
    at: u64,
    partial: Vec<u8>,
}

impl Follower {
    /// Opens the log at `path` (to be read to its end before following).
    pub(super) fn open(path: &Path) -> anyhow::Result<Follower> {
        let file = File::open(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        Ok(Follower {
            file,
            at: 0,
            partial: Vec::new(),
        })
    }

    /// The whole lines from `at` to the end now, as text; what follows the
    /// last newline waits for the rest of its line.
    pub(super) fn read_new(&mut self) -> anyhow::Result<String> {
        self.file.seek(SeekFrom::Start(self.at))?;
        let mut bytes = Vec::new();
        self.file.read_to_end(&mut bytes)?;
        self.at += bytes.len() as u64;
        self.partial.extend_from_slice(&bytes);
        let whole = match self.partial.iter().rposition(|b| *b == b'\n') {
            Some(end) => {
                let rest = self.partial.split_off(end + 1);
                std::mem::replace(&mut self.partial, rest)
            }
            None => Vec::new(),
        };
        Ok(String::from_utf8_lossy(&whole).into_owned())
    }

    /// Reading from `start` on, skipping what came before (printed
    /// already, or older than asked for).
    pub(super) fn skip_to(&mut self, start: u64) {
        self.at = start;
        self.partial.clear();
    }

    /// Prints each new record as it is written, forever (until stdout is
    /// closed: `outln!` ends the process).
    pub(super) fn follow(mut self, path: &Path) -> anyhow::Result<()> {
        loop {
            let text = self.read_new()?;
            for line in text.lines().filter(|l| !l.trim().is_empty()) {
                outln!("{line}");
            }
            if text.is_empty() {
                if self.rotated(path) {
                    // The renamed file is read to its end above; a line it
                    // left unfinished never will be.
                    let rest = self.read_new()?;
                    for line in rest.lines().filter(|l| !l.trim().is_empty()) {
                        outln!("{line}");
                    }
                    match Follower::open(path) {
                        Ok(next) => self = next,
                        Err(_) => std::thread::sleep(POLL),
                    }
                    continue;
                }
                std::thread::sleep(POLL);
            }
        }
    }

    /// Whether `path` now names another file than the one read (it was
    /// rotated, or removed).
    fn rotated(&self, path: &Path) -> bool {
        let Ok(held) = self.file.metadata() else {
            return true;
        };
        match std::fs::metadata(path) {
            Ok(now) => now.ino() != held.ino() || now.dev() != held.dev(),
            Err(_) => false,
        }
    }
}
