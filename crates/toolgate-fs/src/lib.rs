//! toolgate's support layer: the file system as an attacker who wrote a
//! repository would test it. Its own crate (below the library, beside the
//! contract) because three programs read the same files the same way: the
//! library loading a config, the lean client `toolgate-hook` finding the
//! workspace of a call, and the agent dialects reading an agent's settings.
//! The lean client must not link the library to do it.
//!
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
//!
//! # The identity of the bytes read
//!
//! Two things remember a file by its `stat` instead of its content: the
//! compile cache's stat index (a one-shot process finds a component's cache
//! entry without hashing it) and `toolgate serve` (it reloads a config when
//! one of its files changes). Both must record the identity of the bytes
//! they actually read: an identity taken after reading may belong to a file
//! swapped in meanwhile, and would then vouch for the old content under the
//! new file's name until the next edit. So [`read_identified`] takes the
//! identity ([`FileIdentity`]) from the open descriptor *before* reading,
//! and after reading checks it again on the descriptor and on a fresh `stat`
//! of the path; a file that changed in between is read again, at most
//! [`READ_ATTEMPTS`] times, then refused ([`ReadFileError::Unstable`]).

mod owner;
pub mod workspace;

pub use owner::{
    OpenPrivateError, OwnershipError, PrivateDirError, open_private, owned_by_me, owner_only,
    private_dir, writable_only_by_owner,
};

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Largest hooks.json read: 1 MiB, hundreds of times any real config.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;
/// Largest `.wat` read: 8 MiB of WebAssembly text.
pub const MAX_WAT_BYTES: u64 = 8 << 20;
/// Largest component read: 128 MiB (the largest guest examples, Python and
/// JavaScript runtimes, are 12–19 MB).
pub const MAX_COMPONENT_BYTES: u64 = 128 << 20;

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
    /// Another user owns it, or could write it (or a folder on its way
    /// from the workspace root).
    #[error("is not read: {} {why}; another user could configure this user's hooks through it", path.display())]
    Foreign {
        /// The file or folder.
        path: PathBuf,
        /// Who else could change it.
        why: String,
    },
    /// It changed while it was read, every time it was read.
    #[error("changed while it was read, {attempts} times in a row; try again once it is written")]
    Unstable {
        /// How many times it was read.
        attempts: usize,
    },
    /// The operating system refused.
    #[error("cannot read")]
    Io(#[source] std::io::Error),
}

/// How many times a file that changes while it is read is read again
/// before it is refused.
pub const READ_ATTEMPTS: usize = 3;

/// Which bytes a file held, as `stat` tells: device, inode, size, mtime and
/// ctime. Equal identities are taken to mean the same bytes, which is sound
/// because no user can set a ctime: any write, truncation, rename over or
/// `touch` changes it (or the inode). Within one clock tick of a write that
/// can fail (git's "racily clean" entries), which is why the stat index
/// records nothing that changed in the last seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FileIdentity {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl FileIdentity {
    /// The identity `meta` describes.
    pub fn of(meta: &std::fs::Metadata) -> FileIdentity {
        use std::os::unix::fs::MetadataExt;
        FileIdentity {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }

    /// The identity of the file at `path` now (symlinks followed); `None`
    /// when there is none or it cannot be `stat`ed.
    pub fn of_path(path: &Path) -> Option<FileIdentity> {
        std::fs::metadata(path).ok().map(|m| FileIdentity::of(&m))
    }

    /// The file's size.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// When its inode last changed (the ctime).
    pub fn changed_at(&self) -> std::time::SystemTime {
        let (secs, nanos) = self.ctime;
        std::time::UNIX_EPOCH
            + std::time::Duration::new(
                u64::try_from(secs).unwrap_or(0),
                u32::try_from(nanos).unwrap_or(0),
            )
    }

    /// Its fields as words, for the compile cache's stat index.
    pub fn words(&self) -> [i64; 7] {
        [
            self.dev as i64,
            self.ino as i64,
            self.size as i64,
            self.mtime.0,
            self.mtime.1,
            self.ctime.0,
            self.ctime.1,
        ]
    }

    /// Whether the bytes just read from `file`, opened as `before`, are
    /// still what it and `path` hold: the descriptor and a fresh `stat` of
    /// the path (`lstat` when the file was opened without following a
    /// symlink) both still show `before`.
    pub fn still(&self, file: &File, path: &Path, follow: bool) -> bool {
        let now = file.metadata().map(|m| FileIdentity::of(&m));
        let at_path = if follow {
            std::fs::metadata(path)
        } else {
            std::fs::symlink_metadata(path)
        };
        now.is_ok_and(|now| now == *self) && at_path.is_ok_and(|m| FileIdentity::of(&m) == *self)
    }
}

