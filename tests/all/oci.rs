//! Components from an OCI registry, against a real one: Debian's
//! `docker-registry` (the CNCF distribution registry) started per test on
//! 127.0.0.1 with its storage in a temporary directory, and the real
//! `toolgate push` / `toolgate check` / `toolgate hooks`. What a real
//! registry refuses to store (a huge or malformed manifest) is served by a
//! hostile HTTP server in the test.

use crate::support::*;
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const CALL: &str = r#"{"event":"pre_tool_use","tool":"shell","input":{"command":"ls"}}"#;

/// A `docker-registry` on 127.0.0.1, killed when dropped.
pub(crate) struct Registry {
    child: Option<Child>,
    port: u16,
    storage: tempfile::TempDir,
}

impl Registry {
    pub(crate) fn start() -> Registry {
        Registry::start_with("")
    }

    /// A registry whose `user` must give `password` for every request
    /// (the registry's htpasswd authentication, HTTP Basic; the file made
    /// by Apache's `htpasswd -B`, as the registry's own docs do).
    fn with_password(user: &str, password: &str) -> Registry {
        let out = Command::new("htpasswd")
            .args(["-Bbn", user, password])
            .output()
            .expect("htpasswd runs (Debian package apache2-utils; test.sh installs it)");
        assert!(out.status.success());
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), &out.stdout).unwrap();
        let (_, path) = file.keep().unwrap();
        Registry::start_with(&format!(
            "auth:\n  htpasswd:\n    realm: toolgate-test\n    path: {}\n",
            path.display()
        ))
    }

    /// A registry with `extra` appended to its config.
    fn start_with(extra: &str) -> Registry {
        let storage = tempfile::tempdir().unwrap();
        let port = free_port();
        let config = storage.path().join("config.yml");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {}\n\
                 http:\n  addr: 127.0.0.1:{port}\n{extra}",
                storage.path().join("data").display()
            ),
        )
        .unwrap();
        let child = Command::new("docker-registry")
            .arg("serve")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("docker-registry runs (Debian package docker-registry; test.sh installs it)");
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "the registry did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Registry {
            child: Some(child),
            port,
            storage,
        }
    }

    pub(crate) fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// The file the registry serves blob `digest` (`sha256:<hex>`) from.
    fn blob(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").unwrap();
        self.storage
            .path()
            .join("data/docker/registry/v2/blobs/sha256")
            .join(&hex[..2])
            .join(hex)
            .join("data")
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `toolgate push <guest> <reference> --json`, which must succeed.
pub(crate) fn push(guest: &str, reference: &str) -> Value {
    let out = succeeded(
        toolgate()
            .arg("push")
            .arg(crate::guests::path(guest))
            .arg(reference)
            .arg("--json"),
    );
    stdout_json(&out)
}

/// A private cache directory, as `TOOLGATE_CACHE_DIR` must be.
fn cache() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

fn hooks(wasm: &str) -> String {
    json!({"schema": 1, "hooks": [{"name": "g", "wasm": wasm}]}).to_string()
}

/// `toolgate check` of one call with `global` as the global hooks.json (and
/// `workspace`'s, when given), against `cache`.
fn check(
    fx: &Fixture,
    cache: &Path,
    global: Option<&str>,
    workspace: Option<&str>,
) -> std::process::Output {
    let _ = std::fs::remove_file(fx.global().join("hooks.json"));
    let _ = std::fs::remove_file(fx.workspace().join(".toolgate/hooks.json"));
    if let Some(text) = global {
        std::fs::write(fx.global().join("hooks.json"), text).unwrap();
    }
    if let Some(text) = workspace {
        std::fs::write(fx.workspace().join(".toolgate/hooks.json"), text).unwrap();
    }
    run_with_stdin(
        toolgate()
            .args(["check", "--workspace"])
            .arg(fx.workspace())
            .env("TOOLGATE_CONFIG_DIR", fx.global())
            .env("TOOLGATE_CACHE_DIR", cache),
        CALL,
    )
}

fn hooks_json(fx: &Fixture, cache: &Path) -> Value {
    stdout_json(&succeeded(
        toolgate()
            .args(["hooks", "--json", "--workspace"])
            .arg(fx.workspace())
            .env("TOOLGATE_CONFIG_DIR", fx.global())
            .env("TOOLGATE_CACHE_DIR", cache),
    ))
}

#[test]
fn a_pushed_component_is_pulled_verified_cached_and_decides_the_call() {
    let registry = Registry::start();
    let deny = push(
        "deny",
        &format!("oci://{}/team/guard:deny", registry.address()),
    );
    let allow = push(
        "allow",
        &format!("oci://{}/team/guard:allow", registry.address()),
    );
    let digest = deny["digest"].as_str().unwrap();
    let pinned = deny["pinned"].as_str().unwrap();
    assert_eq!(
        pinned,
        format!("oci://{}/team/guard:deny@{digest}", registry.address())
    );
    assert_eq!(deny["layers"][0][0], "application/wasm");
    let fx = Fixture::new();
    let cache = cache();
    // A workspace may name a pinned component (no trust needed: it can only decide).
    let out = check(&fx, cache.path(), None, Some(&hooks(pinned)));
    assert_eq!(
        out.status.code(),
        Some(2),
        "the pulled deny guest decides: {}",
        stderr(&out)
    );
    let out = check(
        &fx,
        cache.path(),
        None,
        Some(&hooks(allow["pinned"].as_str().unwrap())),
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "the pulled allow guest decides: {}",
        stderr(&out)
    );
    // Stored content-addressed, private.
    let stored = cache
        .path()
        .join("oci/sha256")
        .join(digest.strip_prefix("sha256:").unwrap())
        .join("component.wasm");
    assert_eq!(
        std::fs::read(&stored).unwrap(),
        std::fs::read(crate::guests::path("deny")).unwrap()
    );
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&stored).unwrap().permissions().mode() & 0o077,
        0
    );
    // Pushing the same component again gives the same digest.
    let again = push(
        "deny",
        &format!("oci://{}/team/other:v1", registry.address()),
    );
    assert_eq!(again["digest"], deny["digest"]);
}

