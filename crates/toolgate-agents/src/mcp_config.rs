//! Where an agent keeps its MCP servers, for `install --mcp` and
//! `doctor`. Its own module beside [`Install`](crate::Install) because
//! the MCP config is a second file with its own rules: another layout,
//! another variable that moves it, and files that may shadow it.

use crate::UserDir;

/// How an agent's MCP config lays out a local server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum McpShape {
    /// `mcpServers.<name>`: `command` (a string) and `args` (most agents).
    McpServers,
    /// `mcp.<name>`: `command`, one array of the program and its arguments
    /// (OpenCode).
    CommandArray,
    /// `[mcp_servers.<name>]` tables in TOML: `command` and `args` (Codex).
    Toml,
}

/// Where an agent keeps its MCP servers. Every agent says, one way or the
/// other: an agent whose servers toolgate cannot rewrite says why.
#[derive(Debug, Clone, Copy)]
pub enum McpConfig {
    /// A JSON file that maps each server's name to its entry.
    Servers {
        /// The user's file, relative to `$HOME`.
        user_file: &'static str,
        /// The variable that moves the user's file, where the agent has
        /// one. Required apart from [`Install::user_dir`]: an agent may
        /// keep its MCP servers in a file its variable moves differently
        /// (Claude Code's `~/.claude.json` moves to `$CLAUDE_CONFIG_DIR/`,
        /// its `~/.claude/settings.json` to the same folder).
        user_dir: UserDir,
        /// Files that, where they exist, the agent may read its user
        /// servers from instead of `user_file` (Claude Code's legacy
        /// `~/.claude/.config.json`), relative to `$HOME` and moved by
        /// [`Install::user_dir`]. `install --mcp` refuses to guess
        /// between them.
        shadowed_by: &'static [&'static str],
        /// The project's file, relative to its root, where it has one.
        project_file: Option<&'static str>,
        /// How the entries are laid out.
        shape: McpShape,
        /// Whether the user's file also keeps servers per project, under
        /// `projects["<abs root>"]` (Claude Code's local scope, the
        /// default of `claude mcp add`, which wins over a project's and
        /// the user's server of the same name).
        per_project: bool,
    },
    /// Not rewritten by `install --mcp` yet: why, and what to do instead.
    NotYet(&'static str),
}
