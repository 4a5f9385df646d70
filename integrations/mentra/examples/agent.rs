//! A scripted mentra session through the demo workspace's toolgate chain.
//!
//! mentra's scripted provider plays the model: one turn asks for four tool
//! calls, the next reads their results. toolgate sits on both of mentra's
//! execution seams with the hooks of `examples/demo` (a wasm network guard,
//! Python and bash guards, a Claude Code-style hook). The `Bash` tool here
//! only pretends to run commands, so the example touches nothing.
//!
//! ```sh
//! cargo run --example agent
//! ```

use async_trait::async_trait;
use mentra::provider::ContentBlock;
use mentra::test::{MockRuntime, MockToolCall};
use mentra::tool::{ParallelToolContext, ToolDefinition, ToolExecutor, ToolResult, ToolSpec};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;
use toolgate::{Config, HookRunner};
use toolgate_mentra::ToolgateHooks;

/// A tool that says what it would have done.
struct Pretend(&'static str);

#[async_trait]
impl ToolDefinition for Pretend {
    fn descriptor(&self) -> ToolSpec {
        ToolSpec::builder(self.0)
            .description("pretends to run")
            .input_schema(json!({"type": "object"}))
            .build()
    }
}

#[async_trait]
impl ToolExecutor for Pretend {
    async fn execute(&self, _ctx: ParallelToolContext, input: Value) -> ToolResult {
        Ok(format!("(pretend) {} ran with {input}", self.0))
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let demo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/demo");
    // The demo's hooks, loaded as this program's own configuration (the
    // operator's): the example ships them. A harness loading a user's
    // workspace uses `Config::loader().workspace(..).trust(store)`, and the
    // workspace's commands run only once the user trusted them.
    let runner = HookRunner::builder()
        .config(Config::from_file(
            toolgate::Source::Global,
            &demo.join(".toolgate/hooks.json"),
            &demo,
        )?)
        .build();
    let hooks = ToolgateHooks::new(runner);
    let calls = [
        (
            "push",
            "Bash",
            json!({"command": "git push --force origin main"}),
        ),
        ("clean", "Bash", json!({"command": "rm -rf build"})),
        ("fetch", "WebFetch", json!({"url": "https://example.com"})),
        ("env", "Bash", json!({"command": "cat .env"})),
    ];
    let mock = MockRuntime::builder()
        .with_pre_hook(Arc::clone(&hooks))
        .with_post_hook(Arc::clone(&hooks))
        .tool_calls(
            calls
                .iter()
                .map(|(id, tool, input)| MockToolCall::new(*tool, input.clone()).with_id(*id)),
        )
        .text("done")
        .build()?;
    mock.runtime().register_tool(Pretend("Bash"));
    mock.runtime().register_tool(Pretend("WebFetch"));
    let mut agent = mock.runtime().spawn("demo-agent", mock.model())?;
    agent
        .send(vec![ContentBlock::text("tidy up and push")])
        .await?;

    println!("What the model was shown for each call:");
    let requests = mock.recorded_requests().await;
    for (id, tool, input) in &calls {
        let shown = requests
            .last()
            .into_iter()
            .flat_map(|r| r.messages.iter())
            .flat_map(|m| m.content.iter())
            .find_map(|b| match b {
                ContentBlock::ToolResult {
                    tool_use_id,
                    content,
                    is_error,
                } if tool_use_id == id => Some((content.to_display_string(), *is_error)),
                _ => None,
            });
        let (text, is_error) = shown.unwrap_or_else(|| ("(nothing)".into(), false));
        println!(
            "\n  {tool} {input}\n  {} {}",
            if is_error { "✗" } else { "✓" },
            text.replace('\n', "\n    ")
        );
    }
    println!("\ntoolgate's decisions:");
    for (id, outcome) in hooks.outcomes() {
        println!(
            "  {id:6} {:13} {:8} by {}",
            outcome.event.as_str(),
            outcome.decision.name(),
            outcome.decided_by.as_deref().unwrap_or("-")
        );
    }
    Ok(())
}
