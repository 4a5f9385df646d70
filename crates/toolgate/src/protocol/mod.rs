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
//! - **outward** ([`Outward`]): toolgate *as* an agent's hook — `agent/`
//!   has one file per agent, each reading that agent's hook stdin and
//!   rendering the chain's outcome in its dialect;
//! - `serve`: what `toolgate serve` and the per-call process say to each
//!   other, typed and versioned, with the agents named by [`Outward`];
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

pub(crate) mod claude;
pub(crate) mod gemini;
pub(crate) mod transcript;
pub use toolgate_contract::{serve, wire};
/// The WIT encoding is the wasm binding's (toolgate-wasm).
#[cfg(feature = "wasm")]
pub(crate) use toolgate_wasm::wit;

pub use toolgate_agents::{
    AgentCall, Imported, Matcher, Outward, ReadAgentInputError, event_name, import_settings,
    read_agent_input, render_outcome, translate_matcher,
};

use crate::contract::{Event, HookRequest, Verdict};
use crate::failure::HookFailure;
use std::ffi::OsString;
use std::path::Path;

/// How a subprocess hook is spoken to.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    strum::Display,
    strum::EnumString,
    strum::VariantNames,
)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum Inward {
    /// toolgate's wire v1.
    #[default]
    Toolgate,
    /// Claude Code's hook protocol.
    ClaudeCode,
    /// Gemini CLI's hook protocol (`BeforeTool` / `AfterTool`).
    Gemini,
}

/// A hook's stdin, and the environment variables it expects.
pub(crate) type Encoded = (Vec<u8>, Vec<(&'static str, OsString)>);

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
    pub(crate) answer: Result<Verdict, HookFailure>,
    pub(crate) note: Option<String>,
}

impl Inward {
    /// The names hooks.json accepts for `protocol`.
    pub const VARIANTS: &'static [&'static str] = <Inward as strum::VariantNames>::VARIANTS;

    /// How listings name it, when it is not the default.
    pub fn label(self) -> Option<&'static str> {
        match self {
            Inward::Toolgate => None,
            Inward::ClaudeCode => Some("Claude Code protocol"),
            Inward::Gemini => Some("Gemini CLI protocol"),
        }
    }

    /// The bytes for the hook's stdin, and the environment it expects.
    /// `project_dir` is the root of the config that declared the hook.
    /// An agent's protocol has no name for `list_tools`: such a hook is not
    /// asked about a list in some other event's name, it fails
    /// (`event_not_spoken`).
    pub(crate) fn encode(
        self,
        request: &HookRequest<'_>,
        project_dir: &Path,
    ) -> Result<Encoded, HookFailure> {
        let not_spoken = |speaks| {
            Err(HookFailure::EventNotSpoken {
                speaks,
                event: request.event.as_str(),
            })
        };
        Ok(match (self, request.event) {
            (Inward::ClaudeCode, Event::ListTools) => {
                return not_spoken("Claude Code's hook protocol");
            }
            (Inward::Gemini, Event::ListTools) => return not_spoken("Gemini CLI's hook protocol"),
            (Inward::Toolgate, Event::PreToolUse | Event::PostToolUse | Event::ListTools) => {
                (wire::encode_request(request), Vec::new())
            }
            // Claude Code hooks expect the project root here, and commonly
            // refer to their scripts through it.
            (Inward::ClaudeCode, Event::PreToolUse | Event::PostToolUse) => (
                claude::encode_request(request, &project_dir.to_string_lossy()),
                vec![("CLAUDE_PROJECT_DIR", project_dir.as_os_str().to_owned())],
            ),
            (Inward::Gemini, Event::PreToolUse | Event::PostToolUse) => {
                gemini::encode_request(request, project_dir)
            }
        })
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
            Inward::Gemini => gemini::read_exit(request.event, exit, request.result),
        }
    }
}

// Every encoding includes the WIT one, which is the wasm binding's.
#[cfg(all(test, feature = "wasm"))]
mod tests {
    use crate::contract::{Event, HookRequest, ToolResult, Verdict};
    use crate::protocol::wit::{bindings as wit, from_wit, to_wit};
    use serde_json::{Value, json};

    fn request<'a>(input: &'a Value, result: Option<&'a ToolResult>) -> HookRequest<'a> {
        HookRequest {
            event: if result.is_some() {
                Event::PostToolUse
            } else {
                Event::PreToolUse
            },
            hook: "guard",
            tool: "Bash",
            input,
            result,
            session_id: Some("s1"),
            turn_id: Some("t1"),
            tool_call_id: Some("c1"),
            cwd: Some("/work"),
            config: None,
            state: Default::default(),
        }
    }

