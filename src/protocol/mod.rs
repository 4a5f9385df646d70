//! The protocols toolgate speaks with programs that are not Rust: hooks it
//! runs (inward) and agents that run it (outward).
//!
//! # Why a family, in one folder
//!
//! A protocol is a pair of encodings: a request out, an answer in. Keeping
//! each in its own file, behind the small types here, means a new one is a
//! new file and a new variant, not edits across the binding, the CLI and
//! the loader.
//!
//! - **inward** ([`Inward`]): how a subprocess hook is asked and how its
//!   answer is read — `wire` (wire v1, toolgate's own) and `claude` (a hook
//!   written for Claude Code, run unmodified);
//! - **outward** ([`Outward`]): toolgate *as* an agent's hook — `agent`
//!   reads Claude Code's or Codex's hook stdin and renders the chain's
//!   outcome in that agent's dialect;
//! - `import` turns Claude Code settings into hooks.json; `transcript` reads
//!   Claude Code transcripts for `replay`.
//!
//! # Decoding does not depend on a process
//!
//! Each inward protocol decodes an answer *document* (the bytes a hook
//! wrote) with a pure function that knows nothing of exit codes, so it can be
//! tested on its own and reused by anything that carries the same document.
//! What an exit code means is a separate, thin step ([`Inward::read`]):
//! wire v1 reads stdout only after exit 0; Claude Code reads exit 2 as a
//! denial with stderr as the reason.

pub(crate) mod agent;
pub(crate) mod claude;
pub(crate) mod import;
pub(crate) mod transcript;
pub mod wire;

pub use agent::{AgentCall, Outward, ReadAgentInputError, read_agent_input, render_outcome};
pub use claude::event_name;
pub use import::{Imported, Matcher, import_settings, translate_matcher};

use crate::contract::{Answer, HookRequest};
use crate::failure::HookFailure;
use std::ffi::OsString;
use std::path::Path;

/// How a subprocess hook is spoken to.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, strum::Display, strum::EnumString,
)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum Inward {
    /// toolgate's wire v1.
    #[default]
    Toolgate,
    /// Claude Code's hook protocol.
    ClaudeCode,
}

/// How a hook process ended, as a protocol reads it.
pub(crate) struct Exit<'a> {
    /// The exit code; `None` when a signal ended it.
    pub(crate) code: Option<i32>,
    /// The exit in words (`exit code 3`, `signal 11 (SIGSEGV)`).
    pub(crate) status: &'a str,
    pub(crate) stdout: &'a [u8],
    pub(crate) stderr: &'a [u8],
}

/// An answer read from a hook, and text for the operator when the protocol
/// carries some beside the answer (Claude Code's plain stdout, its
/// `systemMessage`).
pub(crate) struct Read {
    pub(crate) answer: Result<Answer, HookFailure>,
    pub(crate) note: Option<String>,
}

impl Inward {
    /// The bytes for the hook's stdin, and the environment it expects.
    /// `project_dir` is the root of the config that declared the hook.
    pub(crate) fn encode(
        self,
        request: &HookRequest<'_>,
        project_dir: &Path,
    ) -> (Vec<u8>, Vec<(&'static str, OsString)>) {
        match self {
            Inward::Toolgate => (wire::encode_request(request), Vec::new()),
            // Claude Code hooks expect the project root here, and commonly
            // refer to their scripts through it.
            Inward::ClaudeCode => (
                claude::encode_request(request, &project_dir.to_string_lossy()),
                vec![("CLAUDE_PROJECT_DIR", project_dir.as_os_str().to_owned())],
            ),
        }
    }

    /// Reads how the hook ended as an answer.
    pub(crate) fn read(self, request: &HookRequest<'_>, exit: &Exit<'_>) -> Read {
        match self {
            Inward::Toolgate => Read {
                answer: match exit.code {
                    Some(0) => wire::decode_answer(exit.stdout),
                    _ => Err(HookFailure::ExitedNonZero {
                        status: exit.status.to_owned(),
                    }),
                },
                note: None,
            },
            Inward::ClaudeCode => claude::read_exit(request.event, exit, request.result),
        }
    }
}
