//! A hook's state in one agent session: the contract's only memory.
//!
//! # Why the contract has memory at all
//!
//! A hook is asked about one call and forgets it (a component is a fresh
//! instance per call; a subprocess is a fresh process). Some rules are about
//! a *sequence*: "once the agent has read a secret, it may not send anything
//! out" needs to know, at the `curl`, what was read three calls ago. A hook
//! could keep a file of its own, but a sandboxed one cannot (it has no
//! files), and an unsandboxed one would reinvent locking, expiry and
//! isolation badly. So the contract has a small store, kept by the host,
//! that each hook reads and writes through the binding it speaks: the WIT's
//! `session-get`/`session-put` imports, the wire's `"state"` fields.
//!
//! # What it is, and what it is not
//!
//! - **Per hook and per session.** The host picks the slot from the hook's
//!   identity (layer, name, what runs) and the call's `session_id`; a hook
//!   never names either, so it cannot read another session's state or
//!   another hook's, and a repository's hook cannot reach a global guard's.
//! - **Strings to strings, small.** At most [`MAX_STATE_KEYS`] keys of at
//!   most [`MAX_STATE_KEY_BYTES`] bytes, [`MAX_STATE_BYTES`] in all. A write
//!   past a bound is refused to the hook, which decides what that means.
//! - **Expiring.** A session's state is dropped after [`STATE_TTL`] without
//!   a write.
//! - **Committed only on an answer.** What a hook wrote while it ran is kept
//!   only if it decided; a hook that crashed, timed out or ran out of fuel
//!   leaves the state as it was.
//! - **Not for the model.** Nothing here reaches the model or the agent.
//!
//! A call without a session id has no state: reads find nothing and writes
//! are refused, saying so, so that a guard which depends on memory can
//! refuse rather than silently forget.

use std::collections::BTreeMap;
use std::time::Duration;

/// One hook's state in one session.
pub type SessionState = BTreeMap<String, String>;

/// What a hook wrote during one call: a key set to a value, or removed
/// (`None`). Applied to the stored state when the hook decided.
pub type StateChanges = BTreeMap<String, Option<String>>;

/// The most keys one hook keeps in one session.
pub const MAX_STATE_KEYS: usize = 64;
/// The longest key, in bytes.
pub const MAX_STATE_KEY_BYTES: usize = 128;
/// The most one hook keeps in one session, keys and values together.
pub const MAX_STATE_BYTES: usize = 16 * 1024;
/// How long a session's state outlives its last write: a day, longer than
/// any working session and short enough that the store stays small.
pub const STATE_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// What the host could find of this hook's state for this call.
#[derive(Clone, Copy, Debug, Default)]
pub enum Kept<'a> {
    /// The call has no session id: nothing is kept.
    #[default]
    NoSession,
    /// The store could not be read (its directory is not the user's, its
    /// file is damaged): the hook is told why, and decides.
    Unavailable(&'a str),
    /// This hook's state in this session (empty when it has kept nothing).
    State(&'a SessionState),
}

/// Why a hook's write was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StateWriteError {
    /// The call has no session id.
    #[error("this call has no agent session id, so nothing can be kept for it")]
    NoSession,
    /// The store could not be read, so it is not written either.
    #[error("the session store is unavailable: {0}")]
    Unavailable(String),
    /// A key over [`MAX_STATE_KEY_BYTES`], or empty.
    #[error("a state key must be 1 to {MAX_STATE_KEY_BYTES} bytes (this one is {0})")]
    Key(usize),
    /// More than [`MAX_STATE_KEYS`] keys.
    #[error("a hook keeps at most {MAX_STATE_KEYS} keys in a session")]
    TooManyKeys,
    /// More than [`MAX_STATE_BYTES`] in all.
    #[error("a hook keeps at most {MAX_STATE_BYTES} bytes in a session (this would be {0})")]
    TooLarge(usize),
}