    /// One request, as each encoding carries it.
    #[test]
    fn the_same_call_reads_alike_in_every_encoding() {
        let input = json!({"command": "git push --force"});
        let result = ToolResult::ok(json!({"stdout": "done", "stderr": ""}));
        for req in [request(&input, None), request(&input, Some(&result))] {
            let wire: Value = serde_json::from_slice(&super::wire::encode_request(&req)).unwrap();
            let claude: Value =
                serde_json::from_slice(&super::claude::encode_request(&req, "/w")).unwrap();
            let w = to_wit(&req, None);
            // The tool and its input.
            assert_eq!(
                (wire["tool"].as_str(), claude["tool_name"].as_str()),
                (Some("Bash"), Some("Bash"))
            );
            assert_eq!(w.tool, "Bash");
            assert_eq!((&wire["input"], &claude["tool_input"]), (&input, &input));
            assert_eq!(serde_json::from_str::<Value>(&w.input).unwrap(), input);
            // The event.
            let (wire_event, claude_event, wit_event) = match req.event {
                Event::PreToolUse => ("pre_tool_use", "PreToolUse", wit::Event::PreToolUse),
                Event::PostToolUse => ("post_tool_use", "PostToolUse", wit::Event::PostToolUse),
                Event::ListTools => unreachable!("only pre and post calls are encoded here"),
            };
            assert_eq!(wire["event"], wire_event);
            assert_eq!(claude["hook_event_name"], claude_event);
            assert_eq!(w.event, wit_event);
            // Ids and where.
            assert_eq!(wire["session_id"], "s1");
            assert_eq!(claude["session_id"], "s1");
            assert_eq!(w.session_id.as_deref(), Some("s1"));
            assert_eq!(
                (wire["turn_id"].as_str(), w.turn_id.as_deref()),
                (Some("t1"), Some("t1"))
            );
            assert_eq!(wire["tool_call_id"], "c1");
            assert_eq!(claude["tool_use_id"], "c1");
            assert_eq!(w.tool_call_id.as_deref(), Some("c1"));
            assert_eq!(
                (&wire["cwd"], &claude["cwd"]),
                (&json!("/work"), &json!("/work"))
            );
            assert_eq!(w.cwd.as_deref(), Some("/work"));
            // The result, after the call.
            match req.result {
                Some(r) => {
                    assert_eq!(
                        wire["result"],
                        json!({"output": r.output, "is_error": false})
                    );
                    assert_eq!(claude["tool_response"], r.output);
                    let wr = w.result.as_ref().unwrap();
                    assert_eq!(serde_json::from_str::<Value>(&wr.output).unwrap(), r.output);
                    assert!(!wr.is_error);
                }
                None => {
                    assert!(wire.get("result").is_none() && claude.get("tool_response").is_none());
                    assert!(w.result.is_none());
                }
            }
        }
    }

    /// Each answer, written in each encoding, reads back as itself.
    #[test]
    fn every_answer_reads_back_alike_from_every_encoding() {
        let rewritten = json!({"command": "git push"});
        let replaced = ToolResult::ok(json!("[redacted]"));
        let pre = [
            Verdict::allow(),
            Verdict::deny("no force pushes").with_context("policy 7"),
            Verdict::modify(rewritten.clone()),
            Verdict::ask("a person decides force pushes"),
        ];
        let post = [Verdict::replace(replaced.clone()).with_context("redacted")];
        for (event, answers) in [
            (Event::PreToolUse, &pre[..]),
            (Event::PostToolUse, &post[..]),
        ] {
            for answer in answers {
                // wire v1
                let text = super::wire::encode_answer(answer).to_string();
                assert_eq!(
                    &super::wire::decode_answer(text.as_bytes()).unwrap(),
                    answer,
                    "{text}"
                );
                // WIT
                let decision = match &answer.decision {
                    crate::Decision::Allow => wit::Decision::Allow,
                    crate::Decision::Deny { reason } => wit::Decision::Deny(reason.clone()),
                    crate::Decision::Modify { input } => wit::Decision::Modify(input.to_string()),
                    crate::Decision::Replace { result } => {
                        wit::Decision::Replace(wit::ToolResult {
                            output: result.output.to_string(),
                            is_error: result.is_error,
                        })
                    }
                    crate::Decision::Ask { reason, .. } => wit::Decision::Ask(reason.clone()),
                };
                let from = from_wit(wit::Verdict {
                    decision,
                    context: answer.context.clone(),
                })
                .unwrap();
                assert_eq!(&from, answer);
                // A Claude Code hook's `ask` inside the chain is a denial
                // (its tests are `claude`'s): it does not read back.
                if let crate::Decision::Ask { .. } = answer.decision {
                    continue;
                }
                // Claude Code
                let mut specific = serde_json::Map::new();
                specific.insert("hookEventName".into(), json!(super::event_name(event)));
                if let Some(c) = &answer.context {
                    specific.insert("additionalContext".into(), json!(c));
                }
                match &answer.decision {
                    crate::Decision::Allow => {}
                    crate::Decision::Deny { reason } => {
                        specific.insert("permissionDecision".into(), json!("deny"));
                        specific.insert("permissionDecisionReason".into(), json!(reason));
                    }
                    crate::Decision::Modify { input } => {
                        specific.insert("updatedInput".into(), input.clone());
                    }
                    crate::Decision::Replace { result } => {
                        specific.insert("updatedToolOutput".into(), result.output.clone());
                    }
                    crate::Decision::Ask { .. } => unreachable!("skipped above"),
                }
                let text = json!({"hookSpecificOutput": specific}).to_string();
                let (read, _) = super::claude::decode_answer(event, text.as_bytes(), None);
                assert_eq!(&read.unwrap(), answer, "{text}");
            }
        }
    }
}
