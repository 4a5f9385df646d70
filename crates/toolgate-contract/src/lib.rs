//! toolgate's contract: what a hook is asked and what it may answer, in
//! every encoding toolgate speaks to another program.
//!
//! # Why a crate of its own
//!
//! Every party to a decision speaks this and nothing more: a hook (wire v1),
//! a client of `toolgate serve` (the serve protocol), the lean client that
//! forwards an agent's call. None of them runs a hook, so none should link
//! wasmtime, tokio or hyper to say one. Before the split these types sat in
//! the library beside the bindings, and the lean client, reaching them,
//! linked most of it. Here the dependency list is the promise: serde,
//! strum, thiserror and a regex engine, checked by the crate graph test
//! (`tests/all/layers.rs`) and by cargo itself.
//!
//! | module | what it holds |
//! |---|---|
//! | [`text`] | bounding and sanitising what hooks say; RFC 3339 times |
//! | [`strict_json`] | JSON without duplicate keys; parse errors that never quote the input |
//! | [`contract`] | events, the request, the four answers (deny is a value), `Source`, `BindingKind`, the tool filter |
//! | [`failure`] | "could not decide" as a type, and the policy for it |
//! | [`outcome`] | run records and outcomes: what the chain produced, what protocols render |
//! | [`refusal`] | the words of a refusal or a withheld output, in one place |
//! | [`observe`] | what an observer (the decision log, the metrics) is told about an answered call |
//! | [`wire`] | wire v1, the JSON subprocess hooks and `toolgate check` read and write |
//! | [`serve`] | what `toolgate serve` and its clients say, typed and versioned |
//! | [`agent`] | the agents toolgate can be the hook of, by name |
//!
//! The library (`toolgate`) re-exports each under the same path, so an
//! embedder names them as before (`toolgate::Verdict`, `toolgate::wire`).

pub mod agent;
pub mod contract;
pub mod failure;
pub mod observe;
pub mod outcome;
pub mod refusal;
pub mod serve;
pub mod session;
#[doc(hidden)]
pub mod strict_json;
pub mod text;
pub mod wire;
