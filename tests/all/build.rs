//! One build serves both README commands: `cargo run` (the main job) and
//! `cargo test` (the suite, which adds dev-dependencies) must resolve every
//! shared dependency with the same features, or a fresh clone compiles
//! wasmtime and Cranelift twice (about ten minutes each on 2 cores).

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

/// `package version` → the feature sets it is built with, for the workspace's
/// default members (or `-p` one package) with the given edge kinds.
fn resolved(edges: &str, package: Option<&str>) -> BTreeMap<String, BTreeSet<String>> {
    let mut args = vec![
        "tree",
        "--offline",
        "--prefix",
        "none",
        "-f",
        "{p}|{f}",
        "-e",
        edges,
    ];
    if let Some(p) = package {
        args.extend(["-p", p]);
    }
    let out = Command::new(env!("CARGO"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut map: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let line = line.trim_end_matches(" (*)");
        let Some((package, features)) = line.split_once('|') else {
            continue;
        };
        // `name vX.Y.Z` (a path dependency adds its path; proc-macros say so).
        let package: String = package
            .split_whitespace()
            .take(2)
            .collect::<Vec<_>>()
            .join(" ");
        map.entry(package).or_default().insert(features.to_owned());
    }
    map
}

#[test]
fn cargo_run_and_cargo_test_resolve_shared_dependencies_alike() {
    let run = resolved("normal,build", None);
    let test = resolved("normal,build,dev", None);
    // What the toolgate crate builds on (wasmtime, Cranelift and the rest):
    // the costly part. The mentra integration's own dependencies (its
    // scripted provider for tests) rebuild in seconds and are left out.
    let core = resolved("normal,build", Some("toolgate"));
    let differing: Vec<String> = run
        .iter()
        .filter(|(package, _)| core.contains_key(*package))
        .filter_map(|(package, features)| {
            let with_dev = test.get(package)?;
            (features != with_dev)
                .then(|| format!("{package}: {features:?} vs {with_dev:?} with dev-dependencies"))
        })
        .collect();
    assert!(
        differing.is_empty(),
        "these dependencies would be compiled twice on a fresh clone (once for `cargo run`, \
         once for `cargo test`); give the main crate the same features (see `indexmap` in \
         Cargo.toml):\n{}",
        differing.join("\n")
    );
}

/// The library takes every path and switch as an option (README "Embedding
/// the library"); only the command-line tool (`src/`) reads the
/// environment. A read slipped into the library would silently make an
/// embedder's process environment part of its configuration.
#[test]
fn the_library_reads_no_environment_variable() {
    fn walk(dir: &std::path::Path, found: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, found);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                for (n, line) in text.lines().enumerate() {
                    if ["env::var", "var_os(", "env::vars"]
                        .iter()
                        .any(|p| line.contains(p))
                    {
                        found.push(format!("{}:{}: {}", path.display(), n + 1, line.trim()));
                    }
                }
            }
        }
    }
    let mut found = Vec::new();
    for dir in crate::support::LIBRARY_SOURCES {
        walk(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(dir),
            &mut found,
        );
    }
    assert!(
        found.is_empty(),
        "the library reads the environment:\n{}",
        found.join("\n")
    );
}
