//! Codex's MCP servers: `[mcp_servers.<name>]` tables in its config.toml,
//! each a `command` and its `args` (the same entry `mcp_servers` rewrites
//! in JSON). Edited with `toml_edit`, so the user's comments, order and
//! formatting outside the two keys stay as they were.

use super::Edit;
use super::EditSettingsError;
use super::mcp_servers::{McpServer, McpState, guarded_argv, state_from};
use toml_edit::{Array, DocumentMut, Item, Value};

fn parse(text: &str) -> Result<DocumentMut, EditSettingsError> {
    text.parse::<DocumentMut>().map_err(|e| {
        let (line, column) = e
            .span()
            .map(|span| {
                let before = &text[..span.start.min(text.len())];
                let line = before.matches('\n').count() + 1;
                let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
                (line, column)
            })
            .unwrap_or((0, 0));
        EditSettingsError::NotToml { line, column }
    })
}

/// A table's local server command, or why it is not one.
fn command_of(table: &dyn toml_edit::TableLike) -> Result<Vec<String>, String> {
    if table.contains_key("url") {
        return Err("a remote server: `toolgate mcp` proxies stdio servers only".into());
    }
    let Some(command) = table.get("command").and_then(Item::as_str) else {
        return Err("no `command` to run".into());
    };
    let mut argv = vec![command.to_owned()];
    if let Some(args) = table.get("args") {
        let args = args
            .as_array()
            .and_then(|a| {
                a.iter()
                    .map(|v| v.as_str().map(str::to_owned))
                    .collect::<Option<Vec<_>>>()
            })
            .ok_or_else(|| "`args` is not a list of strings".to_owned())?;
        argv.extend(args);
    }
    Ok(argv)
}

fn servers(doc: &DocumentMut) -> Result<Vec<McpServer>, EditSettingsError> {
    let Some(item) = doc.get("mcp_servers") else {
        return Ok(Vec::new());
    };
    let table = item
        .as_table_like()
        .ok_or_else(|| EditSettingsError::Shape {
            key: "mcp_servers".into(),
            expected: "a table",
        })?;
    Ok(table
        .iter()
        .map(|(name, entry)| McpServer {
            project: None,
            name: name.to_owned(),
            state: match entry.as_table_like() {
                Some(entry) => state_from(name, command_of(entry)),
                None => McpState::Skipped("not a table".into()),
            },
        })
        .collect())
}

pub(super) fn mcp_servers(text: &str) -> Result<Vec<McpServer>, EditSettingsError> {
    servers(&parse(text)?)
}

/// Makes each server `change` gives a command for run it.
pub(super) fn rewrite(
    text: Option<&str>,
    change: impl Fn(&str, &McpState) -> Option<Vec<String>>,
) -> Result<(Edit, Vec<McpServer>), EditSettingsError> {
    let Some(text) = text.filter(|t| !t.trim().is_empty()) else {
        return Ok((Edit::Unchanged, Vec::new()));
    };
    let mut doc = parse(text)?;
    let before = servers(&doc)?;
    let mut changed = false;
    if let Some(table) = doc.get_mut("mcp_servers").and_then(Item::as_table_like_mut) {
        for server in &before {
            let Some(argv) = change(&server.name, &server.state) else {
                continue;
            };
            let Some(entry) = table
                .get_mut(&server.name)
                .and_then(Item::as_table_like_mut)
            else {
                continue;
            };
            entry.insert("command", toml_edit::value(argv[0].as_str()));
            let args: Array = argv[1..].iter().map(String::as_str).collect();
            entry.insert("args", Item::Value(Value::Array(args)));
            changed = true;
        }
    }
    let rendered = doc.to_string();
    let after = servers(&parse(&rendered)?)?;
    Ok((
        if changed {
            Edit::Write(rendered)
        } else {
            Edit::Unchanged
        },
        after,
    ))
}

/// `guard_mcp_servers` for Codex.
pub(super) fn guard(
    text: Option<&str>,
    exe: &str,
) -> Result<(Edit, Vec<McpServer>), EditSettingsError> {
    rewrite(text, |name, state| guarded_argv(exe, name, state))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codexs_tables_are_wrapped_keeping_comments_and_restored() {
        let config = "model = \"gpt-5\" # the model\n\n\
            # my servers\n\
            [mcp_servers.fs]\n\
            command = \"npx\" # run it\n\
            args = [\"-y\", \"server-fs\"]\n\
            env = { A = \"1\" }\n\n\
            [mcp_servers.web]\n\
            url = \"https://x/mcp\"\n";
        let (edit, servers) = guard(Some(config), "/t/toolgate").unwrap();
        let Edit::Write(text) = edit else { panic!() };
        assert!(
            text.contains("# my servers") && text.contains("# the model"),
            "{text}"
        );
        assert!(
            text.contains(r#"args = ["mcp", "--name", "fs", "--", "npx", "-y", "server-fs"]"#),
            "{text}"
        );
        assert!(text.contains(r#"command = "/t/toolgate""#), "{text}");
        assert!(matches!(servers[0].state, McpState::Guarded { .. }));
        assert!(matches!(servers[1].state, McpState::Skipped(_)));
        let (undone, _) = rewrite(Some(&text), |_, state| match state {
            McpState::Guarded { server } => Some(server.clone()),
            _ => None,
        })
        .unwrap();
        let Edit::Write(undone) = undone else {
            panic!()
        };
        assert!(undone.contains(r#"command = "npx""#), "{undone}");
        assert!(undone.contains(r#"args = ["-y", "server-fs"]"#), "{undone}");
        assert!(undone.contains("env = { A = \"1\" }"), "{undone}");
    }
}
