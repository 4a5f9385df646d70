//! The chain as an embedder who runs no components builds it: `toolgate`
//! without features, so no wasmtime (84 crates, where the command-line tool
//! builds 326). Two bindings guard a scripted agent's calls: an in-process
//! interceptor that knows something only the host knows, and a subprocess
//! hook speaking wire v1 (here a line of `sh`; any language works).
//!
//! Run it with `cargo run -p toolgate --example guard`. `.ci/run` runs it
//! first on a clean clone, so that step's time is this build, cold.

use serde_json::{Value, json};
use std::path::Path;
use toolgate::config::{BindingOptions, HookDef};
use toolgate::{BoxError, Config, HookRequest, HookRunner, Interceptor, Request, Verdict};

/// Denies reading the host's own key file, whose path only the host knows.
struct HostKey(&'static str);

#[async_trait::async_trait]
impl Interceptor for HostKey {
    async fn pre_tool_use(&self, request: &HookRequest<'_>) -> Result<Verdict, BoxError> {
        Ok(match request.input["path"].as_str() {
            Some(path) if path == self.0 => {
                Verdict::deny("the host's key is not the agent's to read")
            }
            _ => Verdict::allow(),
        })
    }
}

/// A wire v1 hook: one JSON request on stdin, one answer on stdout.
const NO_FORCE_PUSH: &str = r#"req=$(cat)
case "$req" in
  *'push --force'*|*'push -f'*) echo '{"decision":"deny","reason":"force-pushing rewrites history others share"}' ;;
  *) echo '{"decision":"allow"}' ;;
esac"#;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let config = Config::from_hooks(
        [HookDef::command("no-force-push", ["sh", "-c", NO_FORCE_PUSH]).tools(["shell"])],
        Path::new("."),
        BindingOptions::new(),
    )?;
    let runner = HookRunner::builder()
        .interceptor("host-key", HostKey("/etc/agent/host.key"))
        .config(config)
        .build();

    let calls: [(&str, Value); 3] = [
        ("shell", json!({"command": "git status"})),
        ("shell", json!({"command": "git push --force origin main"})),
        ("read", json!({"path": "/etc/agent/host.key"})),
    ];
    let mut denied = 0;
    for (tool, input) in calls {
        let outcome = runner
            .pre_tool_use(&Request::pre(tool, input.clone()))
            .await;
        let by = outcome.decided_by.as_deref().unwrap_or("everyone allowed");
        println!("{tool} {input}: {} ({by})", outcome.decision.name());
        if let toolgate::Decision::Deny { reason } = &outcome.decision {
            println!("  the model reads: {reason}");
            denied += 1;
        }
    }
    // The example is CI's proof that this build guards: both guards spoke.
    if denied != 2 {
        return Err(format!("expected 2 denials, saw {denied}").into());
    }
    Ok(())
}