#[test]
fn registry_down_a_cached_component_runs_offline_and_an_uncached_one_fails_closed() {
    let mut registry = Registry::start();
    let pinned = push("deny", &format!("oci://{}/guard:v1", registry.address()))["pinned"]
        .as_str()
        .unwrap()
        .to_owned();
    let fx = Fixture::new();
    let cache = cache();
    let config = hooks(&pinned);
    assert_eq!(
        check(&fx, cache.path(), Some(&config), None).status.code(),
        Some(2)
    );
    registry.stop();
    let out = check(&fx, cache.path(), Some(&config), None);
    assert_eq!(
        out.status.code(),
        Some(2),
        "cached: runs offline: {}",
        stderr(&out)
    );
    let empty = self::cache();
    let out = check(&fx, empty.path(), Some(&config), None);
    assert_eq!(
        out.status.code(),
        Some(1),
        "uncached: cannot evaluate (a denial)"
    );
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "registry {} could not be reached",
            registry.address()
        )),
        "{err}"
    );
    // An agent's call is blocked.
    std::fs::write(fx.global().join("hooks.json"), &config).unwrap();
    let out = run_with_stdin(
        toolgate()
            .arg("claude-code")
            .env("CLAUDE_PROJECT_DIR", fx.workspace())
            .env("TOOLGATE_CONFIG_DIR", fx.global())
            .env("TOOLGATE_CACHE_DIR", empty.path()),
        &json!({"hook_event_name": "PreToolUse", "tool_name": "Bash",
            "tool_input": {"command": "ls"}, "session_id": "s", "cwd": fx.workspace()})
        .to_string(),
    );
    assert_eq!(out.status.code(), Some(2), "blocked: {}", stderr(&out));
    assert!(
        stderr(&out).contains("could not be reached"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_digest_the_registry_does_not_serve_is_refused_wrong_pin_or_tampered_storage() {
    let registry = Registry::start();
    let pushed = push("deny", &format!("oci://{}/guard:v1", registry.address()));
    let other = push(
        "allow",
        &format!("oci://{}/elsewhere:v1", registry.address()),
    );
    let fx = Fixture::new();
    // A pin the repository does not hold.
    let wrong = format!(
        "oci://{}/guard:v1@{}",
        registry.address(),
        other["digest"].as_str().unwrap()
    );
    let out = check(&fx, cache().path(), Some(&hooks(&wrong)), None);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("404"), "{}", stderr(&out));
    // The component's blob altered on the registry's disk: same size, one byte.
    let manifest_path = registry.blob(pushed["digest"].as_str().unwrap());
    let manifest: Value = serde_json::from_slice(&std::fs::read(&manifest_path).unwrap()).unwrap();
    let layer = registry.blob(manifest["layers"][0]["digest"].as_str().unwrap());
    let mut bytes = std::fs::read(&layer).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x01;
    std::fs::write(&layer, &bytes).unwrap();
    let pinned = pushed["pinned"].as_str().unwrap();
    let out = check(&fx, cache().path(), Some(&hooks(pinned)), None);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    // Caught as it streams (oci-client checks too), else by toolgate's own check.
    let err = stderr(&out);
    assert!(
        err.contains("the application/wasm layer could not be read whole: Invalid digest")
            || err.contains("digest mismatch: the application/wasm layer served"),
        "{err}"
    );
    assert!(!err.contains("could not be reached"), "{err}");
    // The manifest itself altered on disk (one digit of the config's digest).
    let mut text = std::fs::read_to_string(&manifest_path).unwrap();
    let at = text.find("sha256:").unwrap() + 7;
    let flipped = if &text[at..at + 1] == "0" { "1" } else { "0" };
    text.replace_range(at..at + 1, flipped);
    std::fs::write(&manifest_path, text).unwrap();
    let out = check(&fx, cache().path(), Some(&hooks(pinned)), None);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("digest mismatch: the manifest served"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_tag_is_refused_in_a_workspace_and_followed_in_the_global_config_offline_too() {
    let mut registry = Registry::start();
    let pushed = push("deny", &format!("oci://{}/guard:v1", registry.address()));
    let tag = format!("oci://{}/guard:v1", registry.address());
    let fx = Fixture::new();
    let cache = cache();
    let out = check(&fx, cache.path(), None, Some(&hooks(&tag)));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("must pin a digest"),
        "{}",
        stderr(&out)
    );
    let out = check(&fx, cache.path(), Some(&hooks(&tag)), None);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    // `toolgate hooks` says what the tag resolved to.
    let listed = hooks_json(&fx, cache.path());
    let hook = &listed["hooks"][0];
    assert_eq!(hook["oci"]["digest"], pushed["digest"], "{listed:#}");
    assert_eq!(hook["oci"]["origin"], "registry");
    let text = succeeded(
        toolgate()
            .args(["hooks", "--workspace"])
            .arg(fx.workspace())
            .env("TOOLGATE_CONFIG_DIR", fx.global())
            .env("TOOLGATE_CACHE_DIR", cache.path()),
    );
    let text = String::from_utf8_lossy(&text.stdout).into_owned();
    assert!(text.contains(pushed["digest"].as_str().unwrap()), "{text}");
    // The registry gone: the remembered digest runs, with a warning.
    registry.stop();
    let out = check(&fx, cache.path(), Some(&hooks(&tag)), None);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let listed = hooks_json(&fx, cache.path());
    let hook = &listed["hooks"][0];
    assert_eq!(hook["oci"]["origin"], "remembered");
    let warning = hook["oci"]["warning"].as_str().unwrap();
    assert!(warning.contains("could not be reached"), "{warning}");
    assert!(
        warning.contains(pushed["digest"].as_str().unwrap()),
        "{warning}"
    );
}

/// A hostile registry: answers `/v2/` and serves `manifest` (status line,
/// headers and a body written by `body`) for any manifest request; returns
/// its address and the count of body bytes it managed to send.
fn hostile(
    head: &'static str,
    body: fn(&mut std::net::TcpStream) -> u64,
) -> (String, std::sync::Arc<std::sync::atomic::AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let sent = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counter = sent.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut request = [0u8; 4096];
            let n = stream.read(&mut request).unwrap_or(0);
            let line = String::from_utf8_lossy(&request[..n]).into_owned();
            if line.contains("/manifests/") {
                let _ = stream.write_all(head.as_bytes());
                counter.fetch_add(body(&mut stream), std::sync::atomic::Ordering::Relaxed);
            } else {
                let _ = stream.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
                );
            }
        }
    });
    (address, sent)
}

