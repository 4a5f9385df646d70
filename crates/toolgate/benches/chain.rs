//! `cargo bench`: the per-call scenarios of `toolgate bench`, under divan.
//!
//! `toolgate bench` is the report (interleaved rounds, ratios, the budget);
//! these are the same scenarios as divan benchmarks, for profiling one at a
//! time. The Rust guest example is benchmarked when built
//! (`guest-examples/build-all`); without it that benchmark says so and
//! measures nothing rather than pretending.

use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use toolgate::{BoxError, Config, HookRequest, HookRunner, Interceptor, Request, Verdict};

fn main() {
    divan::main();
}

struct Allow;
#[async_trait::async_trait]
impl Interceptor for Allow {
    async fn pre_tool_use(&self, _: &HookRequest<'_>) -> Result<Verdict, BoxError> {
        Ok(Verdict::allow())
    }
}

fn rt() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
    })
}

fn tmp() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("tempdir"))
        .path()
}

/// A runner over `hooks` as the operator's global config (a workspace may
/// only name files in its own tree; the guests live elsewhere).
fn runner(name: &str, hooks: serde_json::Value) -> HookRunner {
    let dir = tmp().join(name);
    std::fs::create_dir_all(&dir).expect("config dir");
    std::fs::write(
        dir.join("hooks.json"),
        json!({"schema": 1, "hooks": hooks}).to_string(),
    )
    .expect("hooks.json");
    HookRunner::builder()
        .config(Config::load(Some(&dir), None).expect("config"))
        .build()
}

fn bench_runner(bencher: divan::Bencher<'_, '_>, runner: HookRunner) {
    let request = Request::pre("shell", json!({"command": "git push origin main"}));
    bencher.bench_local(|| rt().block_on(runner.pre_tool_use(&request)));
}

#[divan::bench]
fn in_process_interceptor(bencher: divan::Bencher<'_, '_>) {
    bench_runner(
        bencher,
        HookRunner::builder().interceptor("allow", Allow).build(),
    );
}

#[divan::bench]
fn wasm_reference_guest(bencher: divan::Bencher<'_, '_>) {
    let path = tmp().join("reference.wasm");
    std::fs::write(&path, toolgate::wasm::reference_guest()).expect("write guest");
    bench_runner(bencher, runner("ref", json!([{"name": "g", "wasm": path}])));
}

fn rust_guest() -> Option<PathBuf> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../guest-examples/rust-deny-force-push/out/rust-deny-force-push.wasm");
    if path.exists() {
        Some(path)
    } else {
        eprintln!("rust guest not built (run guest-examples/build-all): not measured");
        None
    }
}

#[divan::bench]
fn wasm_rust_guest(bencher: divan::Bencher<'_, '_>) {
    if let Some(path) = rust_guest() {
        bench_runner(
            bencher,
            runner("rust", json!([{"name": "g", "wasm": path}])),
        );
    }
}

#[divan::bench]
fn wasm_chain_of_three(bencher: divan::Bencher<'_, '_>) {
    if let Some(path) = rust_guest() {
        let hooks = json!([{"name": "a", "wasm": &path}, {"name": "b", "wasm": &path}, {"name": "c", "wasm": &path}]);
        bench_runner(bencher, runner("three", hooks));
    }
}

#[divan::bench(sample_count = 20, sample_size = 5)]
fn subprocess_bash(bencher: divan::Bencher<'_, '_>) {
    let script = tmp().join("allow.sh");
    std::fs::write(
        &script,
        "#!/usr/bin/env bash\nIFS= read -r -d '' _ || true\necho '{\"decision\":\"allow\"}'\n",
    )
    .expect("script");
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(&script)
        .status()
        .expect("chmod");
    bench_runner(
        bencher,
        runner("bash", json!([{"name": "p", "command": [script]}])),
    );
}

/// The cost of session state, side by side: the same call to the same
/// allow-all interceptor without a session id (no store consulted), in a
/// session kept in memory (the server's and an embedder's store), and in
/// a session kept in files (a one-shot run's), then the standard taint
/// guard, which reads its state on every call, in memory and in files.
fn in_session(
    bencher: divan::Bencher<'_, '_>,
    runner: HookRunner,
    command: &str,
    session: Option<&str>,
) {
    let mut request = Request::pre("Bash", json!({"command": command}));
    request.session_id = session.map(str::to_owned);
    request.cwd = Some("/home/dev/project".into());
    bencher.bench_local(|| rt().block_on(runner.pre_tool_use(&request)));
}

fn file_store(name: &str) -> std::sync::Arc<dyn toolgate::sessions::SessionStore> {
    std::sync::Arc::new(toolgate::sessions::FileStore::new(
        tmp().join("state").join(name),
    ))
}

#[divan::bench(args = ["none", "memory", "files"])]
fn session_state_interceptor(bencher: divan::Bencher<'_, '_>, store: &str) {
    let builder = HookRunner::builder().interceptor("allow", Allow);
    let (builder, session) = match store {
        "none" => (builder, None),
        "memory" => (builder, Some("bench")),
        _ => (
            builder.session_store(file_store("interceptor")),
            Some("bench"),
        ),
    };
    in_session(bencher, builder.build(), "git status", session);
}

fn taint_runner(store: &str) -> HookRunner {
    let dir = tmp().join(format!("taint-{store}"));
    std::fs::create_dir_all(&dir).expect("config dir");
    std::fs::write(
        dir.join("hooks.json"),
        json!({"schema": 1, "hooks": [{"name": "taint", "use": "toolgate:taint"}]}).to_string(),
    )
    .expect("hooks.json");
    let builder = HookRunner::builder().config(Config::load(Some(&dir), None).expect("config"));
    match store {
        "memory" => builder,
        _ => builder.session_store(file_store("taint")),
    }
    .build()
}

/// The taint guard on a network call in a session that has read nothing
/// (the common case: it reads its state, finds nothing, allows).
#[divan::bench(args = ["memory", "files"])]
fn standard_taint_guard(bencher: divan::Bencher<'_, '_>, store: &str) {
    in_session(
        bencher,
        taint_runner(store),
        "curl -fsS https://docs.rs/serde",
        Some("clean"),
    );
}
