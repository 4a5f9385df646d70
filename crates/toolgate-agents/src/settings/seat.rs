//! Claude Code's `prependPlugins`: the list that seats a mod outermost.
//!
//! # Why toolgate edits this list, and how
//!
//! A mod in the `prepend` tier hears every event before any mod a
//! repository, a marketplace or a `--plugin-dir` brought, so it alone can
//! refuse a call no mod beneath it can undo (Claude Code 2.1.332 reads the
//! list from managed settings, or from the user's own settings when there
//! are none; a project's is ignored). The first id in the list is the
//! outermost, so toolgate's goes first: a mod the user listed before it
//! could otherwise answer around it. The rest of the list, and of the file,
//! is kept as it is, in its order; running it again changes nothing.

use super::json::{Json, indent_of, parse, render};
use super::{Edit, EditSettingsError};

/// The settings key.
pub const PREPEND_PLUGINS: &str = "prependPlugins";

/// The settings `text` (`None`: no file yet) with `id` first in
/// `prependPlugins` (moved there when listed further down).
pub fn seat_first(text: Option<&str>, id: &str) -> Result<Edit, EditSettingsError> {
    let (mut json, indent) = open(text)?;
    let list = list_of(&mut json)?;
    if list.first() == Some(&Json::String(id.to_owned())) {
        return Ok(Edit::Unchanged);
    }
    list.retain(|item| *item != Json::String(id.to_owned()));
    list.insert(0, Json::String(id.to_owned()));
    render(&json, &indent).map(Edit::Write)
}

/// The settings `text` without `id` in `prependPlugins` (and without the
/// key when that emptied it).
pub fn unseat(text: &str, id: &str) -> Result<Edit, EditSettingsError> {
    let (mut json, indent) = open(Some(text))?;
    if json.get(PREPEND_PLUGINS).is_none() {
        return Ok(Edit::Unchanged);
    }
    let list = list_of(&mut json)?;
    let before = list.len();
    list.retain(|item| *item != Json::String(id.to_owned()));
    if list.len() == before {
        return Ok(Edit::Unchanged);
    }
    if list.is_empty()
        && let Json::Object(fields) = &mut json
    {
        fields.retain(|(k, _)| k != PREPEND_PLUGINS);
    }
    render(&json, &indent).map(Edit::Write)
}

/// The ids `prependPlugins` lists in the settings `text`, in order (empty
/// when the key is absent).
pub fn seated(text: &str) -> Result<Vec<String>, EditSettingsError> {
    let json = parse(text)?;
    match json.get(PREPEND_PLUGINS) {
        None => Ok(Vec::new()),
        Some(list) => list.strings().ok_or(EditSettingsError::Shape {
            key: PREPEND_PLUGINS.into(),
            expected: "an array of strings",
        }),
    }
}

fn open(text: Option<&str>) -> Result<(Json, String), EditSettingsError> {
    match text {
        Some(text) if !text.trim().is_empty() => {
            let json = parse(text)?;
            if !matches!(json, Json::Object(_)) {
                return Err(EditSettingsError::NotAnObject);
            }
            Ok((json, indent_of(text)))
        }
        _ => Ok((Json::Object(Vec::new()), "  ".to_owned())),
    }
}

/// `prependPlugins` in `json` (an object), added empty at the end when
/// missing; refused when it is not an array of strings.
fn list_of(json: &mut Json) -> Result<&mut Vec<Json>, EditSettingsError> {
    let Json::Object(fields) = json else {
        return Err(EditSettingsError::NotAnObject);
    };
    if !fields.iter().any(|(k, _)| k == PREPEND_PLUGINS) {
        fields.push((PREPEND_PLUGINS.to_owned(), Json::Array(Vec::new())));
    }
    let shape = || EditSettingsError::Shape {
        key: PREPEND_PLUGINS.into(),
        expected: "an array of strings",
    };
    match json.get_mut(PREPEND_PLUGINS) {
        Some(Json::Array(items)) if items.iter().all(|i| matches!(i, Json::String(_))) => Ok(items),
        _ => Err(shape()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(edit: Edit) -> String {
        match edit {
            Edit::Write(text) => text,
            other => panic!("expected a write, got {other:?}"),
        }
    }

    #[test]
    fn toolgates_mod_is_seated_first_and_the_rest_of_the_file_is_kept() {
        let text = "{\n    \"model\": \"x\",\n    \"prependPlugins\": [\"mine@m\", \"toolgate@skills-dir\"]\n}\n";
        let out = written(seat_first(Some(text), "toolgate@skills-dir").unwrap());
        assert_eq!(seated(&out).unwrap(), ["toolgate@skills-dir", "mine@m"]);
        assert!(out.starts_with("{\n    \"model\""), "{out}");
        assert_eq!(
            seat_first(Some(&out), "toolgate@skills-dir").unwrap(),
            Edit::Unchanged
        );
    }

    #[test]
    fn a_missing_file_gets_the_list_alone() {
        let out = written(seat_first(None, "toolgate@skills-dir").unwrap());
        assert_eq!(seated(&out).unwrap(), ["toolgate@skills-dir"]);
    }

    #[test]
    fn unseating_what_seating_wrote_leaves_the_file_as_it_was() {
        let text = "{\n  \"model\": \"x\"\n}\n";
        let seated_text = written(seat_first(Some(text), "toolgate@skills-dir").unwrap());
        assert_eq!(
            written(unseat(&seated_text, "toolgate@skills-dir").unwrap()),
            text
        );
    }

    #[test]
    fn a_list_that_is_not_strings_is_refused_not_rewritten() {
        for text in [
            "{\"prependPlugins\": \"toolgate@skills-dir\"}",
            "{\"prependPlugins\": [1]}",
        ] {
            let e = seat_first(Some(text), "toolgate@skills-dir")
                .unwrap_err()
                .to_string();
            assert!(e.contains("`prependPlugins` that is not an array"), "{e}");
        }
    }
}
