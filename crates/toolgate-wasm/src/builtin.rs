//! The guards toolgate ships: `{"name": "shell", "use": "toolgate:shell"}`,
//! and likewise `toolgate:paths`, `toolgate:secrets`, `toolgate:egress`.
//!
//! # Why components built into the binary
//!
//! A standard guard is a policy an operator relies on without writing it,
//! so it runs the way every third-party guard runs: as a WebAssembly
//! component, fuel-limited, memory-bounded, with no ambient authority
//! (a bug in a shell parser fed hostile text stays inside the sandbox).
//! Its bytes are embedded here, so `use` needs no file on disk, no network
//! and no trust review (nothing in a workspace changes what runs), and
//! every machine runs the same artefact. The bytes are `guards/dist/`,
//! built from `guards/<name>/` by the Rust guest recipe; the test command
//! rebuilds them and fails unless they match bit for bit
//! (`guards/build.sh`). An in-process guard would be faster per call, and
//! was not chosen: the sandbox is the point, and the per-call cost is
//! measured (`toolgate bench --guards`) against the goal.

/// The prefix a hook's `use` names a built-in guard with.
pub(crate) const SCHEME: &str = "toolgate:";

/// One built-in guard.
#[derive(Debug)]
pub(crate) struct Guard {
    /// Its name after `toolgate:`.
    pub(crate) name: &'static str,
    /// The component.
    pub(crate) bytes: &'static [u8],
}

/// Every built-in guard's component, by name: one for each entry of
/// `toolgate_guards::GUARDS` (pinned by a test), in the same order.
pub(crate) const GUARDS: &[Guard] = &[
    Guard {
        name: "shell",
        bytes: include_bytes!("../../../guards/dist/shell.wasm"),
    },
    Guard {
        name: "paths",
        bytes: include_bytes!("../../../guards/dist/paths.wasm"),
    },
    Guard {
        name: "secrets",
        bytes: include_bytes!("../../../guards/dist/secrets.wasm"),
    },
    Guard {
        name: "egress",
        bytes: include_bytes!("../../../guards/dist/egress.wasm"),
    },
];

/// What the published schema says of each built-in guard's `config`: for
/// `use: "toolgate:NAME"`, that guard's options (each a list of strings;
/// `allow_classes` from its classes), and no other key. The guard's own
/// list (toolgate-guards) is the one both it and this read.
pub(crate) fn config_schemas() -> serde_json::Value {
    use serde_json::json;
    let each: Vec<serde_json::Value> = toolgate_guards::GUARDS
        .iter()
        .map(|guard| {
            let options: serde_json::Map<String, serde_json::Value> = guard
                .options
                .iter()
                .map(|(name, about)| {
                    let items = match *name {
                        "allow_classes" => json!({"enum": guard.classes}),
                        _ => json!({"type": "string", "minLength": 1}),
                    };
                    let schema = json!({"type": "array", "items": items, "description": about});
                    ((*name).to_owned(), schema)
                })
                .collect();
            json!({
                "if": {"properties": {"use": {"const": format!("{SCHEME}{}", guard.name)}}, "required": ["use"]},
                "then": {"properties": {"config": {
                    "type": "object",
                    "additionalProperties": false,
                    "properties": options,
                }}},
            })
        })
        .collect();
    json!({ "allOf": each })
}

/// The guard `use` names (`toolgate:shell`), if there is one.
pub(crate) fn find(written: &str) -> Option<&'static Guard> {
    let name = written.strip_prefix(SCHEME)?;
    GUARDS.iter().find(|g| g.name == name)
}

/// Every name `use` accepts, as written in hooks.json.
pub(crate) fn names() -> Vec<String> {
    GUARDS
        .iter()
        .map(|g| format!("{SCHEME}{}", g.name))
        .collect()
}

#[cfg(test)]
mod tests {
    /// The binary embeds a component for exactly the guards the library
    /// describes: a guard without bytes, or bytes without options and
    /// classes in the schema, would be half shipped.
    #[test]
    fn every_described_guard_has_its_component_and_no_other() {
        let described: Vec<&str> = toolgate_guards::GUARDS.iter().map(|g| g.name).collect();
        let embedded: Vec<&str> = super::GUARDS.iter().map(|g| g.name).collect();
        assert_eq!(described, embedded);
    }
}
