//! Fixtures: one tool call and what the chain must make of it, read from a
//! file a person writes by hand, and judged against the chain's outcome
//! (`toolgate test`).
//!
//! # Why a failure is its own outcome
//!
//! Fail closed blocks a call whose hook crashed, so "the call was blocked"
//! cannot tell a guard that decided to deny from one that trapped on the
//! way there. A test that accepted either would pass a guard that never
//! works (the scaffolds' first `test.sh` did: it compared exit codes). Here
//! an outcome whose deciding run failed is `failed`, never `deny`: a fixture
//! expecting `deny` fails with what went wrong, and only a fixture that says
//! `"decision": "failed"` accepts a failure.
//!
//! # Why strict
//!
//! A misspelt expectation (`"reasn"`) that was ignored would make a fixture
//! pass that checks nothing. So a fixture is read as configs are: no
//! duplicate keys (`strict_json`), unknown keys refused by name, errors at
//! a line and column, and an expectation that cannot apply to the expected
//! decision (a `reason` for an `allow`) refused.
//!
//! # The format
//!
//! ```json
//! {
//!   "about": "sudo is refused, with the program named",
//!   "request": {"tool": "Bash", "input": {"command": "sudo rm -rf /var/cache"}},
//!   "expect": {"decision": "deny", "decided_by": "no-sudo", "reason": "`sudo` is not allowed"}
//! }
//! ```
//!
//! - `request` (required): the call, in wire v1 as `toolgate check` reads
//!   it (`event` defaults to `pre_tool_use`; a `post_tool_use` call carries
//!   `result`).
//! - `expect` (required): `decision` (required): `allow`, `deny`, `modify`,
//!   `replace`, `ask` (a person must confirm) or `failed` (the call was
//!   blocked because a hook could not decide). Optional: `decided_by` (the
//!   deciding hook's name, exact); `reason` (deny, ask, failed), `input`
//!   (modify, and ask when the chain rewrote the call: the final input as
//!   compact JSON), `result` (replace: the output shown, itself when text, else as
//!   compact JSON), `context` (the merged advisory context), `message`
//!   (failed: the failure in words): each a regular expression (Rust
//!   syntax) that must match somewhere in it; `failure` (failed: the kind,
//!   as run records spell it: `trap`, `timed_out`, `exited_non_zero`, …).
//! - `about` (optional): what the fixture is for, for people.

use crate::contract::{Decision, Request};
use crate::failure::FailureKind;
use crate::outcome::Outcome;
use regex::Regex;
use serde::Deserialize;
use serde_json::Value;

/// Why a fixture file cannot be used. Each names the field.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FixtureError {
    /// Not JSON, a duplicate key, an unknown key, a value of the wrong type.
    #[error("{0}")]
    Shape(String),
    /// `request` is not a request `toolgate check` would take.
    #[error("field `request`: {0}")]
    Request(String),
    /// An expectation that is not valid, or cannot apply to the decision.
    #[error("field `expect.{field}`: {why}")]
    Expect {
        /// The field.
        field: &'static str,
        /// What is wrong with it.
        why: String,
    },
}

/// An outcome in one word, as a fixture expects it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, strum::Display, strum::IntoStaticStr)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Expected {
    /// The call may proceed as it is.
    Allow,
    /// A hook decided to deny it.
    Deny,
    /// It proceeds with a rewritten input.
    Modify,
    /// It does not run; the model is shown a replacement.
    Replace,
    /// It runs only if a person confirms it.
    Ask,
    /// It is blocked because a hook could not decide (fail closed).
    Failed,
}

