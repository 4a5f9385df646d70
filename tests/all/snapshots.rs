//! What a person reads, pinned whole: every `--help` and the `toolgate
//! hooks` table. A change to any of them shows up as a snapshot diff to
//! review (`INSTA_UPDATE=always cargo test --test all snapshots` rewrites
//! them; `cargo insta review` if cargo-insta is installed), instead of
//! slipping past a `contains` check.

use crate::support::{succeeded, toolgate, toolgate_path};
use std::path::Path;

/// The output, with this binary's real path (which the agent entries
/// name, and which differs from machine to machine) as `<this toolgate>`.
fn text(cmd: &mut std::process::Command) -> String {
    let out = succeeded(cmd.env("COLUMNS", "100").env("NO_COLOR", "1"));
    String::from_utf8(out.stdout)
        .expect("UTF-8 output")
        .replace(&toolgate_path(), "<this toolgate>")
}

/// Piped and with no `$COLUMNS`: a table is not wrapped at all.
fn unwrapped(cmd: &mut std::process::Command) -> String {
    let out = succeeded(cmd.env_remove("COLUMNS").env("NO_COLOR", "1"));
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

#[test]
fn every_help_reads_as_pinned() {
    // The agent commands take their names from the dialects: one snapshot
    // each, named after it (`help_claude_code___help`).
    let agents = toolgate::agent::Outward::ALL
        .iter()
        .map(|dialect| vec![dialect.name(), "--help"]);
    let commands: Vec<Vec<&str>> = [
        vec!["--help"],
        vec!["trust", "--help"],
        vec!["serve", "--help"],
        vec!["check", "--help"],
        vec!["test", "--help"],
        vec!["hooks", "--help"],
        vec!["replay", "--help"],
        vec!["import", "--help"],
        vec!["install", "--help"],
        vec!["uninstall", "--help"],
        vec!["doctor", "--help"],
        vec!["new", "--help"],
        vec!["dev", "--help"],
        vec!["bench", "--help"],
        vec!["log", "--help"],
        vec!["log", "verify", "--help"],
        vec!["log", "checkpoint", "--help"],
        vec!["push", "--help"],
        vec!["mcp", "--help"],
        vec!["mcp", "trust", "--help"],
        vec!["-h"],
    ]
    .into_iter()
    .chain(agents)
    .collect();
    for args in commands {
        let name = format!(
            "help_{}",
            args.join("_").trim_start_matches('-').replace('-', "_")
        );
        insta::assert_snapshot!(name, text(toolgate().args(args)));
    }
}

/// A directory in /tmp whose path has the same length on every machine, so
/// a table's column widths do not depend on where the repository is.
fn fixed_length_dir(prefix: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(prefix)
        .rand_bytes(8)
        .tempdir_in("/tmp")
        .unwrap()
}

#[test]
fn the_hooks_table_reads_as_pinned() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let workspace = fixed_length_dir("tg-snap-ws-");
    succeeded(
        std::process::Command::new("cp")
            .arg("-a")
            .arg(root.join("examples/demo/."))
            .arg(workspace.path()),
    );
    let global = fixed_length_dir("tg-snap-gl-");
    let cache = tempfile::tempdir().unwrap();
    let out = unwrapped(
        toolgate()
            .args(["hooks", "--workspace"])
            .arg(workspace.path())
            .env("TOOLGATE_CONFIG_DIR", global.path())
            .env("TOOLGATE_CACHE_DIR", cache.path()),
    );
    let out = out
        .replace(&workspace.path().display().to_string(), "[WORKSPACE]")
        .replace(&global.path().display().to_string(), "[GLOBAL]");
    insta::assert_snapshot!("hooks_table_demo", out);
}
