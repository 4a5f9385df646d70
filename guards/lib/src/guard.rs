//! What every standard guard shares: the call it judges, the answer it
//! gives, how it reads its options, and the glue that makes it a component.
//!
//! # Why the glue is a macro here and the guests are one line
//!
//! Each guard is its own component (`guards/<name>/`), so a user pays for
//! the one they enable and a change to one never changes another's bytes
//! without reason. What turns a guard's `decide` into a component (read
//! the request's JSON, map the answer to a verdict) is the same for all of
//! them; written once here as [`guest!`](crate::guest), it expands in each
//! guest crate (which has `toolgate_hook`), while this crate stays free of
//! the SDK and builds natively for its tests and the bench.

use serde_json::{Map, Value};

/// One tool call as a guard sees it.
#[derive(Clone, Copy, Debug)]
pub struct Call<'a> {
    /// Before the call (`true`) or after it.
    pub pre: bool,
    /// The tool's name, as the agent calls it.
    pub tool: &'a str,
    /// The tool's input.
    pub input: &'a Value,
    /// After the call: what the tool returned.
    pub output: Option<&'a Value>,
    /// The agent's working directory.
    pub cwd: Option<&'a str>,
}

/// A guard's `decide`: a call and its hooks.json `config` to an answer, or
/// the reason it cannot decide (a mistake in its options, a request it
/// cannot read), which toolgate treats as a failed hook (closed).
pub type Decide = fn(&Call<'_>, &Map<String, Value>) -> Result<Answer, String>;

/// A guard's memory of this session: toolgate's session store as the
/// guest sees it (`session-get`/`session-put`), or a map in a test. Only
/// the taint guard uses it; the others are pure functions of one call.
pub trait Memory {
    /// What was kept under `key`; `Err` when the store cannot be read.
    fn get(&mut self, key: &str) -> Result<Option<String>, String>;
    /// Keeps `value` under `key` (`None` removes it); `Err` says why not.
    fn put(&mut self, key: &str, value: Option<&str>) -> Result<(), String>;
}

/// A guard's answer.
#[derive(Clone, Debug, PartialEq)]
pub enum Answer {
    /// Nothing to say.
    Allow,
    /// Refused: the class of danger and what was found.
    Deny {
        /// One of the guard's classes.
        class: &'static str,
        /// What was found, for the model and the operator.
        why: String,
    },
    /// Before the call: a person must confirm it (where the agent can ask
    /// one; elsewhere toolgate refuses it, saying so): a class the operator
    /// listed for a person to decide, and what was found.
    Ask {
        /// One of the guard's classes.
        class: &'static str,
        /// What was found, for the person and the model.
        why: String,
    },
    /// After the call: show the model this output instead (secrets
    /// redacted), naming what was taken out.
    Redact {
        /// The output with every secret replaced.
        output: Value,
        /// The kinds of secret found, in order.
        kinds: Vec<&'static str>,
    },
}

/// The deny reason a guard gives: its name, the class in brackets (what
/// `toolgate bench --guards` reads back), what it found, and what to do.
pub fn reason(guard: &str, class: &str, why: &str) -> String {
    format!(
        "toolgate:{guard} blocked this call [{class}]: {why}. If it is really needed, ask the user to do it themselves."
    )
}

/// The reason a guard gives when it asks for a person: its name, the
/// class in brackets (as in [`reason`]), and what it found.
pub fn ask_reason(guard: &str, class: &str, why: &str) -> String {
    format!("toolgate:{guard} wants a person to confirm this call [{class}]: {why}.")
}

/// A guard's options, read from its hooks.json `config`: each a list of
/// strings. Any key not in `known` is refused (a misspelt option must not
/// leave a guard guarding less than the operator thinks).
#[derive(Debug)]
pub struct Options<'a> {
    config: &'a Map<String, Value>,
}