fn io(e: std::io::Error) -> ReadFileError {
    if e.kind() == std::io::ErrorKind::NotFound {
        ReadFileError::NotFound
    } else {
        ReadFileError::Io(e)
    }
}

/// `path` resolved through every symlink, which must lie beneath `root`
/// (itself resolved), with the root, every folder on the way and the file
/// itself owned by the user or root and writable by nobody else
/// ([`owned_chain`]). Returns the resolved path, to be opened instead of the
/// one given.
pub fn beneath(path: &Path, root: &Path) -> Result<PathBuf, ReadFileError> {
    let root = root.canonicalize().map_err(io)?;
    let resolved = path.canonicalize().map_err(io)?;
    if !resolved.starts_with(&root) {
        return Err(ReadFileError::OutsideRoot { resolved, root });
    }
    owned_chain(&root, &resolved)?;
    Ok(resolved)
}

/// Another user must not be able to write what configures the chain: `root`
/// and each path from it down to `resolved` (both canonical, `resolved`
/// beneath `root`) must be owned by the current user or root and not
/// writable by group or others. A sticky bit does not excuse a folder here:
/// in a sticky `/tmp` another user can still *create* the `.toolgate/` or
/// hooks.json that is missing.
pub fn owned_chain(root: &Path, resolved: &Path) -> Result<(), ReadFileError> {
    checked_chain(root, resolved, foreign_writer)
}

/// [`owned_chain`] with the judge of each path's metadata given.
fn checked_chain(
    root: &Path,
    resolved: &Path,
    judge: fn(&std::fs::Metadata) -> Option<String>,
) -> Result<(), ReadFileError> {
    let mut path = root.to_owned();
    let rest = resolved.strip_prefix(root).unwrap_or(Path::new(""));
    let check = |p: &Path| -> Result<(), ReadFileError> {
        let meta = std::fs::metadata(p).map_err(io)?;
        judge(&meta).map_or(Ok(()), |why| {
            Err(ReadFileError::Foreign {
                path: p.to_owned(),
                why,
            })
        })
    };
    check(&path)?;
    for part in rest.components() {
        path.push(part);
        check(&path)?;
    }
    Ok(())
}

/// Who other than the user (or root) could change a file or folder with
/// this metadata, in words; `None` when nobody could.
pub fn foreign_writer(meta: &std::fs::Metadata) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let me = nix::unistd::geteuid().as_raw();
    if meta.uid() != me && meta.uid() != 0 {
        return Some(format!(
            "is owned by {}, neither the current user (uid {me}) nor root",
            user_name(meta.uid())
        ));
    }
    if meta.mode() & 0o022 != 0 {
        return Some(format!(
            "is writable by group or others (mode {:o}){}",
            meta.mode() & 0o7777,
            if meta.mode() & 0o1000 != 0 {
                ", sticky or not"
            } else {
                ""
            }
        ));
    }
    None
}

/// Who other than root could change a file or folder with this metadata,
/// in words; `None` when only root could. For the managed layer, which
/// binds every user of the machine, the current user included.
pub fn non_root_writer(meta: &std::fs::Metadata) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    if meta.uid() != 0 {
        return Some(format!("is owned by {}, not root", user_name(meta.uid())));
    }
    (meta.mode() & 0o022 != 0).then(|| {
        format!(
            "is writable by group or others (mode {:o})",
            meta.mode() & 0o7777
        )
    })
}

/// Reads `dir/name` as only root may have written it: `dir` (resolved),
/// each folder above it and the file itself owned by root and writable by
/// nobody else ([`non_root_writer`]), the file opened without following a
/// symlink (a symlink is refused, wherever it points). `NotFound` when
/// `dir` or the file is not there.
pub fn read_root_owned(
    dir: &Path,
    name: &str,
    limit: u64,
) -> Result<(Vec<u8>, FileIdentity), ReadFileError> {
    let dir = dir.canonicalize().map_err(io)?;
    checked_chain(Path::new("/"), &dir, non_root_writer)?;
    let path = dir.join(name);
    read_checked(&path, limit, false, non_root_writer)
}

