//! What toolgate says when it refuses a call or withholds its output: the
//! words a model, an agent's user and an operator read, in one place.
//!
//! # Why one module
//!
//! The same refusal was written out in thirteen places in seven files (the
//! chain's whole-call helper, two inward dialects, the outward dialects, the
//! MCP proxy, its listing, the mentra integration), and the copies had
//! begun to drift ("cannot ask for", "cannot ask for here, so it was not
//! run", "cannot ask for through MCP"). A model and a person learn what
//! toolgate's refusal looks like; an operator greps logs for it; tests pin
//! it. Here each wording is one function or constant, and a source test
//! (`tests/all/layers.rs`) fails when a phrase of it appears anywhere else
//! outside tests and comments.

/// The prefix every refused call's shown result starts with.
pub const BLOCKED: &str = "toolgate: call blocked: ";

/// The words for an `ask` toolgate cannot put to a person.
pub const NEEDS_A_PERSON: &str =
    "this call needs a person's confirmation, which toolgate cannot ask for";

/// A refused call's shown result: [`BLOCKED`] and the reason.
pub fn blocked(reason: &str) -> String {
    format!("{BLOCKED}{reason}")
}

/// The reason for an `ask` in a host that has nobody to ask (an agent toolgate
/// cannot have ask, an embedder's runtime): the call was not run.
pub fn needs_a_person(reason: &str) -> String {
    format!("{NEEDS_A_PERSON} here, so it was not run: {reason}")
}

/// The reason for an `ask` through the MCP proxy, which has no person to
/// ask either (elicitation is the server's, not toolgate's).
pub fn needs_a_person_through_mcp(reason: &str) -> String {
    format!("{NEEDS_A_PERSON} through MCP: {reason}")
}

/// The shown result of a whole call (`HookRunner::call`) whose pre chain
/// asked: the library has no person; an embedder that has one asks on the
/// pre outcome itself.
pub fn nobody_was_asked(reason: &str) -> String {
    blocked(&format!(
        "this call needs a person's confirmation, which nobody was asked for: {reason}"
    ))
}

/// The reason shown when a post hook withholds a call's output, in an
/// agent's own answer.
pub fn withheld(reason: &str) -> String {
    format!("toolgate withheld the output of this call: {reason}")
}

/// The shown result the chain makes when its post chain denied an output.
pub fn output_withheld(reason: &str) -> String {
    format!("toolgate: the output of this call was withheld: {reason}")
}

/// The reason shown for a pre `replace` where the host cannot answer for
/// a tool: the call is refused, and the replacement (as text) is the
/// reason.
pub fn answered_for_the_tool(output: &str) -> String {
    format!("toolgate answered for the tool instead of running it: {output}")
}

/// The phrases [`tests/all/layers.rs`] looks for outside this module.
#[doc(hidden)]
pub const PHRASES: &[&str] = &[
    "call blocked",
    "needs a person's confirmation",
    "withheld the output of this call",
    "output of this call was withheld",
    "answered for the tool instead",
];
