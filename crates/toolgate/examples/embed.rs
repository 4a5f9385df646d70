//! Embedding toolgate in a Rust agent loop.
//!
//! The host registers an in-process interceptor that holds state only the
//! host has — the value of an API key it must never show the model — beside
//! the hooks configured in `examples/demo/.toolgate/hooks.json` (subprocess
//! guards that deny force-pushes, rewrite `rm -rf`, and trim long output).
//! A scripted "model" then makes tool calls; each goes through
//! `HookRunner::call`, which runs the pre chain, the real tool (a shell in a
//! scratch directory), and the post chain.
//!
//! Run it with `cargo run --example embed`.

use serde_json::{Value, json};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use toolgate::{
    BoxError, Config, HookRequest, HookRunner, Interceptor, Request, Source, ToolResult, Verdict,
};

/// Redacts a secret the host owns from every tool output.
struct RedactSecret {
    secret: String,
    redactions: AtomicUsize,
}

#[async_trait::async_trait]
impl Interceptor for RedactSecret {
    async fn post_tool_use(&self, request: &HookRequest<'_>) -> Result<Verdict, BoxError> {
        let Some(result) = request.result else {
            return Ok(Verdict::allow());
        };
        let text = result.output.to_string();
        if !text.contains(&self.secret) {
            return Ok(Verdict::allow());
        }
        self.redactions.fetch_add(1, Ordering::Relaxed);
        let redacted: Value = serde_json::from_str(&text.replace(&self.secret, "[REDACTED]"))?;
        Ok(Verdict::replace(ToolResult {
            output: redacted,
            is_error: result.is_error,
        })
        .with_context("A secret in this output was redacted by the host."))
    }
}

/// The tool: a real shell, confined to a scratch directory, with the secret in
/// its environment (as a careless tool would have it).
async fn shell(input: Value, scratch: &Path, secret: &str) -> ToolResult {
    let command = input["command"].as_str().unwrap_or_default().to_owned();
    let output = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(&command)
        .current_dir(scratch)
        .env("DEMO_API_KEY", secret)
        .output()
        .await;
    match output {
        Ok(out) => {
            let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
            text.push_str(&String::from_utf8_lossy(&out.stderr));
            ToolResult {
                output: json!(text),
                is_error: !out.status.success(),
            }
        }
        Err(e) => ToolResult::error(format!("could not run the shell: {e}")),
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let secret = "sk-demo-4f9a1c77e2".to_owned();
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/demo");
    let scratch = tempfile::tempdir()?;
    std::fs::create_dir_all(scratch.path().join("build"))?;

    let runner = HookRunner::builder()
        .interceptor(
            "redact-secret",
            RedactSecret {
                secret: secret.clone(),
                redactions: AtomicUsize::new(0),
            },
        )
        // The demo's hooks, loaded as this program's own configuration (the
        // operator's, `Source::Global`): the example ships them, so it is
        // their author. A harness loading *a user's workspace* uses
        // `Config::loader().workspace(..).trust(store)` instead, and the
        // workspace's commands then run only once the user trusted them.
        .config(Config::from_file(
            Source::Global,
            &demo.join(".toolgate/hooks.json"),
            &demo,
        )?)
        .build();

    println!("chain, in order:");
    for p in runner.participants() {
        println!("  {:<16} {:<11} {}", p.name, p.binding, p.source);
    }

    // What a model might ask for, in order.
    let calls = [
        json!({"command": "echo hello from the agent"}),
        json!({"command": "git push --force origin main"}),
        json!({"command": "rm -rf build"}),
        json!({"command": "echo \"key is $DEMO_API_KEY\""}),
        json!({"command": "seq 1 100"}),
    ];
    for (i, input) in calls.into_iter().enumerate() {
        let mut request = Request::pre("shell", input.clone());
        request.session_id = Some("embed-demo".into());
        request.tool_call_id = Some(format!("call-{}", i + 1));
        let scratch = scratch.path().to_owned();
        let key = secret.clone();
        let call = runner
            .call(request, |input| async move {
                shell(input, &scratch, &key).await
            })
            .await;

        println!("\n#{} model asked: {}", i + 1, input["command"]);
        println!(
            "   pre: {}{}",
            call.pre.decision.name(),
            call.pre
                .decided_by
                .as_ref()
                .map(|h| format!(" (by {h})"))
                .unwrap_or_default()
        );
        if let toolgate::Decision::Modify { input } = &call.pre.decision {
            println!("   tool ran with: {}", input["command"]);
        }
        println!("   tool ran: {}", call.tool_ran);
        let shown = call
            .shown
            .output
            .as_str()
            .map(str::to_owned)
            .unwrap_or_else(|| call.shown.output.to_string());
        let shown = shown.trim_end();
        let preview: String = shown
            .chars()
            .take(100)
            .collect::<String>()
            .replace('\n', " ⏎ ");
        println!(
            "   model sees{}: {preview}{}",
            if call.shown.is_error { " (error)" } else { "" },
            if shown.chars().count() > 100 {
                "…"
            } else {
                ""
            }
        );
        if let Some(context) = call.context() {
            println!("   context: {context}");
        }
        let runs: Vec<String> = call
            .pre
            .runs
            .iter()
            .chain(call.post.iter().flat_map(|p| &p.runs))
            .map(|r| format!("{}:{:?}:{}µs", r.name, r.step, r.duration.as_micros()))
            .collect();
        println!("   runs: {}", runs.join(", "));
        assert!(
            !shown.contains(&secret),
            "the secret never reaches the model"
        );
    }
    Ok(())
}
