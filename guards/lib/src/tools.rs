//! What a tool call names, whichever agent sent it: its shell command, the
//! paths it reads and writes, the text it writes, the URLs it fetches.
//!
//! # Why one table of every agent's tool names, not a normalised name
//!
//! toolgate hands a hook the tool name the agent used (`Bash`,
//! `run_shell_command`, `read_file`, `mcp__fs__write_file`), so that a
//! matcher written for one agent keeps working. A standard guard must
//! work in every agent, so it knows each agent's names for its shell, file
//! and fetch tools, and the fields each puts a path, a command or a URL in.
//! Where a tool is not known, the rule is closed-world: a tool that names a
//! path and is not known to only read is judged as a write.

use serde_json::Value;

/// Every agent's name for its shell tool (and toolgate's own, `shell`; and
/// the process a Claude Code mod starts itself, which toolgate's mod asks
/// about as `mod:process.run` / `mod:process.spawn` with its argv as
/// `command`: a command all the same).
pub const SHELL_TOOLS: &[&str] = &[
    "shell",
    "mod:process.run",
    "mod:process.spawn",
    "Bash",
    "bash",
    "run_shell_command",
    "Shell",
    "local_shell",
    "exec_command",
    "execute_command",
    "run_command",
    "run_terminal_cmd",
];

/// Every agent's name for its URL-fetching tool (MCP tools whose name says
/// `fetch` are added by [`is_fetch`]).
pub const FETCH_TOOLS: &[&str] = &["WebFetch", "web_fetch", "webfetch", "fetch", "Fetch"];

/// The tool name without an MCP prefix: `mcp__fs__read_file` → `read_file`.
pub fn base_name(tool: &str) -> &str {
    match tool.strip_prefix("mcp__") {
        Some(rest) => rest.split_once("__").map_or(rest, |(_, t)| t),
        None => tool,
    }
}

/// Whether the tool fetches URLs the model chose.
pub fn is_fetch(tool: &str) -> bool {
    let base = base_name(tool);
    FETCH_TOOLS.contains(&base) || base.to_ascii_lowercase().contains("fetch")
}

/// A shell tool's command line: a string, or an argv array (quoted back
/// into one line, so `["bash", "-lc", "rm -rf /"]` is read as bash runs it).
pub fn command_line(input: &Value) -> Option<String> {
    match input.get("command").or_else(|| input.get("cmd"))? {
        Value::String(s) => Some(s.clone()),
        Value::Array(argv) => {
            let words: Option<Vec<String>> = argv.iter().map(|v| v.as_str().map(quote)).collect();
            Some(words?.join(" "))
        }
        _ => None,
    }
}