/// `path` (resolved), each folder above it and the file it resolves to are
/// root's and writable by nobody else ([`non_root_writer`]): what the
/// managed layer names must be as safe from the user as its `hooks.json`.
pub fn root_owned_file(path: &Path) -> Result<(), ReadFileError> {
    let resolved = path.canonicalize().map_err(io)?;
    checked_chain(Path::new("/"), &resolved, non_root_writer)
}

/// `uid N (name)`, or `uid N` when the name is unknown.
pub fn user_name(uid: u32) -> String {
    match nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid)) {
        Ok(Some(user)) => format!("uid {uid} ({})", user.name),
        _ => format!("uid {uid}"),
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
pub fn regular_file(path: &Path) -> Result<(), ReadFileError> {
    let meta = std::fs::metadata(path).map_err(io)?;
    match kind_of(meta.file_type()) {
        Some(kind) => Err(ReadFileError::NotRegular(kind)),
        None => Ok(()),
    }
}

/// Reads `path` if it is a regular file (not a pseudo-file) of at most
/// `limit` bytes, with the identity of the bytes read (see the module
/// docs). Never blocks on a FIFO, never reads past `limit + 1`; a file that
/// keeps changing while it is read is refused after [`READ_ATTEMPTS`].
pub fn read_identified(path: &Path, limit: u64) -> Result<(Vec<u8>, FileIdentity), ReadFileError> {
    read_checked(path, limit, true, |_| None)
}

/// [`read_identified`], following a symlink or not, with `judge` asked of
/// the open descriptor's metadata (who could have written it).
fn read_checked(
    path: &Path,
    limit: u64,
    follow: bool,
    judge: fn(&std::fs::Metadata) -> Option<String>,
) -> Result<(Vec<u8>, FileIdentity), ReadFileError> {
    for _ in 0..READ_ATTEMPTS {
        let (file, meta) = open_regular(path, limit, follow)?;
        if let Some(why) = judge(&meta) {
            return Err(ReadFileError::Foreign {
                path: path.to_owned(),
                why,
            });
        }
        let before = FileIdentity::of(&meta);
        let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
        (&file)
            .take(limit + 1)
            .read_to_end(&mut bytes)
            .map_err(ReadFileError::Io)?;
        if bytes.len() as u64 > limit {
            return Err(ReadFileError::TooLarge { limit });
        }
        if bytes.len() as u64 == before.size && before.still(&file, path, follow) {
            return Ok((bytes, before));
        }
    }
    Err(ReadFileError::Unstable {
        attempts: READ_ATTEMPTS,
    })
}

/// The content digest (`blake3:<hex>`) of `path`, read as [`read_identified`] reads:
/// a regular file of at most `limit` bytes, streamed rather than held.
pub fn digest(path: &Path, limit: u64) -> Result<String, ReadFileError> {
    let (file, _) = open_regular(path, limit, true)?;
    let mut hasher = blake3::Hasher::new();
    let copied =
        std::io::copy(&mut file.take(limit + 1), &mut hasher).map_err(ReadFileError::Io)?;
    if copied > limit {
        return Err(ReadFileError::TooLarge { limit });
    }
    Ok(format!("blake3:{}", hasher.finalize().to_hex()))
}

/// Opens `path` if it is a regular file (not a pseudo-file) of at most
/// `limit` bytes, checked before and after opening; returns it and what
/// its descriptor says of it.
/// Without `follow`, a symlink is refused (`O_NOFOLLOW`), not opened.
fn open_regular(
    path: &Path,
    limit: u64,
    follow: bool,
) -> Result<(File, std::fs::Metadata), ReadFileError> {
    if follow {
        regular_file(path)?;
    } else {
        let meta = std::fs::symlink_metadata(path).map_err(io)?;
        if meta.file_type().is_symlink() {
            return Err(ReadFileError::NotRegular("a symlink"));
        }
        if let Some(kind) = kind_of(meta.file_type()) {
            return Err(ReadFileError::NotRegular(kind));
        }
    }
    let nofollow = if follow { 0 } else { nix::libc::O_NOFOLLOW };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK | nix::libc::O_NOCTTY | nofollow)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(nix::libc::ELOOP) if !follow => ReadFileError::NotRegular("a symlink"),
            _ => io(e),
        })?;
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
    Ok((file, meta))
}

fn is_pseudo(file: &File) -> bool {
    use nix::sys::statfs::{PROC_SUPER_MAGIC, SYSFS_MAGIC, fstatfs};
    fstatfs(file).is_ok_and(|fs| {
        let t = fs.filesystem_type();
        t == PROC_SUPER_MAGIC || t == SYSFS_MAGIC
    })
}
