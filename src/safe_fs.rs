//! Reading the files a config names, as an attacker who wrote the config
//! would test it.
//!
//! # Why
//!
//! A workspace's `.toolgate/` is repository data: whoever wrote it chooses
//! which files toolgate opens. A plain `std::fs::read` lets them choose a
//! FIFO (toolgate blocks forever, and the agent lets the call through when its
//! hook times out), `/dev/zero` (memory until the OOM killer), a `/proc` file,
//! or a symlink to `~/.aws/credentials` whose content then turns up in a parse
//! error that the agent shows the model. So every file a config names is read
//! through here:
//!
//! - **regular files only**: the path is `stat`ed before it is opened (a FIFO,
//!   device or socket is refused without opening it, so nothing blocks and no
//!   device sees an open), opened non-blocking, and checked again on the open
//!   descriptor (the file may have been swapped in between);
//! - **no pseudo-files**: a file on procfs or sysfs is refused (they claim to be
//!   regular files of size 0 and can be endless);
//! - **bounded**: the size is checked before reading and the read stops one byte
//!   past the bound (a file that grows while read is refused, not truncated).
//!   The bounds: [`MAX_CONFIG_BYTES`] for hooks.json, [`MAX_WAT_BYTES`] for a
//!   `.wat`, [`MAX_COMPONENT_BYTES`] for a component;
//! - **inside the workspace**: a path declared by a workspace config must
//!   resolve, after symlinks, beneath the workspace's own canonical root
//!   ([`beneath`]); a symlink out of the tree is refused, naming the path;
//! - **errors never quote content**: [`ReadFileError`] names the path and what
//!   is wrong with it, never a byte of what is in it.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Largest hooks.json read: 1 MiB, hundreds of times any real config.
pub(crate) const MAX_CONFIG_BYTES: u64 = 1 << 20;
/// Largest `.wat` read: 8 MiB of WebAssembly text.
pub(crate) const MAX_WAT_BYTES: u64 = 8 << 20;
/// Largest component read: 128 MiB (the largest guest examples, Python and
/// JavaScript runtimes, are 12–19 MB).
pub(crate) const MAX_COMPONENT_BYTES: u64 = 128 << 20;

/// Why a file a config names was not read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadFileError {
    /// Nothing is there.
    #[error("no such file")]
    NotFound,
    /// A FIFO, a device, a socket or a directory.
    #[error("is {0}, not a regular file")]
    NotRegular(&'static str),
    /// A file in /proc or /sys.
    #[error("is a /proc or /sys pseudo-file, not a regular file")]
    PseudoFile,
    /// Larger than the bound for its kind.
    #[error("is larger than {limit} bytes, the most toolgate reads for it")]
    TooLarge {
        /// The bound.
        limit: u64,
    },
    /// Resolves (after symlinks) outside the root it must stay beneath.
    #[error(
        "resolves to {}, outside the workspace {} (a workspace may only name files in its own tree)",
        resolved.display(),
        root.display()
    )]
    OutsideRoot {
        /// Where it resolves.
        resolved: PathBuf,
        /// The root it must stay beneath.
        root: PathBuf,
    },
    /// The operating system refused.
    #[error("cannot read")]
    Io(#[source] std::io::Error),
}

fn io(e: std::io::Error) -> ReadFileError {
    if e.kind() == std::io::ErrorKind::NotFound {
        ReadFileError::NotFound
    } else {
        ReadFileError::Io(e)
    }
}

/// `path` resolved through every symlink, which must lie beneath `root`
/// (itself resolved). Returns the resolved path, to be opened instead of the
/// one given.
pub(crate) fn beneath(path: &Path, root: &Path) -> Result<PathBuf, ReadFileError> {
    let root = root.canonicalize().map_err(io)?;
    let resolved = path.canonicalize().map_err(io)?;
    if resolved.starts_with(&root) {
        Ok(resolved)
    } else {
        Err(ReadFileError::OutsideRoot { resolved, root })
    }
}

fn kind_of(file_type: std::fs::FileType) -> Option<&'static str> {
    if file_type.is_file() {
        None
    } else if file_type.is_fifo() {
        Some("a FIFO")
    } else if file_type.is_char_device() {
        Some("a character device")
    } else if file_type.is_block_device() {
        Some("a block device")
    } else if file_type.is_socket() {
        Some("a socket")
    } else if file_type.is_dir() {
        Some("a directory")
    } else {
        Some("not a file")
    }
}

/// Checks, without opening it, that `path` (symlinks followed) is a regular
/// file: for programs, which are executed rather than read.
pub(crate) fn regular_file(path: &Path) -> Result<(), ReadFileError> {
    let meta = std::fs::metadata(path).map_err(io)?;
    match kind_of(meta.file_type()) {
        Some(kind) => Err(ReadFileError::NotRegular(kind)),
        None => Ok(()),
    }
}

/// Reads `path` if it is a regular file (not a pseudo-file) of at most
/// `limit` bytes. Never blocks on a FIFO, never reads past `limit + 1`.
pub(crate) fn read(path: &Path, limit: u64) -> Result<Vec<u8>, ReadFileError> {
    regular_file(path)?;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK | nix::libc::O_NOCTTY)
        .open(path)
        .map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if let Some(kind) = kind_of(meta.file_type()) {
        return Err(ReadFileError::NotRegular(kind));
    }
    if is_pseudo(&file) {
        return Err(ReadFileError::PseudoFile);
    }
    if meta.len() > limit {
        return Err(ReadFileError::TooLarge { limit });
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(ReadFileError::Io)?;
    if bytes.len() as u64 > limit {
        return Err(ReadFileError::TooLarge { limit });
    }
    Ok(bytes)
}

fn is_pseudo(file: &File) -> bool {
    use nix::sys::statfs::{PROC_SUPER_MAGIC, SYSFS_MAGIC, fstatfs};
    fstatfs(file).is_ok_and(|fs| {
        let t = fs.filesystem_type();
        t == PROC_SUPER_MAGIC || t == SYSFS_MAGIC
    })
}