/// Writes `{"a":"aaaa…` until the reader hangs up (at most 1 GiB).
fn endless(stream: &mut std::net::TcpStream) -> u64 {
    let chunk = vec![b'a'; 64 << 10];
    let mut sent = 0u64;
    while sent < 1 << 30 && stream.write_all(&chunk).is_ok() {
        sent += chunk.len() as u64;
    }
    sent
}

#[test]
fn a_huge_or_malformed_manifest_is_refused_without_reading_it_whole() {
    let fx = Fixture::new();
    // Declared huge: refused from the header, nothing read.
    let (declared, sent_declared) = hostile(
        "HTTP/1.1 200 OK\r\nContent-Type: application/vnd.oci.image.manifest.v1+json\r\n\
         Content-Length: 1073741824\r\n\r\n",
        endless,
    );
    // Undeclared (read until the connection closes): reading stops at the bound.
    let (undeclared, sent_undeclared) = hostile(
        "HTTP/1.1 200 OK\r\nContent-Type: application/vnd.oci.image.manifest.v1+json\r\n\
         Connection: close\r\n\r\n",
        endless,
    );
    let (malformed, _) = hostile(
        "HTTP/1.1 200 OK\r\nContent-Type: application/vnd.oci.image.manifest.v1+json\r\n\
         Content-Length: 33\r\nConnection: close\r\n\r\n",
        |s| {
            let _ = s.write_all(br#"{"schemaVersion": 2, "config": 5}"#);
            33
        },
    );
    for (address, says) in [
        (&declared, "the manifest is larger than 64 KiB (not read)"),
        (
            &undeclared,
            "the manifest is larger than 64 KiB (reading stopped there)",
        ),
        (&malformed, "malformed manifest"),
    ] {
        let started = Instant::now();
        let out = check(
            &fx,
            cache().path(),
            Some(&hooks(&format!("oci://{address}/guard:v1"))),
            None,
        );
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        assert!(stderr(&out).contains(says), "{}", stderr(&out));
        assert!(
            stderr(&out).contains(&format!("registry {address}")),
            "{}",
            stderr(&out)
        );
        assert!(started.elapsed() < Duration::from_secs(30));
    }
    // Socket buffers take some megabytes; a reader that took it all would take 1 GiB.
    std::thread::sleep(Duration::from_millis(200));
    for sent in [sent_declared, sent_undeclared] {
        let sent = sent.load(std::sync::atomic::Ordering::Relaxed);
        assert!(
            sent < 64 << 20,
            "the client read {sent} bytes of a huge manifest"
        );
    }
}

#[test]
fn a_call_never_asks_the_registry_for_a_tag_it_has_resolved_and_toolgate_hooks_follows_it() {
    // Nothing on a tool call's path waits on the network: once a tag has
    // been resolved on this machine, `toolgate check` (a process per call)
    // runs that digest without a request, even after the tag moved;
    // `toolgate hooks` (the rollout's pre-fetch) follows the tag, and the
    // next call runs the new digest.
    let registry = Registry::start();
    let tag = format!("oci://{}/moving:v1", registry.address());
    let first = push("deny", &tag);
    let fx = Fixture::new();
    let cache = cache();
    let out = check(&fx, cache.path(), Some(&hooks(&tag)), None);
    assert_eq!(
        out.status.code(),
        Some(2),
        "first resolve: {}",
        stderr(&out)
    );
    let moved = push("allow", &tag);
    assert_ne!(moved["digest"], first["digest"]);
    let out = check(&fx, cache.path(), Some(&hooks(&tag)), None);
    assert_eq!(
        out.status.code(),
        Some(2),
        "a call runs the digest the tag last resolved to: {}",
        stderr(&out)
    );
    let listed = hooks_json(&fx, cache.path());
    assert_eq!(
        listed["hooks"][0]["oci"]["digest"], moved["digest"],
        "{listed:#}"
    );
    let out = check(&fx, cache.path(), Some(&hooks(&tag)), None);
    assert_eq!(
        out.status.code(),
        Some(0),
        "after `toolgate hooks` followed the tag: {}",
        stderr(&out)
    );
}

#[test]
fn a_pushed_signature_travels_with_the_component_and_is_verified_before_it_runs() {
    use crate::signing::{keys, sign};
    let registry = Registry::start();
    let dir = tempfile::tempdir().unwrap();
    let signed = dir.path().join("guard.wasm");
    std::fs::copy(crate::guests::path("deny"), &signed).unwrap();
    sign(&keys().a, &signed, "name=g version=2");
    let reference = format!("oci://{}/signed:v2", registry.address());
    let pushed = stdout_json(&succeeded(
        toolgate()
            .arg("push")
            .arg(&signed)
            .arg(&reference)
            .arg("--json"),
    ));
    let unsigned = push("deny", &format!("oci://{}/unsigned:v1", registry.address()));
    let required = |wasm: &str| {
        json!({
            "schema": 1,
            "signing": {"keys": [keys().a.public], "required": true},
            "hooks": [{"name": "g", "wasm": wasm, "signed": {"min_version": 2}}],
        })
        .to_string()
    };
    let fx = Fixture::new();
    let cache = cache();
    let pinned = pushed["pinned"].as_str().unwrap();
    let out = check(&fx, cache.path(), Some(&required(pinned)), None);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let listed = hooks_json(&fx, cache.path());
    let verified = &listed["hooks"][0]["component"]["signature"];
    assert_eq!(verified["key_id"], keys().a.id.as_str(), "{listed:#}");
    assert_eq!(verified["version"], 2, "{listed:#}");
    // Pulled without a signature layer: refused, not run.
    let out = check(
        &fx,
        cache.path(),
        Some(&required(unsigned["pinned"].as_str().unwrap())),
        None,
    );
    assert_ne!(out.status.code(), Some(0));
    assert_ne!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("signature refused") && stderr(&out).contains("no signature"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_managed_layers_allowed_registries_refuse_any_other_registry() {
    // As root, `$TOOLGATE_MANAGED_DIR` is honoured (tests/all/managed.rs
    // shows it is not for anyone else).
    let registry = Registry::start();
    let pushed = push("deny", &format!("oci://{}/guard:v1", registry.address()));
    let pinned = pushed["pinned"].as_str().unwrap();
    let fx = Fixture::new();
    let cache = cache();
    let run = |allowed: &[&str]| {
        let managed = crate::signing::managed_dir(json!({
            "schema": 1,
            "allowed_registries": allowed,
        }));
        std::fs::write(fx.global().join("hooks.json"), hooks(pinned)).unwrap();
        run_with_stdin(
            toolgate()
                .args(["check", "--workspace"])
                .arg(fx.workspace())
                .env("TOOLGATE_CONFIG_DIR", fx.global())
                .env("TOOLGATE_CACHE_DIR", cache.path())
                .env("TOOLGATE_MANAGED_DIR", managed.path()),
            CALL,
        )
    };
    let out = run(&["registry.example.com"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("not in the managed config's allowed_registries"),
        "{}",
        stderr(&out)
    );
    let out = run(&["registry.example.com", &registry.address()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

/// A front for the registry at `upstream` that authenticates as ghcr.io,
/// Docker Hub and most hosted registries do, even for anonymous pulls:
/// every `/v2/` request without `Authorization: Bearer <token>` is a 401
/// whose challenge names a token endpoint, which hands a token to anyone;
/// requests with it are passed on. Returns its address and how many
/// requests it turned away for want of the token.
fn token_gate(upstream: u16) -> (String, std::sync::Arc<std::sync::atomic::AtomicU64>) {
    use std::io::BufRead;
    const TOKEN: &str = "anonymous-pull-token";
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let turned_away = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let (realm, counter) = (format!("http://{address}/token"), turned_away.clone());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut client) = stream else { continue };
            let (realm, counter) = (realm.clone(), counter.clone());
            std::thread::spawn(move || {
                let mut reader = std::io::BufReader::new(client.try_clone().unwrap());
                let mut head = Vec::new();
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    if line == "\r\n" {
                        break;
                    }
                    head.push(line);
                }
                let path = head[0].split(' ').nth(1).unwrap_or("").to_owned();
                let authorized = head.iter().any(|h| {
                    h.to_ascii_lowercase()
                        .starts_with(&format!("authorization: bearer {TOKEN}"))
                });
                if path.starts_with("/token") {
                    let body = format!(r#"{{"token":"{TOKEN}","access_token":"{TOKEN}"}}"#);
                    let _ = write!(
                        client,
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
                         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                } else if !authorized {
                    counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let _ = write!(
                        client,
                        "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer \
                         realm=\"{realm}\",service=\"gate\"\r\n\
                         Docker-Distribution-Api-Version: registry/2.0\r\n\
                         Content-Length: 0\r\nConnection: close\r\n\r\n"
                    );
                } else {
                    // GETs only (a pull): the head, minus the token and with
                    // the connection closed after one answer, then the answer.
                    let mut registry =
                        std::net::TcpStream::connect(("127.0.0.1", upstream)).unwrap();
                    let mut forwarded = head[0].clone();
                    for h in &head[1..] {
                        let lower = h.to_ascii_lowercase();
                        if !lower.starts_with("authorization:") && !lower.starts_with("connection:")
                        {
                            forwarded.push_str(h);
                        }
                    }
                    forwarded.push_str("Connection: close\r\n\r\n");
                    let _ = registry.write_all(forwarded.as_bytes());
                    let _ = std::io::copy(&mut registry, &mut client);
                }
            });
        }
    });
    (address, turned_away)
}

#[test]
fn a_registry_that_hands_out_tokens_for_anonymous_pulls_serves_manifest_and_layers() {
    let registry = Registry::start();
    let pushed = push(
        "deny",
        &format!("oci://{}/team/guard:v1", registry.address()),
    );
    let (gate, turned_away) = token_gate(registry.port);
    let digest = pushed["digest"].as_str().unwrap();
    let fx = Fixture::new();
    let cache = cache();
    let out = check(
        &fx,
        cache.path(),
        None,
        Some(&hooks(&format!("oci://{gate}/team/guard@{digest}"))),
    );
    assert_eq!(
        out.status.code(),
        Some(2),
        "pulled through the token gate, the deny guest decides: {}",
        stderr(&out)
    );
    // The token was asked for: the gate turned the first request away.
    assert!(turned_away.load(std::sync::atomic::Ordering::Relaxed) >= 1);
    assert!(
        cache
            .path()
            .join("oci/sha256")
            .join(digest.strip_prefix("sha256:").unwrap())
            .join("component.wasm")
            .is_file()
    );
}

#[test]
fn push_takes_credentials_from_the_environment_and_a_pull_stays_anonymous() {
    let registry = Registry::with_password("publisher", "s3cret-pass");
    let reference = format!("oci://{}/team/guard:v1", registry.address());
    let push_as = |credentials: Option<(&str, &str)>| {
        let mut cmd = toolgate();
        cmd.arg("push")
            .arg(crate::guests::path("deny"))
            .arg(&reference)
            .arg("--json");
        if let Some((user, password)) = credentials {
            cmd.env("TOOLGATE_REGISTRY_USER", user)
                .env("TOOLGATE_REGISTRY_PASSWORD", password);
        }
        cmd.output().unwrap()
    };
    for (credentials, what, says) in [
        (
            None,
            "anonymous",
            "the push was anonymous: set TOOLGATE_REGISTRY_USER and TOOLGATE_REGISTRY_PASSWORD",
        ),
        (
            Some(("publisher", "wrong")),
            "a wrong password",
            "the registry refused TOOLGATE_REGISTRY_USER / TOOLGATE_REGISTRY_PASSWORD",
        ),
    ] {
        let out = push_as(credentials);
        assert_eq!(
            out.status.code(),
            Some(1),
            "a push with {what} is refused: {}",
            stderr(&out)
        );
        assert!(
            stderr(&out).contains(&registry.address())
                && stderr(&out).contains("401")
                && stderr(&out).contains(says)
                && !stderr(&out).contains("s3cret-pass"),
            "{what}: {}",
            stderr(&out)
        );
    }
    let out = push_as(Some(("publisher", "s3cret-pass")));
    assert!(out.status.success(), "{}", stderr(&out));
    let pinned = stdout_json(&out)["pinned"].as_str().unwrap().to_owned();
    // toolgate pulls anonymously (a workspace names the registry, so given
    // credentials would go wherever it pointed): this registry refuses, and
    // the hook fails closed saying so.
    let fx = Fixture::new();
    let out = check(&fx, cache().path(), Some(&hooks(&pinned)), None);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("401") && stderr(&out).contains("toolgate pulls anonymously"),
        "{}",
        stderr(&out)
    );
}
