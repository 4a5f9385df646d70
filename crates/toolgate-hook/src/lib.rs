//! The hook process: what `toolgate <agent>` and the lean client
//! `toolgate-hook <agent>` both do for an agent that starts a process per
//! tool call (the deadline and its watchdog, the panic hook, reading the
//! agent's input and the workspace, asking a running `toolgate serve`,
//! blocking in the agent's form), and the lean client's own `main`.
//!
//! # Why a crate of its own
//!
//! The lean client exists to start about as fast as a program that does
//! nothing: it forwards the call to the server and, when no server takes
//! it, hands it to the full binary. Before this crate it was a second
//! binary of the command-line tool, compiled from the same files, and it
//! started in 1.97 ms because what it reached through the agent dialects'
//! trait object linked most of the library. Here it is built on the
//! contract, the agent dialects and the support layer only: cargo, not
//! the linker's reachability, keeps wasmtime, tokio and hyper out of it
//! (`tests/all/layers.rs` pins the graph). The full binary uses the same
//! modules, so the two cannot drift apart in what they answer.
//!
//! Not a library for embedders: it is the body of two binaries, so it
//! reports with `anyhow` as they do, and its items are public only for
//! the command-line tool.

pub mod client;
pub mod env;
pub mod hook_process;
pub mod lean;
