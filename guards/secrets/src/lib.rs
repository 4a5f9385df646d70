//! `toolgate:secrets`: credentials redacted from what the model is shown,
//! and refused in what it writes. Its rules are `toolgate-guards`
//! (guards/lib/src/secrets.rs).

toolgate_guards::guest!("secrets", toolgate_guards::secrets::decide);
