//! The toolgate server: keep hooks loaded and answer chain evaluations over a
//! Unix socket (and Claude Code's http hooks, and Prometheus scrapes), so a
//! per-call agent process only forwards its input. `toolgate serve` starts
//! it; what it answers, a one-shot `toolgate check` or agent command answers
//! alike: the same chain, the same [`answer`] for Claude Code's calls, and
//! the same observers (the decision log, `toolgate_log`, and here the
//! [`metrics`]) told by the runner.
//!
//! # Why a crate of its own
//!
//! The server was the command-line tool's biggest room, mixed with the
//! doctor, the installer and the decision log. Here it is one crate with a
//! module per transport (`socket` for the Unix socket, see [`serve`];
//! [`http`], [`metrics`]), the state they share (`server`), and Claude
//! Code's [`answer`] with the call ledger beside the chain. The decision
//! log, which every host writes through the runner's observers, is its own
//! crate (`toolgate-log`). It is the binary's crate, not an embedder's: like
//! `toolgate-hook` its errors are `anyhow`'s, and its configuration is what
//! the program that starts it read from its own environment
//! ([`Options`]). It depends on the library and the hook process, never the
//! other way round.
//!
//! # Why a server, and why this shape
//!
//! Claude Code and Codex start a fresh `toolgate` for every tool call; each
//! then parses its configs and loads its components. A long-lived process
//! per user keeps compiled components, instance pools and parsed configs
//! warm (OPA's server mode, and the community daemons for Claude Code hooks,
//! are the same idea). The per-call process stays as the agent's hook and
//! falls back to evaluating itself when no server answers (toolgate-hook's
//! `client.rs`).
//!
//! # Protocol
//!
//! One JSON object per line each way, over `$XDG_RUNTIME_DIR/toolgate/serve.sock`
//! (else `/tmp/toolgate-<uid>/serve.sock`; `TOOLGATE_SOCKET` or `--socket`
//! overrides); the messages are `toolgate::serve`'s types, shared with the
//! client. The directory is created 0700 and must be the user's own; a
//! connecting process must be the same user (`SO_PEERCRED`), else it gets an
//! error line and the connection is closed. A request of another protocol
//! version, or in a mode this build does not answer, is refused with an
//! error before it is acknowledged (the client then evaluates it itself); it
//! is never answered in another agent's format.
//!
//! Requests on one connection are evaluated concurrently and answered as
//! each finishes (match them by `id`). Each has a deadline (`deadline_ms`,
//! else the chain's own). A line longer than [`MAX_LINE`] is answered with
//! an error and the connection closed: it is never buffered without bound.
//!
//! # One request, near its floor
//!
//! A warm request is one read, the reload check's `stat`s, the chain, and
//! one write. The evaluation is polled once on the connection's own task:
//! a chain of in-process or wasm hooks that is already loaded answers
//! within that poll, and the ack and the answer go out together in one
//! write, ack first, so every client reads the two lines it always read
//! and the protocol is unchanged. A request that has to wait (a load, a
//! subprocess hook, a guest that yields) is acknowledged at once and
//! finishes in a task of its own, as before: the ack is what tells the
//! client, within its `ACK_TIMEOUT`, that the server owns the call and a
//! silence from here on blocks it rather than sending it to the local
//! fallback. Neither a task hand-off nor a second write is paid by the
//! requests that do not wait.
//!
//! # One loaded config per workspace, reloaded when its files change
//!
//! The server's configuration is its own: the global config dir, trust
//! store, `PATH` and decision log come from the environment it was started
//! in, never from a request. A request names only the workspace and the
//! call. Before, each request carried the caller's locations and the server
//! loaded them: a confined workspace hook reached the socket, named a
//! folder in its scratch space as the global config, and the server ran
//! that config's command hook unconfined. The client still sends its own
//! locations, but only so that the server can refuse a caller started with
//! another configuration (before acknowledging: that caller evaluates its
//! call itself, in its own process, exactly as when no server runs).
//!
//! A config is loaded per workspace root (with the server's own global
//! config dir, trust store and `PATH`). Before each evaluation the server compares the
//! files that config came from (both hooks.json files, the trust record,
//! each component) with what it loaded, by device, inode, size, mtime and
//! ctime (ctime cannot be set by a user, so a rewrite that restores the
//! mtime is still seen), and reloads when any differ. What it compares
//! against is the identity each file's bytes were read under
//! ([`Config::sources`]: taken from the open descriptor before reading and
//! checked after), not a `stat` taken once loading is done: a component
//! replaced while it compiled would otherwise be stamped with the new
//! file's identity and the old guard would answer until the next edit.
//! A config that is not a function of those files ([`Config::settled`]: a
//! workspace hook was refused because its private copy could not be made on
//! a full disk or a read-only store, its files could not be read for want
//! of descriptors, or they differ from what was trusted) is loaded again at
//! the next call: no stamp would tell that the disk was freed, or the
//! hook's file restored.
//!
//! The check stays a `stat` per file per request, not an inotify watch.
//! A watch would trade the `stat`s (about a microsecond each, a few per
//! request) for a thread or a drained descriptor, and for cases it gets
//! wrong or late: events are queued, not synchronous with the writer's
//! return, so "the next request after an edit sees it" would need a drain
//! per request anyway; a watch follows an inode, not a path, so a rename
//! over the file or a swapped parent directory needs watches on every
//! ancestor; and an overflowed queue silently drops events. A check that
//! skips itself when the last one was recent would let the next request
//! after an edit miss it. The `stat`s are what is left of the reload
//! check on the hot path, and they are cheap next to the rest. A reload that fails keeps the last good
//! config, and every answer carries the error as a `warning` (and `status`
//! shows it) until the files are fixed. Workspace command files are checked
//! by the trust gate itself before every spawn. The trust store's directory
//! is checked on every request as the one-shot path checks it (owner, mode,
//! not a symlink, its parent): its mode is no file's content, and a store
//! others can write must stop trusting at the next call, not at the next
//! edit. A config whose store is now refused is not kept as the last good
//! one.
//!
//! # Bounded for weeks
//!
//! At most `--max-workspaces` configs stay loaded (default
//! [`DEFAULT_MAX_WORKSPACES`]); a new workspace past that drops the least
//! recently used, which loads again on its next request; and a workspace
//! without a call for `--unload-idle` (default [`DEFAULT_UNLOAD_IDLE`]) is
//! dropped too, so a checkout left open does not hold its components'
//! compiled code for weeks: its next call maps them again from the
//! compile cache (milliseconds; the warm child only checks the cache). A
//! chain in use is never dropped under a call. A load runs in a
//! task of its own that holds its workspace's slot: requests for that
//! workspace wait for the one load instead of starting their own, and a
//! call whose deadline passes first is blocked (an error: the caller fails
//! closed, as for a chain past its deadline) while the load goes on and
//! fills the slot, so the next call is answered instead of timing out on
//! the same compile again. `toolgate serve status` reports the counters
//! ([`stats`]); with `--metrics`, Prometheus series of each evaluation's
//! outcome and of these events are served too ([`metrics`]).
//!
//! # Back-pressure, not collapse
//!
//! At most `--max-in-flight` calls are evaluated at once (default
//! [`DEFAULT_MAX_IN_FLIGHT`]). A call over the socket past that is answered
//! `busy` instead of acknowledged, at once: its caller (the agent's
//! per-call process) evaluates it itself, in its own process, with the
//! same chain, exactly as when no server runs. The server never holds a
//! queue of calls without bound, and a flood costs it a line per call, not
//! memory. Calls over HTTP cannot be handed back (Claude Code has no
//! fallback, and a non-2xx lets the call through in older releases), so
//! one waits for a slot until its deadline and is then blocked, with the
//! reason; they are at most `MAX_CONNECTIONS` at once. Both are counted
//! (`status`'s `busy`, `toolgate_fallbacks_total{reason="busy"}`), and
//! `toolgate_in_flight` shows the load. The descriptor limit is raised to
//! its hard limit at start, so a thousand connections waiting for an
//! answer do not run the server out of descriptors first.
//!
//! # Memory
//!
//! A component is compiled once, into the compile cache, and every load
//! after that maps the entry: the code is file-backed pages, shared with
//! the one-shot processes that map the same entry, and the kernel may
//! reclaim them. What the server must not do is compile: Cranelift's
//! working memory for a language runtime is hundreds of MiB, and the
//! allocator keeps what it freed (glibc's per-thread arenas are 64 MiB
//! heaps that are not given back). Measured on a 2-core VM with the six
//! guest examples: compiled in the server, 860 MiB resident after the first
//! call of each (835 MiB of it anonymous: ~10 arenas of freed compiler heap
//! plus the code held in memory); warmed by a child (`toolgate hooks` for
//! the workspace, run by the program that starts the server:
//! [`Options::warm`]) and mapped from the cache, 115 MiB (6 MiB anonymous,
//! 109 MiB the mapped code). This is the 885 MiB the soak saw. A child the
//! server cannot run, or one that fails, leaves the compile to the server's
//! own load, as before.
//!
//! # When accept fails
//!
//! Out of descriptors (EMFILE), the queued connection stays queued and the
//! listener is ready again at once; retrying at once would spin a core. The
//! server pauses instead (10 ms doubling to 1 s, from the start again after
//! an accept succeeds) and says so once per episode; see `toolgate_loopback::backoff`.

pub mod answer;

pub mod http;
mod in_flight;
pub mod metrics;
mod options;
mod server;
mod socket;
mod stats;

pub use in_flight::DEFAULT_MAX_IN_FLIGHT;
pub use options::{Base, DEFAULT_MAX_WORKSPACES, DEFAULT_UNLOAD_IDLE, Options, Warm};
pub use socket::{MAX_LINE, serve};
