//! The agents toolgate can be the hook of, by name only.
//!
//! The name is part of the contract: it is the subcommand
//! (`toolgate claude-code`), the `mode` a client asks `toolgate serve` for,
//! and what the lean client parses from its arguments before it forwards a
//! call. What each agent reads and honours (its envelope, its answers, its
//! settings) is not: that is the library's `AgentHook`, one file per agent.
//! Keeping the name here lets a client speak the serve protocol without
//! linking any dialect.

/// The dialect `toolgate` answers in when it is the agent's hook: one
/// variant per agent. Its name (`claude-code`, `codex`) is the subcommand,
/// the `mode` a client asks `toolgate serve` for, and the name in the help
/// snapshots: serde and strum derive them from the variant, so they cannot
/// drift apart.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    serde::Serialize,
    serde::Deserialize,
    strum::Display,
    strum::EnumString,
    strum::IntoStaticStr,
    strum::VariantArray,
)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum Outward {
    /// Claude Code.
    ClaudeCode,
    /// Codex: Claude Code's envelope with a strict output schema.
    Codex,
    /// Gemini CLI: `BeforeTool` / `AfterTool`, its own answers.
    Gemini,
    /// Qwen Code: Claude Code's envelope, with far fewer answers honoured.
    QwenCode,
    /// GitHub Copilot CLI: camelCase events, flat answers.
    Copilot,
    /// Cursor: `.cursor/hooks.json`, flat snake_case answers (from its
    /// documentation; its CLI cannot be installed here).
    Cursor,
    /// OpenCode, through toolgate's plugin (`integrations/opencode/`).
    #[serde(rename = "opencode")]
    #[strum(serialize = "opencode")]
    OpenCode,
}

impl Outward {
    /// Every dialect, in the order the CLI lists them.
    pub const ALL: &'static [Outward] = <Outward as strum::VariantArray>::VARIANTS;

    /// Its name: the subcommand (`toolgate claude-code`) and the server's
    /// `mode`.
    pub fn name(self) -> &'static str {
        self.into()
    }
}