impl Expected {
    /// What `outcome` was, in one word: `failed` when its deciding run
    /// failed, never `deny`.
    pub fn of(outcome: &Outcome) -> Expected {
        if outcome.blocked_by_failure().is_some() {
            return Expected::Failed;
        }
        match outcome.decision {
            Decision::Allow => Expected::Allow,
            Decision::Deny { .. } => Expected::Deny,
            Decision::Modify { .. } => Expected::Modify,
            Decision::Replace { .. } => Expected::Replace,
            Decision::Ask { .. } => Expected::Ask,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFixture {
    #[serde(rename = "about")]
    _about: Option<String>,
    request: Value,
    expect: RawExpect,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExpect {
    decision: Expected,
    decided_by: Option<String>,
    reason: Option<String>,
    input: Option<String>,
    result: Option<String>,
    context: Option<String>,
    failure: Option<String>,
    message: Option<String>,
}

/// One call and what must come of it.
#[derive(Debug)]
pub struct Fixture {
    /// The call.
    pub request: Request,
    /// What must come of it.
    pub expect: Expect,
}

/// What a fixture expects.
#[derive(Debug)]
pub struct Expect {
    /// The outcome, in one word.
    pub decision: Expected,
    /// The deciding hook.
    pub decided_by: Option<String>,
    reason: Option<Regex>,
    input: Option<Regex>,
    result: Option<Regex>,
    context: Option<Regex>,
    failure: Option<FailureKind>,
    message: Option<Regex>,
}

/// Reads a fixture (the bytes of one file).
pub fn parse(bytes: &[u8]) -> Result<Fixture, FixtureError> {
    // Duplicate keys first (serde would keep the last), then the shape,
    // read from the text again for its line and column.
    let value = crate::strict_json::parse(bytes).map_err(|e| FixtureError::Shape(e.to_string()))?;
    let raw: RawFixture = serde_json::from_slice(bytes).map_err(|e| {
        let mut said = crate::strict_json::shape_error(&e);
        // A bare request (what `check` reads, and the scaffolds' first
        // tests were): say how to make it a fixture.
        if value.get("input").is_some() && value.get("request").is_none() {
            said.push_str(
                "; this looks like a request, not a fixture: write it as \
                 {\"request\": <this request>, \"expect\": {\"decision\": \"deny\"}}",
            );
        }
        FixtureError::Shape(said)
    })?;
    let text =
        serde_json::to_vec(&raw.request).map_err(|e| FixtureError::Request(e.to_string()))?;
    let request = crate::protocol::wire::read_request(&text, None, None)
        .map_err(|e| FixtureError::Request(crate::text::error_chain(&e)))?;
    Ok(Fixture {
        request,
        expect: expect(raw.expect)?,
    })
}

fn expect(raw: RawExpect) -> Result<Expect, FixtureError> {
    use Expected::*;
    let decision = raw.decision;
    let only = |field: &'static str, value: &Option<String>, for_: &[Expected]| {
        if value.is_some() && !for_.contains(&decision) {
            let words: Vec<&str> = for_.iter().map(|d| d.into()).collect();
            return Err(FixtureError::Expect {
                field,
                why: format!(
                    "applies to decision {} only, not {decision}",
                    words.join(" or ")
                ),
            });
        }
        Ok(())
    };
    only("reason", &raw.reason, &[Deny, Ask, Failed])?;
    only("input", &raw.input, &[Modify, Ask])?;
    only("result", &raw.result, &[Replace])?;
    only("failure", &raw.failure, &[Failed])?;
    only("message", &raw.message, &[Failed])?;
    let regex = |field: &'static str, value: Option<String>| {
        value
            .map(|v| {
                Regex::new(&v).map_err(|e| FixtureError::Expect {
                    field,
                    why: format!("not a regular expression: {e}"),
                })
            })
            .transpose()
    };
    let failure = raw
        .failure
        .map(|kind| {
            kind.parse::<FailureKind>()
                .map_err(|_| FixtureError::Expect {
                    field: "failure",
                    why: format!(
                        "unknown failure kind `{}` (one of: {})",
                        crate::text::excerpt(&kind, 64),
                        <FailureKind as strum::VariantNames>::VARIANTS.join(", ")
                    ),
                })
        })
        .transpose()?;
    Ok(Expect {
        decision,
        decided_by: raw.decided_by,
        reason: regex("reason", raw.reason)?,
        input: regex("input", raw.input)?,
        result: regex("result", raw.result)?,
        context: regex("context", raw.context)?,
        failure,
        message: regex("message", raw.message)?,
    })
}

impl Fixture {
    /// What is wrong with `outcome` for this fixture: empty when it passes.
    pub fn judge(&self, outcome: &Outcome) -> Vec<String> {
        let want = &self.expect;
        let got = Expected::of(outcome);
        let failed = outcome.blocked_by_failure();
        let mut wrong = Vec::new();
        if got != want.decision {
            let said = match (failed, &outcome.decision) {
                (Some(run), _) => {
                    let (kind, message) = run
                        .failure
                        .as_ref()
                        .map_or(("?", ""), |f| (f.kind.as_str(), f.message.as_str()));
                    let not_deny = if want.decision == Expected::Deny {
                        ", which is not a deny (fail closed blocked the call)"
                    } else {
                        ""
                    };
                    format!(
                        "failed: hook `{}` failed ({kind}){not_deny}: {}",
                        run.name,
                        crate::text::one_line(message)
                    )
                }
                (None, Decision::Deny { reason }) => format!(
                    "deny by `{}`: {}",
                    outcome.decided_by.as_deref().unwrap_or("?"),
                    crate::text::one_line(reason)
                ),
                (None, _) => match &outcome.decided_by {
                    Some(by) => format!("{got} by `{by}`"),
                    None => got.to_string(),
                },
            };
            wrong.push(format!("expected {}, got {said}", want.decision));
            // The rest describes a decision that was not made.
            return wrong;
        }
        if let Some(name) = &want.decided_by
            && outcome.decided_by.as_deref() != Some(name.as_str())
        {
            wrong.push(format!(
                "expected decided_by `{name}`, got {}",
                outcome
                    .decided_by
                    .as_deref()
                    .map_or("none".to_owned(), |b| format!("`{b}`"))
            ));
        }
        let reason = match &outcome.decision {
            Decision::Deny { reason } | Decision::Ask { reason, .. } => Some(reason.clone()),
            _ => None,
        };
        let input = match &outcome.decision {
            Decision::Modify { input }
            | Decision::Ask {
                input: Some(input), ..
            } => Some(input.to_string()),
            _ => None,
        };
        let result = match &outcome.decision {
            Decision::Replace { result } => Some(match &result.output {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            }),
            _ => None,
        };
        let failure = failed.and_then(|r| r.failure.as_ref());
        let message = failure.map(|f| f.message.clone());
        for (field, pattern, text) in [
            ("reason", &want.reason, reason),
            ("input", &want.input, input),
            ("result", &want.result, result),
            ("context", &want.context, outcome.context.clone()),
            ("message", &want.message, message),
        ] {
            let Some(pattern) = pattern else { continue };
            match text {
                Some(text) if pattern.is_match(&text) => {}
                Some(text) => wrong.push(format!(
                    "expected {field} matching /{pattern}/, got {:?}",
                    crate::text::excerpt(&crate::text::one_line(&text), 300)
                )),
                None => wrong.push(format!("expected {field} matching /{pattern}/, got none")),
            }
        }
        if let (Some(kind), Some(f)) = (want.failure, failure)
            && kind != f.kind
        {
            wrong.push(format!(
                "expected failure {kind}, got {}: {}",
                f.kind,
                crate::text::one_line(&f.message)
            ));
        }
        wrong
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(text: &str) -> String {
        parse(text.as_bytes()).unwrap_err().to_string()
    }

    #[test]
    fn a_fixture_is_read_strictly_and_errors_name_the_field() {
        let ok = r#"{"request": {"tool": "Bash", "input": {}}, "expect": {"decision": "allow"}}"#;
        let f = parse(ok.as_bytes()).unwrap();
        assert_eq!(f.request.event, crate::Event::PreToolUse);
        assert_eq!(f.expect.decision, Expected::Allow);
        for (text, says) in [
            (
                r#"{"request": {"tool": "Bash", "input": {}}, "expect": {"decision": "deny", "reasn": "x"}}"#,
                "unknown field `reasn`",
            ),
            (
                r#"{"request": {"tool": "Bash", "input": {}}, "expect": {"decision": "allow", "decision": "deny"}}"#,
                "duplicate key",
            ),
            (
                r#"{"request": {"input": {}}, "expect": {"decision": "allow"}}"#,
                "field `request`: the request has no `tool`",
            ),
            (
                r#"{"request": {"tool": "Bash", "input": {}}, "expect": {"decision": "allow", "reason": "x"}}"#,
                "field `expect.reason`: applies to decision deny or ask or failed only",
            ),
            (
                r#"{"request": {"tool": "Bash", "input": {}}, "expect": {"decision": "failed", "failure": "crashed"}}"#,
                "unknown failure kind `crashed`",
            ),
            (
                r#"{"request": {"tool": "Bash", "input": {}}, "expect": {"decision": "deny", "reason": "("}}"#,
                "field `expect.reason`: not a regular expression",
            ),
            (
                r#"{"request": {"tool": "Bash", "input": {}}, "expect": {"decision": "blocked"}}"#,
                "unknown variant `blocked`",
            ),
            (
                r#"{"event": "pre_tool_use", "tool": "Bash", "input": {}}"#,
                "this looks like a request, not a fixture",
            ),
        ] {
            let said = refused(text);
            assert!(said.contains(says), "{text}: {said}");
        }
    }
}
