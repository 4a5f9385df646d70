//! Who may change a path: the checks a file or directory toolgate trusts
//! (its state, its socket's folder, a program pinned by path) must pass,
//! apart from reading one (the crate root), because they answer another
//! question: not "is this what the config meant?" but "could another user
//! have put it there?".

use std::path::{Path, PathBuf};

/// Why a file or directory is not safe from other users (see
/// [`owned_by_me`] and [`owner_only`]). Each says what is wrong and, where
/// there is one, the fix.
#[derive(Debug, thiserror::Error)]
pub enum OwnershipError {
    /// Another user owns it (the path is the caller's to name).
    #[error("is owned by uid {owner}, not by the current user (uid {me})")]
    NotMine {
        /// Its owner.
        owner: u32,
        /// The current user.
        me: u32,
    },
    /// Group or others may write it, or (for a private one) read it.
    #[error(
        "is {} by group or others (mode {mode:o}); chmod {} it",
        if *readable { "accessible" } else { "writable" },
        if *readable { "go-rwx" } else { "go-w" }
    )]
    OpenToOthers {
        /// Its permission bits.
        mode: u32,
        /// Whether it had to be private (not even readable by others).
        readable: bool,
    },
    /// It could not be `stat`ed.
    #[error("{}: {error}", path.display())]
    Stat {
        /// What was `stat`ed.
        path: PathBuf,
        /// Why it failed.
        error: std::io::Error,
    },
    /// Neither the user nor root owns it.
    #[error("{} is owned by uid {owner}, neither the current user nor root", path.display())]
    NeitherMineNorRoot {
        /// What was checked.
        path: PathBuf,
        /// Its owner.
        owner: u32,
    },
    /// Group or others may replace it (a directory without the sticky bit).
    #[error(
        "{} is writable by group or others{} (mode {mode:o})",
        path.display(),
        if *dir { " without the sticky bit" } else { "" }
    )]
    Replaceable {
        /// What was checked.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
        /// Whether it is a directory.
        dir: bool,
    },
}

/// ssh's StrictModes rule for a file or directory only the user may
/// change: owned by the current user, with none of the `forbidden` mode
/// bits (`0o022`: nobody else may write; `0o077`: nobody else may even
/// read).
pub fn owned_by_me(meta: &std::fs::Metadata, forbidden: u32) -> Result<(), OwnershipError> {
    use std::os::unix::fs::MetadataExt;
    let me = nix::unistd::geteuid().as_raw();
    if meta.uid() != me {
        return Err(OwnershipError::NotMine {
            owner: meta.uid(),
            me,
        });
    }
    if meta.mode() & forbidden != 0 {
        return Err(OwnershipError::OpenToOthers {
            mode: meta.mode() & 0o7777,
            readable: forbidden & 0o044 != 0,
        });
    }
    Ok(())
}

/// Whether someone other than the user (or root) could replace `path` or
/// what is in it: it and its directory must be owned by the user or root
/// and not writable by group or others (the directory may be if it is
/// sticky, as `/tmp` is). For programs outside a workspace, which trust
/// pins by path rather than by content.
pub fn writable_only_by_owner(path: &Path) -> Result<(), OwnershipError> {
    owner_only(path, false)?;
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => owner_only(parent, true),
        _ => Ok(()),
    }
}

/// `path` is owned by the user or root and writable by nobody else; a
/// directory may be group/other-writable only with the sticky bit (`/tmp`),
/// which keeps others from replacing what is in it.
pub fn owner_only(path: &Path, dir: bool) -> Result<(), OwnershipError> {
    use std::os::unix::fs::MetadataExt;
    let me = nix::unistd::geteuid().as_raw();
    let meta = std::fs::metadata(path).map_err(|error| OwnershipError::Stat {
        path: path.to_owned(),
        error,
    })?;
    if meta.uid() != me && meta.uid() != 0 {
        return Err(OwnershipError::NeitherMineNorRoot {
            path: path.to_owned(),
            owner: meta.uid(),
        });
    }
    let sticky = dir && meta.mode() & 0o1000 != 0;
    if meta.mode() & 0o022 != 0 && !sticky {
        return Err(OwnershipError::Replaceable {
            path: path.to_owned(),
            mode: meta.mode() & 0o7777,
            dir,
        });
    }
    Ok(())
}

