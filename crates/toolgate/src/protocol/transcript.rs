//! Claude Code transcripts (`~/.claude/projects/…/<session>.jsonl`), read
//! one entry at a time: assistant `tool_use` blocks are calls, user
//! `tool_result` blocks are their results. Pairing them and replaying them
//! is `replay`'s job; this file only knows the format.

use crate::contract::{Request, ToolResult};
use serde_json::Value;

/// What one transcript entry holds, in order.
#[derive(Debug, PartialEq)]
pub(crate) enum Item {
    /// A tool call (a pre request with the call's id, session and cwd).
    Call(Request),
    /// The result of the call with this id.
    Result {
        tool_use_id: Option<String>,
        result: ToolResult,
    },
    /// A block that should be a call but cannot be read.
    Problem(String),
}

/// The items of one entry; `None` when `value` is not a transcript entry at
/// all (no `type`). Entries with nothing to replay (text, summaries) give
/// no items.
pub(crate) fn read_entry(value: &Value) -> Option<Vec<Item>> {
    let kind = value.get("type").and_then(Value::as_str)?;
    let blocks = value
        .get("message")
        .and_then(|m| m.get("content"))
        .and_then(Value::as_array);
    let blocks = blocks.map(Vec::as_slice).unwrap_or_default();
    let of_type = |t: &'static str| {
        blocks
            .iter()
            .filter(move |b| b.get("type").and_then(Value::as_str) == Some(t))
    };
    let items = match kind {
        "assistant" => of_type("tool_use")
            .map(|block| {
                let (Some(id), Some(name)) = (
                    block.get("id").and_then(Value::as_str),
                    block.get("name").and_then(Value::as_str),
                ) else {
                    return Item::Problem("a tool_use block without id or name".into());
                };
                let text = |k: &str| value.get(k).and_then(Value::as_str).map(str::to_owned);
                let mut request =
                    Request::pre(name, block.get("input").cloned().unwrap_or(Value::Null));
                request.tool_call_id = Some(id.to_owned());
                request.session_id = text("sessionId");
                request.cwd = text("cwd");
                Item::Call(request)
            })
            .collect(),
        "user" => of_type("tool_result")
            .map(|block| {
                let is_error = block.get("is_error") == Some(&Value::Bool(true));
                // What a live post hook is given: Claude Code's structured
                // result (its transcript keeps it as `toolUseResult`), or for
                // a failed call the text the model saw.
                let output = match value.get("toolUseResult") {
                    Some(structured @ Value::Object(_)) if !is_error => structured.clone(),
                    _ => result_text(block.get("content")),
                };
                Item::Result {
                    tool_use_id: block
                        .get("tool_use_id")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                    result: ToolResult { output, is_error },
                }
            })
            .collect(),
        _ => Vec::new(),
    };
    Some(items)
}

/// A tool_result's content as the model saw it: text blocks joined.
fn result_text(content: Option<&Value>) -> Value {
    match content {
        Some(Value::Array(blocks)) => Value::String(
            blocks
                .iter()
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        Some(other) => other.clone(),
        None => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_assistant_entry_gives_its_tool_calls_with_ids() {
        let entry = json!({"type": "assistant", "sessionId": "s", "cwd": "/w", "message": {"content": [
            {"type": "text", "text": "let me look"},
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}
        ]}});
        let items = read_entry(&entry).unwrap();
        let [Item::Call(request)] = items.as_slice() else {
            panic!("{items:?}")
        };
        assert_eq!(request.tool, "Bash");
        assert_eq!(request.tool_call_id.as_deref(), Some("t1"));
        assert_eq!(request.session_id.as_deref(), Some("s"));
    }

    #[test]
    fn a_result_prefers_the_structured_tool_use_result() {
        let entry = json!({"type": "user", "toolUseResult": {"stdout": "x", "stderr": ""},
            "message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "x"}]}]}});
        let items = read_entry(&entry).unwrap();
        assert_eq!(
            items,
            [Item::Result {
                tool_use_id: Some("t1".into()),
                result: ToolResult::ok(json!({"stdout": "x", "stderr": ""}))
            }]
        );
    }

    #[test]
    fn a_failed_result_is_the_text_the_model_saw() {
        let entry = json!({"type": "user", "toolUseResult": "Error: exit 1",
            "message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": true,
                "content": [{"type": "text", "text": "Error:"}, {"type": "text", "text": "exit 1"}]}]}});
        let items = read_entry(&entry).unwrap();
        assert_eq!(
            items,
            [Item::Result {
                tool_use_id: Some("t1".into()),
                result: ToolResult::error("Error:\nexit 1")
            }]
        );
    }

    #[test]
    fn a_tool_use_without_an_id_is_a_problem_and_other_entries_are_nothing() {
        let entry = json!({"type": "assistant", "message": {"content": [{"type": "tool_use", "name": "Bash"}]}});
        assert!(matches!(
            read_entry(&entry).unwrap().as_slice(),
            [Item::Problem(_)]
        ));
        assert_eq!(read_entry(&json!({"type": "summary"})).unwrap(), []);
        assert_eq!(read_entry(&json!({"hello": 1})), None);
    }
}
