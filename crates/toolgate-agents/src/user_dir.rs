//! Where an agent reads the user's settings from, when a variable moves
//! them: `install` must write there and `doctor` look there, or a guard is
//! installed in a file the agent does not read and guards nothing. A field
//! of [`Install`](crate::Install) every agent must fill.

/// Where the agent reads the user's settings from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UserDir {
    /// Always `$HOME/<user_file>`: no variable moves it that toolgate
    /// knows of.
    Home,
    /// `$var/<user_file without its leading dir>` when `var` is set and
    /// not empty, else `$HOME/<user_file>` (Claude Code's
    /// `CLAUDE_CONFIG_DIR` stands for `~/.claude`).
    Var {
        /// The variable.
        var: &'static str,
        /// The leading folder of `user_file` it stands for (`.claude`;
        /// `""` when it stands for `$HOME` itself, as `GEMINI_CLI_HOME`
        /// does).
        dir: &'static str,
    },
}

impl UserDir {
    /// The user's settings file: `user_file` under `home`, or under the
    /// variable's folder when `var_value` (the variable's value) is set.
    /// `None` when `user_file` does not start with the folder the
    /// variable stands for (a spec error a test rules out).
    pub fn resolve(
        self,
        home: &std::path::Path,
        user_file: &str,
        var_value: Option<&std::path::Path>,
    ) -> Option<std::path::PathBuf> {
        match (self, var_value) {
            (UserDir::Home, _) | (UserDir::Var { .. }, None) => Some(home.join(user_file)),
            (UserDir::Var { dir, .. }, Some(moved)) => {
                let rest = std::path::Path::new(user_file).strip_prefix(dir).ok()?;
                Some(moved.join(rest))
            }
        }
    }
}