impl<'a> Options<'a> {
    /// Checks `config` against the guard's option list.
    pub fn read(
        guard: &str,
        config: &'a Map<String, Value>,
        known: &[(&str, &str)],
    ) -> Result<Self, String> {
        if let Some(unknown) = config.keys().find(|k| !known.iter().any(|(n, _)| n == k)) {
            let names: Vec<&str> = known.iter().map(|(n, _)| *n).collect();
            return Err(format!(
                "config `{unknown}`: not an option of toolgate:{guard} (it has {})",
                names.join(", ")
            ));
        }
        Ok(Self { config })
    }

    /// The list under `key`, if given.
    pub fn list(&self, key: &str) -> Result<Option<Vec<String>>, String> {
        match self.config.get(key) {
            None => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| {
                    v.as_str()
                        .map(str::to_owned)
                        .ok_or_else(|| format!("config `{key}`: expected a list of strings"))
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(_) => Err(format!("config `{key}`: expected a list of strings")),
        }
    }

    /// The list under `key`, each entry one of `allowed` (a class list).
    pub fn classes(&self, key: &str, allowed: &[&str]) -> Result<Vec<String>, String> {
        let list = self.list(key)?.unwrap_or_default();
        if let Some(bad) = list.iter().find(|c| !allowed.contains(&c.as_str())) {
            return Err(format!(
                "config `{key}`: `{bad}` is not a class (they are {})",
                allowed.join(", ")
            ));
        }
        Ok(list)
    }
}

/// Makes a guard's `decide(&Call, &Map) -> Result<Answer, String>` the
/// component's `decide`: used once, in `guards/<name>/src/lib.rs`.
#[macro_export]
macro_rules! guest {
    ($name:literal, $decide:path) => {
        $crate::guest!(@with $name, |call, config| $decide(call, config));
    };
    // A guard with memory: its `decide` also takes the session's state.
    ($name:literal, $decide:path, session) => {
        struct Session;

        impl $crate::guard::Memory for Session {
            fn get(&mut self, key: &str) -> Result<Option<String>, String> {
                toolgate_hook::session::get(key)
            }
            fn put(&mut self, key: &str, value: Option<&str>) -> Result<(), String> {
                toolgate_hook::session::put(key, value)
            }
        }

        $crate::guest!(@with $name, |call, config| $decide(call, config, &mut Session));
    };
    (@with $name:literal, $decide:expr) => {
        struct Guard;

        impl toolgate_hook::Hook for Guard {
            fn decide(request: toolgate_hook::Request) -> Result<toolgate_hook::Verdict, String> {
                use toolgate_hook::serde_json::{Map, Value};
                // A guard judges calls; a tool list is not one (its input
                // is a definition), so it says it cannot decide.
                if request.event == toolgate_hook::Event::ListTools {
                    return Err(format!("toolgate:{} judges calls, not tool lists (list_tools)", $name));
                }
                let config: Map<String, Value> = request.config_json()?.unwrap_or_default();
                let input: Value = request.input_json()?;
                let output: Option<Value> = request.output_json()?;
                let call = $crate::guard::Call {
                    pre: request.is_pre(),
                    tool: &request.tool,
                    input: &input,
                    output: output.as_ref(),
                    cwd: request.cwd.as_deref(),
                };
                let decide: fn(
                    &$crate::guard::Call<'_>,
                    &Map<String, Value>,
                ) -> Result<$crate::guard::Answer, String> = $decide;
                Ok(match decide(&call, &config)? {
                    $crate::guard::Answer::Allow => toolgate_hook::Verdict::allow(),
                    $crate::guard::Answer::Deny { class, why } => {
                        toolgate_hook::Verdict::deny($crate::guard::reason($name, class, &why))
                    }
                    $crate::guard::Answer::Ask { class, why } => {
                        toolgate_hook::Verdict::ask($crate::guard::ask_reason($name, class, &why))
                    }
                    $crate::guard::Answer::Redact { output, kinds } => {
                        let is_error = request.result.as_ref().is_some_and(|r| r.is_error);
                        toolgate_hook::Verdict::replace(&output, is_error)?.with_context(format!(
                            "toolgate:{} redacted {} from this output",
                            $name,
                            kinds.join(", ")
                        ))
                    }
                })
            }
        }

        toolgate_hook::export!(Guard);
    };
}
