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
