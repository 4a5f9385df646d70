//! One integration-test binary, a module per boundary.
//!
//! Hooks here are real processes (sh and python3 scripts written to temporary
//! workspaces) and the CLI tests run the real `toolgate` executable.

mod attacks;
mod build;
mod busy;
mod chain;
mod claude;
mod cli;
mod config;
mod decision_log;
mod dialect_claude_code;
mod dialect_copilot;
mod dialect_cursor;
mod dialect_gemini;
mod dialect_opencode;
mod dialect_qwen;
mod doors;
mod env_table;
mod faults;
mod first_hour;
mod fuzz_corpus;
pub(crate) mod guards;
mod guest_examples;
mod guests;
mod hermetic;
mod install;
mod interceptor;
mod layers;
mod live;
mod log_chain;
mod managed;
pub(crate) mod mcp;
mod mcp_conformance;
pub(crate) mod mcp_http;
pub(crate) mod mcp_stateless;
mod metrics;
mod mock_model;
mod oci;
mod props;
mod replay;
mod scaffold;
mod sdk;
mod security;
pub(crate) mod serve;
pub(crate) mod serve_http;
mod serve_memory;
mod session_state;
mod shadow;
mod signing;
mod snapshots;
mod soak;
mod subprocess;
mod support;
mod trust;
mod unknown_events;
mod wasm;
