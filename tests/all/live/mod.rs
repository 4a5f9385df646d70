//! Live: the real agent CLIs (pinned in tests/agents/versions.env, installed
//! from npm by tests/agents/install.sh), each with `toolgate <agent>` as its
//! hook, against a mock of its model API on 127.0.0.1 (`mock_model`). One
//! module per agent; what they observe is recorded in the conformance table
//! (`conformance`), which the README's table is generated from.

mod claude;
mod codex;
pub(crate) mod conformance;
mod copilot;
mod gemini;
mod opencode;
mod qwen;

use crate::support::*;
use serde_json::{Value, json};
use std::path::PathBuf;

/// The version of an agent pinned in tests/agents/versions.env under `var`.
pub(crate) fn pinned(var: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/agents/versions.env");
    let text = std::fs::read_to_string(&path).unwrap();
    text.lines()
        .find_map(|line| line.strip_prefix(var)?.strip_prefix('='))
        .unwrap_or_else(|| panic!("{} pins no {var}", path.display()))
        .trim()
        .to_owned()
}

/// The agent CLI `bin` pinned under `var`, as tests/agents/install.sh
/// installs it: `<cache>/<var>-<version>/node_modules/.bin/<bin>`.
pub(crate) fn agent_bin(var: &str, bin: &str) -> PathBuf {
    let version = pinned(var);
    let path = agents_cache()
        .join(format!("{var}-{version}"))
        .join("node_modules/.bin")
        .join(bin);
    assert!(
        path.exists(),
        "{bin} {version} ({var}) is not installed at {}: run tests/agents/install.sh \
         (./test.sh does it)",
        path.display()
    );
    path
}

/// Where tests/agents/install.sh put the agent CLIs.
fn agents_cache() -> PathBuf {
    std::env::var_os("TOOLGATE_AGENT_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/agents/.cache"))
}

/// Hook handlers that fail in the three ways an agent forgives: a command
/// that is not there, one that crashes, one that outlives its `timeout`.
pub(crate) fn failing_hooks(agent: &str) -> [(&'static str, Value); 3] {
    [
        (
            "missing",
            json!({"type": "command", "command": format!("/nonexistent/toolgate {agent}")}),
        ),
        (
            "crashed",
            json!({"type": "command", "command": "sh -c 'exit 1'"}),
        ),
        (
            "timed out",
            json!({"type": "command", "command": "sleep 30", "timeout": 1}),
        ),
    ]
}

pub(crate) fn bash(command: &str) -> Value {
    json!({"name": "Bash", "input": {"command": command, "description": "scripted"}})
}

/// A wire-v1 python hook from a body that sets `answer` from `req`.
pub(crate) fn py_hook(fx: &Fixture, name: &str, body: &str) -> String {
    fx.script(
        name,
        &format!(
            "#!/usr/bin/env python3\nimport json, sys\nreq = json.load(sys.stdin)\nanswer = {{\"decision\": \"allow\"}}\n{body}\nprint(json.dumps(answer))\n"
        ),
    )
}

#[test]
fn each_agents_tested_versions_are_the_releases_pinned_for_its_live_tests() {
    // `toolgate doctor` compares an agent's version with its dialect's
    // `tested_versions`; those must be what the live tests run.
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/agents/versions.env");
    let pinned: std::collections::BTreeSet<String> = std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once('=').map(|(_, v)| v.trim().to_owned()))
        .collect();
    let claimed: std::collections::BTreeSet<String> = toolgate::agent::Outward::ALL
        .iter()
        .flat_map(|agent| agent.install().tested_versions.iter())
        .map(|v| (*v).to_owned())
        .collect();
    assert_eq!(claimed, pinned);
}
