//! The parse kit every configurable binding uses: what its parser is
//! given ([`Common`]), where it reports problems ([`HookCtx`], each naming
//! the file, the hook and the field), and the embedder's per-binding options
//! ([`BindingOptions`]).
//!
//! # Why here, in the seam
//!
//! A binding parses its own hooks.json fields, so it needs these types; the
//! config loader hands them over. Kept in `config`, every binding imported
//! upward from the layer that loads it (and `config` imported the binding
//! registry back: a cycle). Here both depend on the seam and on nothing of
//! each other's.

use crate::contract::Source;
use serde::Serialize;
use serde_json::Value;
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What a binding's parser gets besides its own fields: where the hook came
/// from and the common fields it may need.
#[derive(Debug)]
pub struct Common<'a> {
    /// Which layer the hook came from.
    pub source: Source,
    /// The config's root: relative paths resolve against it.
    pub root: &'a Path,
    /// `timeout_ms`, when valid.
    pub timeout_ms: Option<u64>,
    /// The hook's `config`.
    pub config: Option<&'a Value>,
    /// The embedder's options for each binding (how components are cached,
    /// say), by type: see [`BindingOptions`].
    pub options: &'a BindingOptions,
    /// Whether to load what the hook runs: false when the process evaluates
    /// one call the hook does not apply to (its fields are still checked).
    pub load: bool,
}

/// The embedding program's options for each binding, by type (a component
/// cache for the wasm binding): the loader carries them without naming any
/// binding's type, the way `http::Extensions` carries a request's.
#[derive(Clone, Default)]
pub struct BindingOptions(HashMap<TypeId, Arc<dyn Any + Send + Sync>>);

impl BindingOptions {
    /// No options: each binding uses its defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// With the options of type `T` (a `WasmOptions`, say).
    pub fn with<T: Any + Send + Sync>(mut self, value: T) -> Self {
        self.set(value);
        self
    }

    /// Sets the options of type `T`, replacing any before.
    pub fn set<T: Any + Send + Sync>(&mut self, value: T) {
        self.0.insert(TypeId::of::<T>(), Arc::new(value));
    }

    /// The options of type `T`, when the embedder gave some.
    pub fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.0.get(&TypeId::of::<T>())?.downcast_ref()
    }
}

/// Set in [`BindingOptions`] by `Config::from_file` for the managed
/// layer: its caller vouches for the file and what it names, so what the
/// loader checks of a managed component's owner (`root_owned_file`) is the
/// caller's to have checked. Absent (every load through the `Loader`),
/// the check is made.
#[derive(Debug, Clone, Copy)]
pub struct CallerVouches;

impl fmt::Debug for BindingOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BindingOptions")
            .field("types", &self.0.len())
            .finish()
    }
}

/// Where problems in one hook are collected, each naming the file, the
/// hook's index and name, and the field.
#[derive(Debug)]
pub struct HookCtx<'a> {
    /// The config file.
    pub path: &'a Path,
    /// The hook's index in `hooks`.
    pub index: usize,
    /// The hook's name, once it has a usable one.
    pub name: Option<String>,
    /// What is wrong, so far.
    pub problems: Vec<Problem>,
}

impl<'a> HookCtx<'a> {
    /// Problems in hook `index` of the file at `path`.
    pub fn new(path: &'a Path, index: usize) -> Self {
        HookCtx {
            path,
            index,
            name: None,
            problems: Vec::new(),
        }
    }

    /// Records a problem in `field` (`""` for the hook as a whole).
    pub fn problem(&mut self, field: &str, message: impl Into<String>) {
        self.problems.push(Problem {
            file: self.path.to_owned(),
            index: Some(self.index),
            name: self.name.clone(),
            field: (!field.is_empty()).then(|| field.to_owned()),
            message: message.into(),
        });
    }

