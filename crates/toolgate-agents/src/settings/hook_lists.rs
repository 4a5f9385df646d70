//! The layouts where toolgate's entries sit among the user's: a settings
//! file with `hooks.<event>`, a list of handlers or of matcher groups
//! (Claude Code, Codex, Gemini CLI, Qwen Code, Copilot CLI, Cursor).

use super::json::{Json, indent_of, parse, render};
use super::{Edit, EditSettingsError, Entry, Format, Install, Wiring};
use serde_json::Value;

/// The matcher of the group toolgate writes: every tool.
const EVERY_TOOL: &str = "*";

/// A JSON settings file with `hooks.<event>`: a list of handlers (`Flat`,
/// beside `"version": 1`) or of groups `{"matcher", "hooks": [handler]}`
/// (`Grouped`).
pub(super) struct HookLists {
    pub(super) handler: fn(&[String]) -> Value,
    pub(super) grouped: bool,
}

/// Where toolgate's handlers were in one event's list.
struct Removed {
    /// Where a replacement goes: where the first one was.
    at: usize,
}

impl HookLists {
    /// The handler install writes for `argv`, with the spec's timeout.
    fn handler_for(&self, argv: &[String], timeout: Option<u64>) -> Value {
        let mut handler = (self.handler)(argv);
        if let (Some(timeout), Value::Object(fields)) = (timeout, &mut handler) {
            fields
                .entry("timeout")
                .or_insert_with(|| Value::from(timeout));
        }
        handler
    }

    /// The handler install writes for what `argv` runs (a URL alone: the
    /// agent's http hook).
    fn wanted(&self, spec: &Install, argv: &[String]) -> Value {
        match (argv, spec.http) {
            ([url], Some(http)) if url.starts_with("http://") => (http.handler)(url),
            _ => self.handler_for(argv, spec.timeout),
        }
    }

    /// The list item install writes for `handler`.
    fn item_for(&self, handler: &Value) -> Json {
        let handler = Json::from_value(handler);
        if self.grouped {
            Json::Object(vec![
                ("matcher".into(), Json::String(EVERY_TOOL.into())),
                ("hooks".into(), Json::Array(vec![handler])),
            ])
        } else {
            handler
        }
    }

    /// The fields of a handler that hold its command (strings) and its
    /// arguments (arrays): where the spec's handler puts a probe command,
    /// and `command` / `args` always.
    fn command_fields(&self) -> (Vec<String>, Vec<String>) {
        const PROBE: &str = "toolgate-probe";
        let probe = (self.handler)(&[format!("/{PROBE}/toolgate"), PROBE.to_owned()]);
        let mut strings = vec!["command".to_owned()];
        let mut arrays = vec!["args".to_owned()];
        if let Value::Object(fields) = probe {
            for (key, value) in fields {
                match value {
                    Value::String(s) if s.contains(PROBE) => strings.push(key),
                    Value::Array(items)
                        if items
                            .iter()
                            .any(|i| i.as_str().is_some_and(|s| s.contains(PROBE))) =>
                    {
                        arrays.push(key)
                    }
                    _ => {}
                }
            }
        }
        (strings, arrays)
    }

    /// The command `handler` runs, if it is toolgate's for this agent.
    fn ours(&self, wiring: &Wiring, handler: &Json) -> Option<Vec<String>> {
        let Json::Object(fields) = handler else {
            return None;
        };
        if handler.get("type") == Some(&Json::String("http".into())) {
            return match handler.get("url") {
                Some(Json::String(url)) if wiring.is_toolgates_url(url) => Some(vec![url.clone()]),
                _ => None,
            };
        }
        let (strings, arrays) = self.command_fields();
        let args: Vec<Vec<String>> = fields
            .iter()
            .filter(|(key, _)| arrays.contains(key))
            .filter_map(|(_, value)| value.strings())
            .collect();
        fields
            .iter()
            .filter(|(key, _)| strings.contains(key))
            .filter_map(|(_, value)| match value {
                Json::String(command) => Some(command),
                _ => None,
            })
            .flat_map(|command| {
                let split = shlex::split(command);
                let with_args = args.iter().map(move |args| {
                    std::iter::once(command.clone())
                        .chain(args.iter().cloned())
                        .collect::<Vec<_>>()
                });
                split.into_iter().chain(with_args)
            })
            .find(|argv| wiring.runs_toolgate(argv))
    }

