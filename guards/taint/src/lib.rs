//! `toolgate:taint`: after a secret is read in a session, nothing leaves
//! over the network for the rest of it. Its rules are `toolgate-guards`
//! (guards/lib/src/taint.rs); its memory is the session state toolgate
//! keeps (`session-get`/`session-put`).

toolgate_guards::guest!("taint", toolgate_guards::taint::decide, session);