/// Why a private directory could not be had (see [`private_dir`]).
#[derive(Debug, thiserror::Error)]
pub enum PrivateDirError {
    /// It was missing and could not be created.
    #[error("{} cannot be created: {error}", dir.display())]
    Create {
        /// The directory.
        dir: PathBuf,
        /// Why it could not be created.
        error: std::io::Error,
    },
    /// It could not be `stat`ed.
    #[error("{}: {error}", dir.display())]
    Stat {
        /// The directory.
        dir: PathBuf,
        /// Why it could not be `stat`ed.
        error: std::io::Error,
    },
    /// Something other than a directory is there.
    #[error("{} is not a directory", dir.display())]
    NotADirectory {
        /// What is there.
        dir: PathBuf,
    },
    /// Another user owns it, or may read or write it.
    #[error("{} {why}", dir.display())]
    NotPrivate {
        /// The directory.
        dir: PathBuf,
        /// What is wrong with it.
        why: OwnershipError,
    },
}

/// `dir` exists, is the user's own and private (created 0700 if missing):
/// the trust store's snapshots, a confined hook's scratch folders.
pub fn private_dir(dir: &Path) -> Result<(), PrivateDirError> {
    use std::os::unix::fs::DirBuilderExt;
    if std::fs::symlink_metadata(dir).is_err() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|error| PrivateDirError::Create {
                dir: dir.to_owned(),
                error,
            })?;
    }
    let meta = std::fs::symlink_metadata(dir).map_err(|error| PrivateDirError::Stat {
        dir: dir.to_owned(),
        error,
    })?;
    if !meta.is_dir() {
        return Err(PrivateDirError::NotADirectory {
            dir: dir.to_owned(),
        });
    }
    owned_by_me(&meta, 0o077).map_err(|why| PrivateDirError::NotPrivate {
        dir: dir.to_owned(),
        why,
    })
}

/// Why a private file could not be opened (see [`open_private`]).
#[derive(Debug, thiserror::Error)]
pub enum OpenPrivateError {
    /// It is a symlink (never followed).
    #[error("{} is a symlink", path.display())]
    Symlink {
        /// The file.
        path: PathBuf,
    },
    /// It could not be opened or inspected.
    #[error("{}: {error}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// Something other than a regular file is there.
    #[error("{} is not a regular file", path.display())]
    NotAFile {
        /// The path.
        path: PathBuf,
    },
    /// Another user owns it, or others may read or write it.
    #[error("{} {why}", path.display())]
    NotPrivate {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        why: OwnershipError,
    },
}

/// Opens (creating it `0600` when missing) a file of the user's own state
/// for reading and appending: never through a symlink, never a FIFO or a
/// device (opened non-blocking, checked on the descriptor), and refused
/// when another user owns it or others may read or write it. Its folder
/// is the caller's to check ([`private_dir`]).
pub fn open_private(path: &Path) -> Result<std::fs::File, OpenPrivateError> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK | nix::libc::O_CLOEXEC)
        .open(path)
        .map_err(|error| match error.raw_os_error() {
            Some(nix::libc::ELOOP) => OpenPrivateError::Symlink {
                path: path.to_owned(),
            },
            _ => OpenPrivateError::Io {
                path: path.to_owned(),
                error,
            },
        })?;
    let meta = file.metadata().map_err(|error| OpenPrivateError::Io {
        path: path.to_owned(),
        error,
    })?;
    if !meta.file_type().is_file() {
        return Err(OpenPrivateError::NotAFile {
            path: path.to_owned(),
        });
    }
    owned_by_me(&meta, 0o077).map_err(|why| OpenPrivateError::NotPrivate {
        path: path.to_owned(),
        why,
    })?;
    Ok(file)
}
