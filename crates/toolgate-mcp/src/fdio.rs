//! The client's stdin and stdout, read and written without a thread hop.
//!
//! tokio's `stdin()` and `stdout()` do each read and write on its
//! blocking thread pool: every message from the client and every answer to
//! it crosses threads twice, which on the bench machine was most of what
//! the proxy added to a call. An MCP client gives its server pipes or a
//! socket pair, which epoll can watch, so the proxy registers them with
//! the reactor instead ([`AsyncFd`]), after making them non-blocking; the
//! flags are put back when the proxy is done, since the file description
//! may outlive it (a terminal, a shell's pipe). What epoll cannot watch (a
//! regular file as stdin) falls back to tokio's own.

use nix::fcntl::{FcntlArg, OFlag, fcntl};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// A standard stream registered with the reactor.
pub(crate) struct Stream {
    fd: AsyncFd<OwnedFd>,
    /// The flags it had, put back on drop.
    flags: OFlag,
}

impl Stream {
    /// Stream `fd` (0 or 1), if epoll can watch it.
    pub(crate) fn open(fd: BorrowedFd<'_>) -> Option<Self> {
        let owned = fd.try_clone_to_owned().ok()?;
        let flags = OFlag::from_bits_truncate(fcntl(&owned, FcntlArg::F_GETFL).ok()?);
        fcntl(&owned, FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK)).ok()?;
        // SAFETY: `owned` is an open descriptor this `Stream` owns (a dup,
        // closed only when the `AsyncFd` drops it), so it refers to the same
        // file description for the `AsyncFd`'s whole life.
        #[allow(unsafe_code)]
        let registered = unsafe { AsyncFd::register(owned) };
        match registered {
            Ok(fd) => Some(Stream { fd, flags }),
            Err(e) => {
                tracing::debug!("stdio falls back to tokio's: {e}");
                let _ = fcntl(fd, FcntlArg::F_SETFL(flags));
                None
            }
        }
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        let _ = fcntl(self.fd.get_ref(), FcntlArg::F_SETFL(self.flags));
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        loop {
            let mut guard = ready!(self.fd.poll_read_ready(cx))?;
            let unfilled = buf.initialize_unfilled();
            match guard
                .try_io(|fd| nix::unistd::read(fd.get_ref(), unfilled).map_err(io::Error::from))
            {
                Ok(Ok(n)) => {
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Ok(Err(e)) => return Poll::Ready(Err(e)),
                Err(_would_block) => {}
            }
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        loop {
            let mut guard = ready!(self.fd.poll_write_ready(cx))?;
            match guard.try_io(|fd| nix::unistd::write(fd.get_ref(), data).map_err(io::Error::from))
            {
                Ok(result) => return Poll::Ready(result),
                Err(_would_block) => {}
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

impl AsRawFd for Stream {
    fn as_raw_fd(&self) -> i32 {
        self.fd.get_ref().as_raw_fd()
    }
}

/// This process's stdin, registered if it can be, else tokio's.
pub(crate) fn stdin() -> Pin<Box<dyn AsyncRead + Send>> {
    match Stream::open(io::stdin().as_fd()) {
        Some(stream) => Box::pin(stream),
        None => Box::pin(tokio::io::stdin()),
    }
}

/// This process's stdout, registered if it can be, else tokio's.
pub(crate) fn stdout() -> Pin<Box<dyn AsyncWrite + Send>> {
    match Stream::open(io::stdout().as_fd()) {
        Some(stream) => Box::pin(stream),
        None => Box::pin(tokio::io::stdout()),
    }
}
