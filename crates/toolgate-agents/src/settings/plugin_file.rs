//! The layout whose whole file is toolgate's: a plugin the agent loads by
//! itself (OpenCode).

use super::{Edit, EditSettingsError, Entry, Format, Install, Wiring};

/// A plugin file the agent loads by itself (OpenCode): the whole file is
/// toolgate's, recognised by the line naming its binary
/// (`const TOOLGATE = "<path>"; // toolgate-binary`). A file at that path
/// without the line is someone else's, and is never overwritten or removed.
pub(super) struct PluginFile {
    pub(super) source: fn(&[String]) -> String,
}

/// The end of the line of toolgate's plugin that names its binary.
const PLUGIN_BINARY_MARK: &str = "; // toolgate-binary";

impl PluginFile {
    /// The binary toolgate's plugin `text` runs; `None` when `text` is not
    /// toolgate's plugin.
    fn binary(text: &str) -> Option<String> {
        text.lines().find_map(|line| {
            let value = line
                .trim()
                .strip_prefix("const TOOLGATE = ")?
                .strip_suffix(PLUGIN_BINARY_MARK)?;
            serde_json::from_str::<String>(value).ok()
        })
    }

    fn not_toolgates() -> EditSettingsError {
        EditSettingsError::Shape {
            key: "const TOOLGATE".into(),
            expected: "toolgate's plugin (the file is someone else's)",
        }
    }
}

impl Format for PluginFile {
    fn install(
        &self,
        wiring: &Wiring,
        _spec: &Install,
        text: Option<&str>,
    ) -> Result<Edit, EditSettingsError> {
        let wanted = (self.source)(&wiring.argv());
        match text {
            Some(text) if text == wanted => Ok(Edit::Unchanged),
            Some(text) if Self::binary(text).is_none() => Err(Self::not_toolgates()),
            _ => Ok(Edit::Write(wanted)),
        }
    }

    fn uninstall(
        &self,
        _wiring: &Wiring,
        _spec: &Install,
        text: &str,
    ) -> Result<Edit, EditSettingsError> {
        Ok(match Self::binary(text) {
            Some(_) => Edit::Delete,
            None => Edit::Unchanged,
        })
    }

    fn entries(
        &self,
        wiring: &Wiring,
        spec: &Install,
        text: &str,
    ) -> Result<Vec<Entry>, EditSettingsError> {
        let Some(binary) = Self::binary(text) else {
            return Ok(Vec::new());
        };
        let argv = vec![binary, wiring.agent.name().to_owned()];
        let differs = if text == (self.source)(&argv) {
            Vec::new()
        } else {
            vec!["the plugin file is not the one this toolgate installs".to_owned()]
        };
        Ok(spec
            .events
            .iter()
            .map(|event| Entry {
                event: (*event).to_owned(),
                argv: argv.clone(),
                differs: differs.clone(),
            })
            .collect())
    }
}