/// `state` with `changes` applied, if it stays within the bounds.
pub fn apply(
    state: &SessionState,
    changes: &StateChanges,
) -> Result<SessionState, StateWriteError> {
    let mut next = state.clone();
    for (key, value) in changes {
        if key.is_empty() || key.len() > MAX_STATE_KEY_BYTES {
            return Err(StateWriteError::Key(key.len()));
        }
        match value {
            Some(value) => next.insert(key.clone(), value.clone()),
            None => next.remove(key),
        };
    }
    if next.len() > MAX_STATE_KEYS {
        return Err(StateWriteError::TooManyKeys);
    }
    let bytes = size(&next);
    if bytes > MAX_STATE_BYTES {
        return Err(StateWriteError::TooLarge(bytes));
    }
    Ok(next)
}

/// Keys and values together, in bytes.
pub fn size(state: &SessionState) -> usize {
    state.iter().map(|(k, v)| k.len() + v.len()).sum()
}

/// One write checked against what the hook already kept and wrote in this
/// call: the bound a binding enforces as the hook writes (a component's
/// `session-put`), so the hook hears of it at once.
pub fn check_write(
    kept: Kept<'_>,
    changes: &StateChanges,
    key: &str,
    value: Option<&str>,
) -> Result<(), StateWriteError> {
    let state = match kept {
        Kept::NoSession => return Err(StateWriteError::NoSession),
        Kept::Unavailable(why) => return Err(StateWriteError::Unavailable(why.to_owned())),
        Kept::State(state) => state,
    };
    let mut changes = changes.clone();
    changes.insert(key.to_owned(), value.map(str::to_owned));
    apply(state, &changes).map(drop)
}

/// Why a hook's read found nothing it can rely on.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StateReadError {
    /// The store could not be read.
    #[error("the session store is unavailable: {0}")]
    Unavailable(String),
}

/// What a read finds: this call's own writes first, then what was kept.
pub fn read(
    kept: Kept<'_>,
    changes: &StateChanges,
    key: &str,
) -> Result<Option<String>, StateReadError> {
    if let Some(written) = changes.get(key) {
        return Ok(written.clone());
    }
    match kept {
        Kept::NoSession => Ok(None),
        Kept::Unavailable(why) => Err(StateReadError::Unavailable(why.to_owned())),
        Kept::State(state) => Ok(state.get(key).cloned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn changes(pairs: &[(&str, Option<&str>)]) -> StateChanges {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.map(str::to_owned)))
            .collect()
    }

    #[test]
    fn writes_are_bounded_by_keys_key_length_and_total_size() {
        let empty = SessionState::new();
        assert!(apply(&empty, &changes(&[("a", Some("1"))])).is_ok());
        assert_eq!(
            apply(&empty, &changes(&[("", Some("1"))])),
            Err(StateWriteError::Key(0))
        );
        let long = "k".repeat(MAX_STATE_KEY_BYTES + 1);
        assert!(apply(&empty, &changes(&[(&long, Some("1"))])).is_err());
        let many: StateChanges = (0..=MAX_STATE_KEYS)
            .map(|i| (format!("k{i}"), Some(String::new())))
            .collect();
        assert_eq!(apply(&empty, &many), Err(StateWriteError::TooManyKeys));
        let big = "v".repeat(MAX_STATE_BYTES);
        assert!(matches!(
            apply(&empty, &changes(&[("a", Some(&big))])),
            Err(StateWriteError::TooLarge(_))
        ));
    }

    #[test]
    fn a_removal_frees_room_and_a_read_sees_this_calls_writes_first() {
        let mut kept = SessionState::new();
        kept.insert("a".into(), "old".into());
        let written = changes(&[("a", None)]);
        assert_eq!(read(Kept::State(&kept), &written, "a"), Ok(None));
        assert_eq!(apply(&kept, &written).unwrap(), SessionState::new());
        assert_eq!(
            check_write(Kept::NoSession, &StateChanges::new(), "a", Some("1")),
            Err(StateWriteError::NoSession)
        );
        assert_eq!(
            read(Kept::Unavailable("damaged"), &StateChanges::new(), "a"),
            Err(StateReadError::Unavailable("damaged".into()))
        );
    }
}