    /// Whether no problem was found in this hook so far.
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }

    /// A path a hook names, resolved against the config's root. When
    /// `confined` and the config is a workspace's, it must stay beneath the
    /// workspace root after symlinks, whatever it looks like (absolute, `..`,
    /// a symlink out). A refusal is reported on `field`.
    pub fn resolve(
        &mut self,
        (field, what): (&str, &str),
        written: &str,
        common: &Common<'_>,
        confined: bool,
    ) -> Option<std::path::PathBuf> {
        let joined = common.root.join(written);
        let checked = match common.source {
            Source::Workspace if confined => crate::safe_fs::beneath(&joined, common.root),
            _ => Ok(joined.clone()),
        };
        match checked {
            Ok(path) => Some(path),
            Err(e) => {
                self.refused_path(field, what, written, &joined, common.root, e);
                None
            }
        }
    }

    /// Reports why a path a hook names was refused.
    pub fn refused_path(
        &mut self,
        field: &str,
        what: &str,
        written: &str,
        resolved: &Path,
        root: &Path,
        error: crate::safe_fs::ReadFileError,
    ) {
        let message = match error {
            crate::safe_fs::ReadFileError::NotFound => format!(
                "{what} {written:?} not found (resolved to {}; relative paths resolve against {})",
                resolved.display(),
                root.display()
            ),
            e => format!("{what} {written:?} {}", crate::text::error_chain(&e)),
        };
        self.problem(field, message);
    }

    /// A whole number in `min..=max` (or `default` when absent).
    pub fn bounded(
        &mut self,
        value: Option<&Value>,
        field: &str,
        min: u64,
        max: u64,
        default: u64,
        unit: &str,
    ) -> Option<u64> {
        match value {
            None => Some(default),
            Some(Value::Number(n)) => match n.as_u64() {
                Some(v) if (min..=max).contains(&v) => Some(v),
                _ => {
                    self.problem(
                        field,
                        format!(
                            "{n} is out of range; expected a whole number in {min}..={max}{unit}"
                        ),
                    );
                    None
                }
            },
            Some(other) => {
                self.problem(
                    field,
                    format!(
                        "expected a whole number in {min}..={max}{unit}, got {}",
                        type_name(other)
                    ),
                );
                None
            }
        }
    }
}

/// One hooks.json field as the loader reads it: its name, what it means,
/// and the JSON Schema of the values it accepts. The loader's list of known
/// fields is a list of these, and the published schema is built from the
/// same lists (`config::schema`), so a field cannot be known to one and
/// not the other.
#[derive(Debug)]
pub struct Field {
    /// The key.
    pub name: &'static str,
    /// What it means, in a sentence (the schema's `description`: what an
    /// editor shows on hover).
    pub about: &'static str,
    /// The schema of its value, built from the same bounds and variant
    /// lists its parser checks against.
    pub schema: fn() -> Value,
}

/// The schema of a whole number in `min..=max` (what [`HookCtx::bounded`]
/// accepts).
pub fn whole_number(min: u64, max: u64) -> Value {
    serde_json::json!({"type": "integer", "minimum": min, "maximum": max})
}

/// The schema of one of `names` (an enum's wire spellings).
pub fn one_of_names(names: &[&str]) -> Value {
    serde_json::json!({"type": "string", "enum": names})
}

/// A JSON value's type, in words (for "expected …, got …").
pub fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// What was given where a non-empty string was expected, in words: `empty`
/// for `""`, else the value's type (never the value: it is the file's).
pub fn got_instead_of_text(value: &Value, empty: &'static str) -> &'static str {
    if value.as_str() == Some("") {
        empty
    } else {
        type_name(value)
    }
}

/// One thing wrong with a config file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// The file.
    pub file: PathBuf,
    /// The hook's index in `hooks`, when the problem is in a hook.
    pub index: Option<usize>,
    /// The hook's name, when it has a usable one.
    pub name: Option<String>,
    /// The field, when the problem is in one.
    pub field: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl Problem {
    /// A problem with the whole file, not one hook.
    pub fn file(path: &Path, message: String) -> Self {
        Problem {
            file: path.to_owned(),
            index: None,
            name: None,
            field: None,
            message,
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(i) = self.index {
            write!(f, ": hooks[{i}]")?;
            if let Some(name) = &self.name {
                write!(f, " ({name:?})")?;
            }
        }
        if let Some(field) = &self.field {
            write!(f, ": field `{field}`")?;
        }
        write!(f, ": {}", self.message)
    }
}
