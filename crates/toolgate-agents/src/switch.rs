//! The settings that turn an agent's hooks off: what `toolgate doctor`
//! looks for so a guard the agent silently skips is reported, not assumed.
//! A field of [`Install`](crate::Install) every agent must fill, so adding
//! an agent means saying which it has.

use serde_json::Value;

/// A setting that turns an agent's hooks off.
#[derive(Debug, Clone, Copy)]
pub struct HookSwitch {
    /// Where it is, as a JSON pointer into a settings file
    /// (`/disableAllHooks`).
    pub pointer: &'static str,
    /// The value that turns the hooks off.
    pub off_when: bool,
    /// The settings files it is read from, besides the user's and the
    /// project's: relative to the project root (`.claude/settings.local.json`).
    pub also_in: &'static [&'static str],
    /// What the agent does then, for the operator.
    pub effect: &'static str,
    /// The live test that set it in the real agent and saw toolgate
    /// skipped, or `None` where that was not shown live.
    pub shown_live_by: Option<&'static str>,
}

impl HookSwitch {
    /// Whether `settings` sets this switch.
    pub fn is_set(&self, settings: &Value) -> bool {
        settings.pointer(self.pointer) == Some(&Value::Bool(self.off_when))
    }
}