fn quote(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
    {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// How a tool touches a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// It only reads (or lists) it.
    Read,
    /// It creates, changes, moves or deletes it.
    Write,
}

/// The fields the agents' file tools (and MCP filesystem servers) put one
/// path in.
const PATH_FIELDS: &[&str] = &[
    "file_path",
    "filePath",
    "absolute_path",
    "notebook_path",
    "path",
    "dir_path",
    "directory",
    "source",
    "destination",
    "target",
    "old_path",
    "new_path",
];

/// The fields that hold a list of paths.
const PATH_LIST_FIELDS: &[&str] = &["paths", "file_paths", "files"];

/// Tools (by [`base_name`], lowercased) that only read or list.
const READ_TOOLS: &[&str] = &[
    "read",
    "read_file",
    "read_text_file",
    "read_media_file",
    "read_multiple_files",
    "read_many_files",
    "view",
    "glob",
    "grep",
    "ls",
    "list",
    "list_directory",
    "list_directory_with_sizes",
    "directory_tree",
    "search_files",
    "search_file_content",
    "grep_search",
    "get_file_info",
    "notebookread",
    "codebase_search",
    "file_search",
];

/// The paths a (non-shell) tool call names, and how it touches each. An
/// unknown tool that names a path is taken to write it (closed world).
/// A patch (`apply_patch`, OpenCode's `patch`) names its files in its text.
pub fn file_paths(tool: &str, input: &Value) -> Vec<(String, Access)> {
    let base = base_name(tool).to_ascii_lowercase();
    let access = if READ_TOOLS.contains(&base.as_str()) {
        Access::Read
    } else {
        Access::Write
    };
    let mut out = Vec::new();
    let Some(fields) = input.as_object() else {
        return out;
    };
    for (key, value) in fields {
        if PATH_FIELDS.contains(&key.as_str()) {
            if let Some(p) = value.as_str().filter(|p| !p.is_empty()) {
                out.push((p.to_owned(), access));
            }
        } else if PATH_LIST_FIELDS.contains(&key.as_str())
            && let Some(list) = value.as_array()
        {
            out.extend(
                list.iter()
                    .filter_map(Value::as_str)
                    .map(|p| (p.to_owned(), access)),
            );
        }
    }
    if let Some(patch) = patch_text(input) {
        for line in patch.lines() {
            let named = [
                "*** Add File: ",
                "*** Update File: ",
                "*** Delete File: ",
                "*** Move to: ",
            ]
            .iter()
            .find_map(|p| line.strip_prefix(p));
            if let Some(path) = named {
                out.push((path.trim().to_owned(), Access::Write));
            }
        }
    }
    out
}

/// A patch's text, wherever the agent put it.
fn patch_text(input: &Value) -> Option<&str> {
    for key in ["patch", "patchText", "input"] {
        if let Some(text) = input.get(key).and_then(Value::as_str) {
            return Some(text);
        }
    }
    // Codex's `apply_patch` as a shell argv: `["apply_patch", "*** Begin Patch…"]`.
    let argv = input.get("command")?.as_array()?;
    (argv.first()?.as_str()? == "apply_patch")
        .then(|| argv.get(1)?.as_str())
        .flatten()
}

/// The fields the agents' write and edit tools put new text in.
const TEXT_FIELDS: &[&str] = &[
    "content",
    "new_string",
    "newString",
    "file_text",
    "new_str",
    "new_source",
    "newText",
    "text",
    "insert_text",
];

/// The text a (non-shell) tool call would write: file contents, edits'
/// new text, a patch's added lines.
pub fn written_text(input: &Value) -> Vec<&str> {
    let mut out = Vec::new();
    let Some(fields) = input.as_object() else {
        return out;
    };
    for (key, value) in fields {
        if TEXT_FIELDS.contains(&key.as_str()) {
            out.extend(value.as_str());
        } else if key == "edits" {
            for edit in value.as_array().into_iter().flatten() {
                for k in TEXT_FIELDS {
                    out.extend(edit.get(*k).and_then(Value::as_str));
                }
            }
        }
    }
    out.extend(patch_text(input));
    out
}

/// Every string in a JSON value, depth first (keys excluded).
pub fn strings(value: &Value) -> Vec<&str> {
    let mut out = Vec::new();
    let mut todo = vec![value];
    while let Some(v) = todo.pop() {
        match v {
            Value::String(s) => out.push(s.as_str()),
            Value::Array(items) => todo.extend(items.iter().rev()),
            Value::Object(fields) => todo.extend(fields.values().rev()),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_unknown_tool_that_names_a_path_writes_it() {
        assert_eq!(
            file_paths("mcp__fs__read_text_file", &json!({"path": "/a"})),
            vec![("/a".to_owned(), Access::Read)]
        );
        assert_eq!(
            file_paths("mcp__x__frobnicate", &json!({"path": "/a"})),
            vec![("/a".to_owned(), Access::Write)]
        );
    }

    #[test]
    fn a_patch_names_its_files() {
        let patch = "*** Begin Patch\n*** Update File: src/a.rs\n@@\n-x\n+y\n*** Add File: ~/.bashrc\n+z\n*** End Patch";
        let paths = file_paths("apply_patch", &json!({"command": ["apply_patch", patch]}));
        assert!(
            paths.contains(&("~/.bashrc".to_owned(), Access::Write)),
            "{paths:?}"
        );
        assert!(
            paths.contains(&("src/a.rs".to_owned(), Access::Write)),
            "{paths:?}"
        );
    }
}