    /// The handlers of one list item: the item itself (`Flat`), or the
    /// group's `hooks` (`Grouped`; none when the group has no such list).
    fn handlers<'a>(&self, item: &'a Json) -> &'a [Json] {
        if !self.grouped {
            return std::slice::from_ref(item);
        }
        match item.get("hooks") {
            Some(Json::Array(handlers)) => handlers,
            _ => &[],
        }
    }

    /// Removes toolgate's handlers from one event's list, and the groups
    /// that emptied; `None` when there were none.
    fn remove_ours(&self, wiring: &Wiring, items: &mut Vec<Json>) -> Option<Removed> {
        let mut removed = None;
        for item in std::mem::take(items) {
            if !self.grouped {
                if self.ours(wiring, &item).is_some() {
                    removed.get_or_insert(Removed { at: items.len() });
                } else {
                    items.push(item);
                }
                continue;
            }
            let mut group = item;
            let Some(Json::Array(handlers)) = group.get_mut("hooks") else {
                items.push(group);
                continue;
            };
            let before = handlers.len();
            handlers.retain(|h| self.ours(wiring, h).is_none());
            if handlers.len() == before {
                items.push(group);
            } else if handlers.is_empty() {
                removed.get_or_insert(Removed { at: items.len() });
            } else {
                items.push(group);
                removed.get_or_insert(Removed { at: items.len() });
            }
        }
        removed
    }

    /// Removes toolgate's handlers from every event's list but those in
    /// `except`, and the lists that emptied (a list the user left empty
    /// stays); whether any list emptied.
    fn remove_from_events(
        &self,
        wiring: &Wiring,
        hooks: &mut Vec<(String, Json)>,
        except: &[&str],
    ) -> bool {
        let mut emptied = Vec::new();
        for (event, items) in hooks.iter_mut() {
            if let Json::Array(items) = items
                && !except.contains(&event.as_str())
                && self.remove_ours(wiring, items).is_some()
                && items.is_empty()
            {
                emptied.push(event.clone());
            }
        }
        hooks.retain(|(event, _)| !emptied.contains(event));
        !emptied.is_empty()
    }

    /// Whether `items` holds toolgate's entry exactly once, as install
    /// writes it (other keys of its group are the user's).
    fn is_current(&self, wiring: &Wiring, items: &[Json], handler: &Value) -> bool {
        let mut found = items.iter().flat_map(|item| {
            self.handlers(item)
                .iter()
                .filter(|h| self.ours(wiring, h).is_some())
                .map(move |h| (item, h))
        });
        let (Some((item, found_handler)), None) = (found.next(), found.next()) else {
            return false;
        };
        let matcher_ok =
            !self.grouped || item.get("matcher") == Some(&Json::String(EVERY_TOOL.into()));
        matcher_ok && found_handler.to_value() == *handler
    }
}

impl Format for HookLists {
    fn install(
        &self,
        wiring: &Wiring,
        spec: &Install,
        text: Option<&str>,
    ) -> Result<Edit, EditSettingsError> {
        let (mut root, indent) = match text {
            Some(text) if !text.trim().is_empty() => (parse(text)?, indent_of(text)),
            _ => (Json::Object(Vec::new()), "  ".to_owned()),
        };
        let before = root.clone();
        let Json::Object(fields) = &mut root else {
            return Err(EditSettingsError::NotAnObject);
        };
        if !self.grouped && !fields.iter().any(|(k, _)| k == "version") {
            fields.insert(0, ("version".into(), Json::Number(1.into())));
        }
        let hooks = hooks_of(field_at(fields, "hooks", Json::Object(Vec::new())), spec)?;
        let handler = self.wanted(spec, &wiring.argv());
        // Events the spec no longer lists lose toolgate's entries.
        self.remove_from_events(wiring, hooks, spec.events);
        for event in spec.events {
            let key = format!("hooks.{event}");
            let items = field_at(hooks, event, Json::Array(Vec::new()));
            let Json::Array(items) = items else {
                return Err(EditSettingsError::Shape {
                    key,
                    expected: "an array",
                });
            };
            if self.is_current(wiring, items, &handler) {
                continue;
            }
            let at = self
                .remove_ours(wiring, items)
                .map_or(items.len(), |removed| removed.at);
            items.insert(at, self.item_for(&handler));
        }
        if root == before {
            return Ok(Edit::Unchanged);
        }
        render(&root, &indent).map(Edit::Write)
    }

