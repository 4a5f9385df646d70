//! Reading an answer line as exactly one kind of [`Body`], or not at all.
//!
//! # Why not serde's untagged enum
//!
//! Read untagged, the first kind whose fields were present won and the
//! rest of the line was ignored: `{"exit": 0, "stdout": null, "error":
//! "x"}` read as an allow, the kindest form of an ambiguous message
//! (SECURITY.md, class 36). Here a kind is told by the fields only it has;
//! the fields of two kinds, of none, or a field no kind has, do not read,
//! and an unreadable answer blocks the call.

use super::{Answer, Body};
use serde::Deserialize;
use serde_json::Value;

impl<'de> Deserialize<'de> for Answer {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Answer, D::Error> {
        use serde::de::Error as _;
        let mut fields = serde_json::Map::<String, Value>::deserialize(d)?;
        let id = fields
            .remove("id")
            .ok_or_else(|| D::Error::missing_field("id"))?;
        let body = Body::exactly_one(fields).map_err(D::Error::custom)?;
        Ok(Answer { id, body })
    }
}

impl<'de> Deserialize<'de> for Body {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Body, D::Error> {
        use serde::de::Error as _;
        let fields = serde_json::Map::<String, Value>::deserialize(d)?;
        Body::exactly_one(fields).map_err(D::Error::custom)
    }
}

/// The kinds of [`Body`], as their fields tell them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Ack,
    Evaluated,
    Error,
    Busy,
    Status,
    Metrics,
}

/// Each field only one kind has, and that kind. (`warning` is shared by
/// two kinds, so it tells none.)
const TELLS: [(&str, Kind); 7] = [
    ("ack", Kind::Ack),
    ("exit", Kind::Evaluated),
    ("stdout", Kind::Evaluated),
    ("error", Kind::Error),
    ("busy", Kind::Busy),
    ("status", Kind::Status),
    ("metrics", Kind::Metrics),
];

/// Each kind's fields exactly: no field of another kind, none unknown.
mod fields {
    use serde::Deserialize;
    use serde_json::Value;

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct Ack {
        pub(super) ack: bool,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct Evaluated {
        pub(super) exit: u8,
        /// Required (a `Value`, not an `Option`): `null` is "nothing
        /// printed", a missing `stdout` is no answer.
        pub(super) stdout: Value,
        #[serde(default)]
        pub(super) warning: Option<String>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct Error {
        pub(super) error: String,
        #[serde(default)]
        pub(super) warning: Option<String>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct Busy {
        pub(super) busy: super::super::Busy,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct Status {
        pub(super) status: super::super::Status,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct Metrics {
        pub(super) metrics: String,
    }
}

impl Body {
    /// The one kind `fields` are, or why they are none.
    fn exactly_one(fields: serde_json::Map<String, Value>) -> Result<Body, String> {
        let mut kinds: Vec<Kind> = Vec::new();
        for (field, kind) in TELLS {
            if fields.contains_key(field) && !kinds.contains(&kind) {
                kinds.push(kind);
            }
        }
        let kind = match kinds.as_slice() {
            [kind] => *kind,
            [] => return Err("an answer with the fields of no kind of answer".to_owned()),
            several => {
                return Err(format!(
                    "an answer with the fields of {} kinds of answer ({several:?})",
                    several.len()
                ));
            }
        };
        let fields = Value::Object(fields);
        let read = |e: serde_json::Error| format!("a {kind:?} answer that does not read: {e}");
        Ok(match kind {
            Kind::Ack => {
                let fields::Ack { ack } = serde_json::from_value(fields).map_err(read)?;
                Body::Ack { ack }
            }
            Kind::Evaluated => {
                let fields::Evaluated {
                    exit,
                    stdout,
                    warning,
                } = serde_json::from_value(fields).map_err(read)?;
                Body::Evaluated {
                    exit,
                    stdout: (!stdout.is_null()).then_some(stdout),
                    warning,
                }
            }
            Kind::Error => {
                let fields::Error { error, warning } =
                    serde_json::from_value(fields).map_err(read)?;
                Body::Error { error, warning }
            }
            Kind::Busy => {
                let fields::Busy { busy } = serde_json::from_value(fields).map_err(read)?;
                Body::Busy { busy }
            }
            Kind::Status => {
                let fields::Status { status } = serde_json::from_value(fields).map_err(read)?;
                Body::Status { status }
            }
            Kind::Metrics => {
                let fields::Metrics { metrics } = serde_json::from_value(fields).map_err(read)?;
                Body::Metrics { metrics }
            }
        })
    }
}
