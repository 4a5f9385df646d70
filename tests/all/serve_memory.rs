//! What `toolgate serve` holds in memory: a component is compiled in a
//! child process into the compile cache and the server maps the entry, so
//! the compiler's working memory never becomes the server's.

use crate::serve::Server;
use crate::support::{Fixture, run_with_stdin};
use serde_json::json;

/// The server's anonymous resident memory (heap, instance memories), KiB.
fn anonymous_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("RssAnon:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap()
}

/// The Python guest, compiled cold: in the server it left hundreds of MiB
/// of compiler heap behind (one measurement with six guests: 835 MiB
/// anonymous); compiled by the child and mapped from the cache, the
/// server's anonymous memory stays small, and the call is answered by the
/// guest as before.
#[test]
fn a_cold_compile_happens_outside_the_server_and_its_memory_never_becomes_the_servers() {
    let fx = Fixture::new();
    let guest = crate::guest_examples::built("python-size-guard");
    fx.global_hooks(json!([{"name": "size", "wasm": guest, "tools": ["Edit"],
                            "config": {"max_input_bytes": 20}}]));
    let cache = tempfile::tempdir().unwrap();
    let server = Server::start_with(|cmd| {
        cmd.env("TOOLGATE_CONFIG_DIR", fx.global())
            .env("TOOLGATE_CACHE_DIR", cache.path());
    });
    let before = anonymous_kib(server.pid());
    let request = json!({"event": "pre_tool_use", "tool": "Edit",
                         "input": {"file_path": "a.md", "content": "far more than the twenty bytes allowed"}});
    let out = run_with_stdin(
        server
            .client()
            .args(["check", "--workspace"])
            .arg(fx.workspace())
            .env("TOOLGATE_CONFIG_DIR", fx.global())
            .env("TOOLGATE_CACHE_DIR", cache.path()),
        &request.to_string(),
    );
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        crate::support::stderr(&out)
    );
    let answer: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["decided_by"], "size", "{answer}");
    let cwasm = std::fs::read_dir(cache.path())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "cwasm"))
        .count();
    assert_eq!(cwasm, 1, "the compile went into the cache");
    let grew = anonymous_kib(server.pid()).saturating_sub(before);
    assert!(
        grew < 64 * 1024,
        "the server's anonymous memory grew {} MiB loading one guest",
        grew / 1024
    );
}