    fn uninstall(
        &self,
        wiring: &Wiring,
        spec: &Install,
        text: &str,
    ) -> Result<Edit, EditSettingsError> {
        if text.trim().is_empty() {
            return Ok(Edit::Unchanged);
        }
        let mut root = parse(text)?;
        let before = root.clone();
        let Json::Object(fields) = &mut root else {
            return Err(EditSettingsError::NotAnObject);
        };
        let Some((_, hooks)) = fields.iter_mut().find(|(k, _)| k == "hooks") else {
            return Ok(Edit::Unchanged);
        };
        let hooks = hooks_of(hooks, spec)?;
        let emptied = self.remove_from_events(wiring, hooks, &[]);
        if hooks.is_empty() && emptied {
            fields.retain(|(k, _)| k != "hooks");
        }
        if root == before {
            return Ok(Edit::Unchanged);
        }
        render(&root, &indent_of(text)).map(Edit::Write)
    }

    fn entries(
        &self,
        wiring: &Wiring,
        spec: &Install,
        text: &str,
    ) -> Result<Vec<Entry>, EditSettingsError> {
        if text.trim().is_empty() {
            return Ok(Vec::new());
        }
        let root = parse(text)?;
        let Json::Object(_) = root else {
            return Err(EditSettingsError::NotAnObject);
        };
        let mut root = root;
        let Some(hooks) = root.get_mut("hooks") else {
            return Ok(Vec::new());
        };
        let hooks = &*hooks_of(hooks, spec)?;
        let mut entries = Vec::new();
        for (event, items) in hooks {
            let Json::Array(items) = items else { continue };
            for item in items {
                for handler in self.handlers(item) {
                    let Some(argv) = self.ours(wiring, handler) else {
                        continue;
                    };
                    let wanted = self.wanted(spec, &argv);
                    let mut differs = differences(&handler.to_value(), &wanted);
                    if self.grouped && item.get("matcher") != Some(&Json::String(EVERY_TOOL.into()))
                    {
                        let now = item
                            .get("matcher")
                            .map_or("none".into(), |m| m.to_value().to_string());
                        differs.push(format!(
                            "its group's `matcher` is {now}, install writes \"{EVERY_TOOL}\" \
                             (every tool)"
                        ));
                    }
                    entries.push(Entry {
                        event: event.clone(),
                        argv,
                        differs,
                    });
                }
            }
        }
        Ok(entries)
    }
}

/// The `hooks` object of a settings file, checked as far as toolgate
/// reads it: an object whose lists for the spec's events are lists.
fn hooks_of<'a>(
    hooks: &'a mut Json,
    spec: &Install,
) -> Result<&'a mut Vec<(String, Json)>, EditSettingsError> {
    let Json::Object(hooks) = hooks else {
        return Err(EditSettingsError::Shape {
            key: "hooks".into(),
            expected: "an object",
        });
    };
    match hooks.iter().find(|(event, items)| {
        spec.events.contains(&event.as_str()) && !matches!(items, Json::Array(_))
    }) {
        Some((event, _)) => Err(EditSettingsError::Shape {
            key: format!("hooks.{event}"),
            expected: "an array",
        }),
        None => Ok(hooks),
    }
}

/// The value under `key` in `fields`, added as `empty` (at the end) when
/// missing.
fn field_at<'a>(fields: &'a mut Vec<(String, Json)>, key: &str, empty: Json) -> &'a mut Json {
    let index = match fields.iter().position(|(k, _)| k == key) {
        Some(index) => index,
        None => {
            fields.push((key.to_owned(), empty));
            fields.len() - 1
        }
    };
    &mut fields[index].1
}

/// How the handler `found` differs from `wanted`, key by key.
fn differences(found: &Value, wanted: &Value) -> Vec<String> {
    let (Value::Object(found), Value::Object(wanted)) = (found, wanted) else {
        return if found == wanted {
            Vec::new()
        } else {
            vec![format!("it is {found}, install writes {wanted}")]
        };
    };
    let mut out = Vec::new();
    for (key, want) in wanted {
        match found.get(key) {
            None => out.push(format!("`{key}` is missing (install writes {want})")),
            Some(have) if have != want => {
                out.push(format!("`{key}` is {have}, install writes {want}"))
            }
            Some(_) => {}
        }
    }
    for key in found.keys().filter(|k| !wanted.contains_key(*k)) {
        out.push(format!("`{key}` is set, install writes none"));
    }
    out
}
