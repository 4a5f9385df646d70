//! The architecture, read from what cargo and the source say. Between
//! crates: the workspace's crate graph is the one docs/crates.md draws (read
//! from `cargo metadata`; an upward or undrawn edge fails). Inside the
//! library crate, where cargo cannot see: a module imports only from a
//! layer below its own (or from inside its own unit), and units form no
//! cycle.
//!
//! Why a test and not a convention: the layering is what makes the compiler
//! the reviewer. A binding that reached up into `trust` or `config` could make
//! its own trust decision; a protocol that reached into `runner` would tie an
//! agent's dialect to the chain's internals. Both compile fine, so only a test
//! that reads the `use`s stops them. The table below is the architecture; the
//! crate's module doc and the README draw the same picture.
//!
//! The source is parsed with `syn` (the same parser the compiler's proc
//! macros use), so grouped, nested and renamed imports and inline
//! `crate::…::f()` paths are all seen. Paths written inside macro calls are
//! read from the macro's tokens.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit_mut::VisitMut;

/// Bottom to top. A unit is a module path; a module belongs to the longest
/// unit that prefixes it. `isolated` layers forbid imports between their units.
/// Support and contract are the toolgate-fs and toolgate-contract crates now,
/// where cargo keeps them below everything; their names stay so that a path
/// through the library's re-export of them is placed. The agent dialects
/// (`toolgate::agent`) are toolgate-agents, below the library too.
const LAYERS: &[(&str, bool, &[&str])] = &[
    ("support", false, &["text", "safe_fs", "strict_json"]),
    (
        "contract",
        false,
        &["contract", "failure", "outcome", "session"],
    ),
    ("protocol", false, &["protocol"]),
    ("seam", false, &["binding", "signing"]),
    (
        "bindings",
        true,
        &["binding::in_process", "binding::command", "binding::wasm"],
    ),
    ("trust", false, &["trust"]),
    ("config", false, &["config"]),
    ("runner", false, &["runner", "sessions"]),
    (
        "application",
        false,
        &["replay", "review", "fuzzing", "fixture"],
    ),
];

/// The unit a module path belongs to, and its layer's index.
fn unit_of(module: &[String]) -> Option<(&'static str, usize)> {
    let mut best: Option<(&'static str, usize)> = None;
    for (layer, (_, _, units)) in LAYERS.iter().enumerate() {
        for unit in *units {
            let parts: Vec<&str> = unit.split("::").collect();
            let prefix = parts.len() <= module.len()
                && parts.iter().zip(module).all(|(a, b)| *a == b.as_str());
            if prefix && best.is_none_or(|(b, _)| b.split("::").count() < parts.len()) {
                best = Some((unit, layer));
            }
        }
    }
    best
}

/// One import: where it is written and what it names.
#[derive(Debug, Clone)]
struct Import {
    file: PathBuf,
    line: usize,
    written: String,
    from: Vec<String>,
    to: Vec<String>,
}

/// Collects every `crate::`, `super::` and `self::` path in one file.
struct Collector<'a> {
    file: &'a Path,
    text: &'a str,
    /// The module the visitor is in (the file's module plus inline `mod`s).
    here: Vec<String>,
    found: Vec<Import>,
}

impl Collector<'_> {
    /// Resolves a path's leading segments to an absolute module path (the
    /// last segment may be an item; units are matched by prefix, so it does
    /// not matter).
    fn record(&mut self, segments: Vec<String>, written: String) {
        let mut to: Vec<String>;
        let mut rest = segments.as_slice();
        match rest.first().map(String::as_str) {
            Some("crate") => {
                to = Vec::new();
                rest = &rest[1..];
            }
            Some("super") => {
                to = self.here.clone();
                while rest.first().map(String::as_str) == Some("super") {
                    to.pop();
                    rest = &rest[1..];
                }
            }
            Some("self") => {
                to = self.here.clone();
                rest = &rest[1..];
            }
            _ => return,
        }
        to.extend(rest.iter().cloned());
        let line = self.line_of(&written);
        self.found.push(Import {
            file: self.file.to_path_buf(),
            line,
            written,
            from: self.here.clone(),
            to,
        });
    }

    /// The first line that holds the path's last two segments (spans carry no
    /// line numbers without proc-macro2's `span-locations`).
    fn line_of(&self, written: &str) -> usize {
        let tail: Vec<&str> = written.rsplit("::").take(2).collect();
        let needle = tail.iter().rev().copied().collect::<Vec<_>>().join("::");
        let last = tail.first().copied().unwrap_or_default();
        self.text
            .lines()
            .position(|l| l.contains(&needle))
            .or_else(|| self.text.lines().position(|l| l.contains(last)))
            .map_or(0, |n| n + 1)
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => self.leaf(prefix, n.ident.to_string()),
            syn::UseTree::Rename(r) => self.leaf(prefix, r.ident.to_string()),
            syn::UseTree::Glob(_) => self.leaf(prefix, "*".to_owned()),
            syn::UseTree::Group(g) => {
                for tree in &g.items {
                    self.use_tree(prefix, tree);
                }
            }
        }
    }

    fn leaf(&mut self, prefix: &[String], name: String) {
        let mut segments = prefix.to_vec();
        if name != "self" {
            segments.push(name);
        }
        let written = format!("use {}", segments.join("::"));
        self.record(segments, written);
    }
}

impl VisitMut for Collector<'_> {
    fn visit_item_use_mut(&mut self, item: &mut syn::ItemUse) {
        self.use_tree(&mut Vec::new(), &item.tree);
    }

    fn visit_path_mut(&mut self, path: &mut syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        if segments.len() > 1 {
            let written = segments.join("::");
            self.record(segments, written);
        }
        syn::visit_mut::visit_path_mut(self, path);
    }

    fn visit_item_mod_mut(&mut self, item: &mut syn::ItemMod) {
        if item.content.is_some() {
            self.here.push(item.ident.to_string());
            syn::visit_mut::visit_item_mod_mut(self, item);
            self.here.pop();
        }
    }

    fn visit_macro_mut(&mut self, mac: &mut syn::Macro) {
        // `crate :: a :: b` inside a macro's tokens.
        let tokens: Vec<proc_macro2::TokenTree> = flatten(mac.tokens.clone());
        let mut i = 0;
        while i < tokens.len() {
            if let proc_macro2::TokenTree::Ident(id) = &tokens[i]
                && (id == "crate" || id == "super")
            {
                let mut segments = vec![id.to_string()];
                let mut j = i + 1;
                while j + 2 < tokens.len() + 1 {
                    let colons = matches!(&tokens[j], proc_macro2::TokenTree::Punct(p) if p.as_char() == ':')
                        && matches!(tokens.get(j + 1), Some(proc_macro2::TokenTree::Punct(p)) if p.as_char() == ':');
                    match (colons, tokens.get(j + 2)) {
                        (true, Some(proc_macro2::TokenTree::Ident(next))) => {
                            segments.push(next.to_string());
                            j += 3;
                        }
                        _ => break,
                    }
                }
                if segments.len() > 1 {
                    let written = segments.join("::");
                    self.record(segments, written);
                }
                i = j;
            } else {
                i += 1;
            }
        }
        syn::visit_mut::visit_macro_mut(self, mac);
    }
}

fn flatten(stream: proc_macro2::TokenStream) -> Vec<proc_macro2::TokenTree> {
    let mut out = Vec::new();
    for tree in stream {
        match tree {
            proc_macro2::TokenTree::Group(g) => out.extend(flatten(g.stream())),
            other => out.push(other),
        }
    }
    out
}

/// The module path of a file under `src/` (`binding/wasm/mod.rs` →
/// `binding::wasm`). `lib.rs` (the facade that re-exports), `main.rs` and
/// `hook.rs` (the binaries' roots: `toolgate` and `toolgate-hook`) are left
/// out.
fn module_of(src: &Path, file: &Path) -> Option<Vec<String>> {
    let rel = file.strip_prefix(src).ok()?;
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    (parts != ["lib"] && parts != ["main"] && parts != ["hook"]).then_some(parts)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("src/ is readable")
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The crate root's re-exports (`pub use binding::in_process::BoxError`, and
/// those in its inline modules such as `agent`): a path through one is a path
/// to what it names, or `crate::BoxError` would hide an upward import.
fn root_aliases(src: &Path) -> BTreeMap<Vec<String>, Vec<String>> {
    let lib = src.join("lib.rs");
    let Ok(text) = std::fs::read_to_string(&lib) else {
        return BTreeMap::new();
    };
    let mut ast = syn::parse_file(&text).expect("lib.rs parses");
    // `pub use binding::…` (no `crate::`) is relative to the root: rewrite
    // the first segment so the collector sees it.
    for item in &mut ast.items {
        if let syn::Item::Use(u) = item
            && let syn::UseTree::Path(p) = &u.tree
            && p.ident != "crate"
            && p.ident != "super"
            && p.ident != "self"
        {
            u.tree = syn::parse_quote!(crate::#p);
        }
    }
    let mut collector = Collector {
        file: &lib,
        text: &text,
        here: Vec::new(),
        found: Vec::new(),
    };
    collector.visit_file_mut(&mut ast);
    collector
        .found
        .into_iter()
        .filter(|i| i.written.starts_with("use "))
        .filter_map(|i| {
            let mut alias = i.from.clone();
            alias.push(i.to.last()?.clone());
            (alias != i.to).then_some((alias, i.to))
        })
        .collect()
}

/// `to` with any root re-export at its start replaced by what it names.
fn resolve(aliases: &BTreeMap<Vec<String>, Vec<String>>, mut to: Vec<String>) -> Vec<String> {
    for _ in 0..8 {
        let Some((alias, target)) = aliases
            .iter()
            .find(|(alias, _)| alias.len() <= to.len() && to[..alias.len()] == alias[..])
        else {
            break;
        };
        let mut next = target.clone();
        next.extend(to[alias.len()..].iter().cloned());
        to = next;
    }
    to
}

/// Every import in `src/`, with the units it joins.
fn imports(src: &Path) -> (Vec<Import>, Vec<String>) {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let aliases = root_aliases(src);
    let mut found = Vec::new();
    let mut unplaced = Vec::new();
    for file in files {
        let Some(module) = module_of(src, &file) else {
            continue;
        };
        if unit_of(&module).is_none() {
            unplaced.push(format!(
                "{}: module `{}` is in no layer; add it to LAYERS",
                file.display(),
                module.join("::")
            ));
        }
        let text = std::fs::read_to_string(&file).expect("source is readable");
        let mut ast = syn::parse_file(&text)
            .unwrap_or_else(|e| panic!("{} does not parse: {e}", file.display()));
        let mut collector = Collector {
            file: &file,
            text: &text,
            here: module,
            found: Vec::new(),
        };
        collector.visit_file_mut(&mut ast);
        found.extend(collector.found.into_iter().map(|mut i| {
            i.to = resolve(&aliases, std::mem::take(&mut i.to));
            i
        }));
    }
    (found, unplaced)
}

/// What is wrong with one import, if anything.
fn violation(import: &Import) -> Option<String> {
    let (from_unit, from_layer) = unit_of(&import.from)?;
    // A path into the crate root's own items (re-exports in lib.rs) or into a
    // module in no layer is reported by `unplaced`.
    let (to_unit, to_layer) = unit_of(&import.to)?;
    if from_unit == to_unit {
        return None;
    }
    let (from_name, isolated, _) = LAYERS[from_layer];
    let (to_name, _, _) = LAYERS[to_layer];
    let why = if to_layer > from_layer {
        format!(
            "`{from_unit}` ({from_name}) imports from a layer above its own: `{to_unit}` ({to_name})"
        )
    } else if to_layer == from_layer && isolated {
        format!("`{from_unit}` imports `{to_unit}`: the {from_name} may not import one another")
    } else {
        return None;
    };
    Some(format!(
        "{}:{}: `{}` — {why}",
        import.file.display(),
        import.line,
        import.written
    ))
}

/// Unit-level cycles within a layer (where imports between units are
/// allowed). A cycle across layers needs an upward import, which `violation`
/// names already.
fn cycles(imports: &[Import]) -> Vec<String> {
    let mut edges: BTreeMap<&str, BTreeMap<&str, &Import>> = BTreeMap::new();
    for import in imports {
        let (Some((from, a)), Some((to, b))) = (unit_of(&import.from), unit_of(&import.to)) else {
            continue;
        };
        if from != to && a == b {
            edges.entry(from).or_default().entry(to).or_insert(import);
        }
    }
    let mut found = Vec::new();
    let mut reported = BTreeSet::new();
    for &start in edges.keys() {
        // Depth-first search for a path back to `start`.
        let mut stack: Vec<(&str, Vec<&Import>)> = vec![(start, Vec::new())];
        let mut seen = BTreeSet::new();
        while let Some((unit, path)) = stack.pop() {
            for (&next, &import) in edges.get(unit).into_iter().flatten() {
                let mut path = path.clone();
                path.push(import);
                if next == start {
                    let mut key: Vec<&str> = path
                        .iter()
                        .filter_map(|i| unit_of(&i.from).map(|u| u.0))
                        .collect();
                    key.sort_unstable();
                    if reported.insert(key) {
                        let steps: Vec<String> = path
                            .iter()
                            .map(|i| format!("  {}:{}: `{}`", i.file.display(), i.line, i.written))
                            .collect();
                        found.push(format!("a cycle through `{start}`:\n{}", steps.join("\n")));
                    }
                } else if seen.insert(next) {
                    stack.push((next, path));
                }
            }
        }
    }
    found
}

/// The workspace's crates, bottom to top, and the workspace crates each
/// may depend on (normal, build or dev): the graph docs/crates.md draws.
const CRATES: &[(&str, &[&str])] = &[
    ("toolgate-guards", &[]),
    ("toolgate-contract", &[]),
    ("toolgate-fs", &[]),
    ("toolgate-agents", &["toolgate-contract", "toolgate-fs"]),
    // The decision log and the call ledger: an observer of the chain that
    // knows only what a call and its outcome are, never the chain.
    ("toolgate-log", &["toolgate-contract", "toolgate-fs"]),
    (
        "toolgate-hook",
        &["toolgate-contract", "toolgate-agents", "toolgate-fs"],
    ),
    // The loopback HTTP kit the server's listeners and the MCP proxy's
    // share: it reads where the per-user secret lives from the hook's env.
    ("toolgate-loopback", &["toolgate-hook"]),
    ("toolgate-seam", &["toolgate-contract", "toolgate-fs"]),
    (
        "toolgate-wasm",
        &[
            "toolgate-contract",
            "toolgate-fs",
            "toolgate-seam",
            "toolgate-guards",
        ],
    ),
    (
        "toolgate",
        &[
            "toolgate-contract",
            "toolgate-fs",
            "toolgate-agents",
            "toolgate-seam",
            "toolgate-wasm",
        ],
    ),
    (
        "toolgate-server",
        &[
            "toolgate",
            "toolgate-hook",
            "toolgate-fs",
            "toolgate-log",
            "toolgate-loopback",
        ],
    ),
    // It measures the decision log's cost per record in process.
    (
        "toolgate-bench",
        &["toolgate", "toolgate-guards", "toolgate-log"],
    ),
    (
        "toolgate-mcp",
        &[
            "toolgate",
            "toolgate-contract",
            "toolgate-fs",
            "toolgate-loopback",
        ],
    ),
    ("toolgate-mentra", &["toolgate"]),
    (
        "toolgate-cli",
        &[
            "toolgate",
            "toolgate-bench",
            "toolgate-hook",
            "toolgate-log",
            "toolgate-loopback",
            "toolgate-mcp",
            "toolgate-server",
        ],
    ),
];

/// What in `metadata` (`cargo metadata --no-deps` as JSON) the graph does
/// not draw: a member it does not place, a place no member fills, and an
/// edge between members it does not allow (named as upward when it is).
fn crate_graph_problems(metadata: &serde_json::Value) -> Vec<String> {
    let place = |name: &str| CRATES.iter().position(|(c, _)| *c == name);
    let members: BTreeMap<&str, &serde_json::Value> = metadata["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| Some((p["name"].as_str()?, p)))
        .collect();
    let mut problems = Vec::new();
    for (name, _) in CRATES {
        if !members.contains_key(name) {
            problems.push(format!(
                "CRATES names `{name}`, which is not a workspace member"
            ));
        }
    }
    for (name, package) in &members {
        let Some(at) = place(name) else {
            problems.push(format!(
                "crate `{name}` has no place in the graph; add it to CRATES and docs/crates.md"
            ));
            continue;
        };
        for dep in package["dependencies"].as_array().into_iter().flatten() {
            let Some(dep_name) = dep["name"].as_str() else {
                continue;
            };
            if !members.contains_key(dep_name) || CRATES[at].1.contains(&dep_name) {
                continue;
            }
            let kind = dep["kind"].as_str().unwrap_or("normal");
            let how = match place(dep_name) {
                Some(dep_at) if dep_at >= at => "a crate above its own",
                _ => "an edge the graph does not draw",
            };
            problems.push(format!("`{name}` depends on `{dep_name}` ({kind}): {how}"));
        }
    }
    problems
}

#[test]
fn no_crate_depends_on_a_crate_above_it_or_off_the_graph() {
    let out = std::process::Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metadata: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON");
    let members = metadata["packages"].as_array().map_or(0, Vec::len);
    assert!(
        members >= CRATES.len(),
        "the metadata was not read: {members} packages"
    );
    let problems = crate_graph_problems(&metadata);
    assert!(
        problems.is_empty(),
        "the crate graph is not the one docs/crates.md draws:\n{}",
        problems.join("\n")
    );
}

/// The crates below the library and what none of them may build: the
/// contract (what any program speaking wire v1 or the serve protocol links),
/// the support layer, the agent dialects, and the lean client, whose start
/// time is the point of it. Each lists the runtimes it must not build.
const LEAN_CRATES: &[(&str, &[&str])] = &[
    (
        "toolgate-contract",
        &["wasmtime", "tokio", "hyper", "nix", "landlock", "toolgate"],
    ),
    (
        "toolgate-fs",
        &["wasmtime", "tokio", "hyper", "landlock", "toolgate"],
    ),
    (
        "toolgate-agents",
        &["wasmtime", "tokio", "hyper", "landlock", "toolgate"],
    ),
    (
        "toolgate-seam",
        &["wasmtime", "tokio", "hyper", "landlock", "toolgate"],
    ),
    (
        "toolgate-hook",
        &[
            "wasmtime",
            "cranelift-codegen",
            "tokio",
            "hyper",
            "landlock",
            "toolgate",
            "clap",
        ],
    ),
];

/// The packages `cargo tree` says `krate` builds (normal edges).
fn builds(krate: &str) -> BTreeSet<String> {
    let out = std::process::Command::new(env!("CARGO"))
        .args(["tree", "-p", krate, "-e", "normal", "--prefix", "none"])
        .args(["-f", "{p}", "--offline"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| Some(line.split_whitespace().next()?.to_owned()))
        .collect()
}

#[test]
fn the_contract_the_dialects_and_the_lean_client_build_no_wasmtime_tokio_or_hyper() {
    for (krate, forbidden) in LEAN_CRATES {
        let names = builds(krate);
        assert!(
            names.contains(*krate) && names.len() > 1,
            "the tree of {krate} was not read: {names:?}"
        );
        for runtime in *forbidden {
            assert!(
                !names.contains(*runtime),
                "{krate} builds {runtime}: {names:?}"
            );
        }
    }
}

/// What the lean client's binary carries, read from the binaries the suite
/// runs: the dialects answer through static dispatch, so a program that only
/// reads an agent's input and blocks links none of their settings editing
/// or import (a `&dyn Dialect` linked every method of every agent). Each
/// marker is a message only that code says; the full binary, which installs
/// and imports, must carry it, or the marker proves nothing.
#[test]
fn the_lean_client_links_no_agent_settings_editing_or_import() {
    let read = |exe: &str| std::fs::read(exe).expect("the binary is readable");
    let has =
        |bytes: &[u8], marker: &str| bytes.windows(marker.len()).any(|w| w == marker.as_bytes());
    let lean = read(env!("CARGO_BIN_EXE_toolgate-hook"));
    let full = read(env!("CARGO_BIN_EXE_toolgate"));
    // Its own block is in it: the search reads the binary.
    assert!(has(&lean, "so this call is blocked"));
    for marker in [
        // Editing an agent's settings (settings/).
        "toolgate edits plain JSON only",
        // Importing Copilot CLI's hooks (copilot.rs).
        "as Copilot's hook instead",
    ] {
        assert!(has(&full, marker), "the full binary lacks {marker:?}");
        assert!(!has(&lean, marker), "the lean client links {marker:?}");
    }
}

/// The graph check itself: an upward edge (the lean client reaching the
/// library among them), an edge between siblings and a crate with no place
/// are each named, so a passing run means something.
#[test]
fn the_crate_graph_check_names_an_upward_edge_a_sibling_edge_and_an_unplaced_crate() {
    let dep = |name: &str, kind: Option<&str>| serde_json::json!({"name": name, "kind": kind});
    let metadata = serde_json::json!({"packages": [
        {"name": "toolgate-guards", "dependencies": []},
        {"name": "toolgate-contract", "dependencies": [dep("serde", None)]},
        {"name": "toolgate-fs", "dependencies": []},
        {"name": "toolgate-agents", "dependencies": [dep("toolgate-contract", None)]},
        {"name": "toolgate-log", "dependencies": [dep("toolgate-contract", None)]},
        {"name": "toolgate-loopback", "dependencies": [dep("toolgate-hook", None)]},
        {"name": "toolgate-hook", "dependencies": [dep("toolgate-agents", None), dep("toolgate", None)]},
        {"name": "toolgate-seam", "dependencies": [dep("toolgate-contract", None)]},
        {"name": "toolgate-wasm", "dependencies": [dep("toolgate-seam", None)]},
        {"name": "toolgate", "dependencies": [dep("toolgate-contract", None), dep("toolgate-cli", Some("dev"))]},
        {"name": "toolgate-bench", "dependencies": [dep("toolgate", None)]},
        {"name": "toolgate-server", "dependencies": [dep("toolgate", None)]},
        {"name": "toolgate-mcp", "dependencies": [dep("toolgate", None)]},
        {"name": "toolgate-mentra", "dependencies": [dep("toolgate", None), dep("toolgate-bench", None)]},
        {"name": "toolgate-cli", "dependencies": [dep("toolgate", None), dep("toolgate-bench", None)]},
        {"name": "toolgate-extra", "dependencies": []},
    ]});
    let problems = crate_graph_problems(&metadata);
    let expected = [
        "`toolgate` depends on `toolgate-cli` (dev): a crate above its own",
        "`toolgate-hook` depends on `toolgate` (normal): a crate above its own",
        "`toolgate-mentra` depends on `toolgate-bench` (normal): an edge the graph does not draw",
        "crate `toolgate-extra` has no place in the graph; add it to CRATES and docs/crates.md",
    ];
    for line in expected {
        assert!(
            problems.iter().any(|p| p == line),
            "{line} not in {problems:?}"
        );
    }
    assert_eq!(problems.len(), expected.len(), "{problems:?}");
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/toolgate/src")
}

#[test]
fn no_module_imports_from_a_layer_above_its_own_and_units_form_no_cycle() {
    let (imports, mut problems) = imports(&src());
    let mut named: Vec<String> = imports.iter().filter_map(violation).collect();
    named.dedup();
    problems.extend(named);
    problems.extend(cycles(&imports));
    assert!(
        problems.is_empty(),
        "the layers (bottom to top: {}) are broken:\n{}",
        LAYERS
            .iter()
            .map(|(name, _, _)| *name)
            .collect::<Vec<_>>()
            .join(" → "),
        problems.join("\n")
    );
}

/// The checker itself: an upward import, an import between two bindings and a
/// cycle are each caught and named, so a passing run means something.
#[test]
fn the_layer_check_names_an_upward_import_a_sibling_binding_and_a_cycle() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir_all(src.join("binding/wasm")).unwrap();
    std::fs::write(src.join("text.rs"), "use crate::runner::Outcome;\n").unwrap();
    std::fs::write(
        src.join("binding/wasm/mod.rs"),
        "use crate::binding::command::STDOUT_CAP;\n",
    )
    .unwrap();
    std::fs::write(src.join("contract.rs"), "use crate::failure::X;\n").unwrap();
    std::fs::write(src.join("failure.rs"), "fn f() { crate::contract::g() }\n").unwrap();
    let (imports, unplaced) = imports(src);
    assert!(unplaced.is_empty(), "{unplaced:?}");
    let problems: Vec<String> = imports.iter().filter_map(violation).collect();
    assert!(
        problems
            .iter()
            .any(|p| p.contains("text.rs:1: `use crate::runner::Outcome`")
                && p.contains("layer above its own")),
        "{problems:?}"
    );
    assert!(
        problems
            .iter()
            .any(|p| p.contains("`use crate::binding::command::STDOUT_CAP`")
                && p.contains("may not import one another")),
        "{problems:?}"
    );
    let cycles = cycles(&imports);
    assert!(
        cycles.len() == 1 && cycles[0].contains("crate::contract::g"),
        "{cycles:?}"
    );
}

/// Where a catch-all arm is looked for, and which are allowed.
#[derive(Clone, Copy, PartialEq)]
enum Scope {
    /// The runner: none at all.
    Runner,
    /// A dialect's reading of an agent's event (`read…`, `classify`,
    /// `role`): only one that refuses.
    Reading,
    /// An inward protocol's reading of a hook's answer (every function):
    /// only one that refuses.
    Answers,
}

/// Whether `body` refuses: calls `Err(…)`, `failed(…)` (a read that
/// fails) or `…::deny(…)` (a denial).
fn refuses(body: &syn::Expr) -> bool {
    struct Calls(bool);
    impl VisitMut for Calls {
        fn visit_expr_call_mut(&mut self, call: &mut syn::ExprCall) {
            if let syn::Expr::Path(path) = &*call.func
                && path
                    .path
                    .segments
                    .last()
                    .is_some_and(|s| s.ident == "Err" || s.ident == "failed" || s.ident == "deny")
            {
                self.0 = true;
            }
            syn::visit_mut::visit_expr_call_mut(self, call);
        }
    }
    let mut calls = Calls(false);
    calls.visit_expr_mut(&mut body.clone());
    calls.0
}

/// Every `_ =>` arm in `files` that `scope` does not allow (see
/// [`refuses`]). `file: fn` for each one found.
fn wildcard_arms(files: &[PathBuf], scope: Scope) -> Vec<String> {
    struct Arms<'a> {
        file: &'a Path,
        scope: Scope,
        func: Vec<String>,
        found: Vec<String>,
    }
    impl VisitMut for Arms<'_> {
        fn visit_item_fn_mut(&mut self, f: &mut syn::ItemFn) {
            self.func.push(f.sig.ident.to_string());
            syn::visit_mut::visit_item_fn_mut(self, f);
            self.func.pop();
        }
        fn visit_impl_item_fn_mut(&mut self, f: &mut syn::ImplItemFn) {
            self.func.push(f.sig.ident.to_string());
            syn::visit_mut::visit_impl_item_fn_mut(self, f);
            self.func.pop();
        }
        fn visit_arm_mut(&mut self, arm: &mut syn::Arm) {
            let wild = matches!(arm.pat, syn::Pat::Wild(_));
            let func = self.func.last().cloned().unwrap_or_default();
            let checked = match self.scope {
                Scope::Runner | Scope::Answers => true,
                Scope::Reading => func.starts_with("read") || func == "classify" || func == "role",
            };
            let refuses = refuses(&arm.body);
            let allowed = match self.scope {
                Scope::Runner => false,
                Scope::Reading | Scope::Answers => refuses,
            };
            if wild && checked && !allowed {
                self.found
                    .push(format!("{}: fn {func}", self.file.display()));
            }
            syn::visit_mut::visit_arm_mut(self, arm);
        }
    }
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file).expect("source is readable");
        let mut ast = syn::parse_file(&text).expect("source parses");
        let mut arms = Arms {
            file,
            scope,
            func: Vec::new(),
            found: Vec::new(),
        };
        arms.visit_file_mut(&mut ast);
        found.extend(arms.found);
    }
    found
}

#[test]
fn no_catch_all_arm_turns_an_answer_or_an_agent_event_into_a_decision() {
    let mut runner = Vec::new();
    rust_files(&src().join("runner"), &mut runner);
    let mut dialects = Vec::new();
    rust_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/toolgate-agents/src"),
        &mut dialects,
    );
    // The inward protocols: how a hook's exit and output become an answer.
    let mut answers: Vec<PathBuf> = ["mod.rs", "claude.rs", "gemini.rs"]
        .iter()
        .map(|f| src().join("protocol").join(f))
        .collect();
    // Wire v1 is the contract's (crates/toolgate-contract); the WIT
    // encoding is the wasm binding's (crates/toolgate-wasm).
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    answers.push(root.join("crates/toolgate-contract/src/wire.rs"));
    answers.push(root.join("crates/toolgate-wasm/src/wit.rs"));
    assert!(
        runner.len() > 3 && dialects.len() >= 7,
        "{runner:?} {dialects:?}"
    );
    let found = [
        wildcard_arms(&runner, Scope::Runner),
        wildcard_arms(&dialects, Scope::Reading),
        wildcard_arms(&answers, Scope::Answers),
    ]
    .concat();
    assert!(
        found.is_empty(),
        "a catch-all arm decides what an answer or an event becomes; write every case out:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_catch_all_check_finds_a_wildcard_that_accepts() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("consult.rs");
    std::fs::write(
        &file,
        "fn usable(a: A) -> R { match a { A::Modify => Err(x), _ => Ok(a) } }\n\
         fn read(n: &str) -> R { match n { \"Pre\" => Ok(1), _ => Ok(0) } }\n\
         fn read_refusing(n: &str) -> R { match n { \"Pre\" => Ok(1), _ => Err(e) } }\n\
         fn decode(c: i32) -> R { match c { 0 => ok(), _ => failed(why) } }\n",
    )
    .unwrap();
    let files = [file];
    assert_eq!(
        wildcard_arms(&files, Scope::Runner).len(),
        4,
        "the runner allows none"
    );
    let reading = wildcard_arms(&files, Scope::Reading);
    assert_eq!(reading.len(), 1, "{reading:?}");
    assert!(reading[0].ends_with("fn read"), "{reading:?}");
    let answers = wildcard_arms(&files, Scope::Answers);
    assert_eq!(answers.len(), 2, "{answers:?}");
    assert!(
        answers[0].ends_with("fn usable") && answers[1].ends_with("fn read"),
        "{answers:?}"
    );
}

/// The longest a function may be without saying why it is one function.
const LONG_FUNCTION: usize = 80;

/// Functions longer than [`LONG_FUNCTION`] lines in `text` whose doc or
/// comment block (the lines right above `fn`, or the first line of its
/// body) has no line saying "Why one function". Read from the text, not
/// from syn: spans carry no line numbers without proc-macro2's
/// `span-locations`, which would change the features every proc macro is
/// built with. The sources are rustfmt's (CI checks), so a body ends at
/// the first line that is its indent and `}`.
fn long_functions_without_a_reason(file: &Path, text: &str) -> Vec<String> {
    let signature = regex::Regex::new(
        r"^(\s*)(?:pub(?:\([a-z]+\))? )?(?:const )?(?:async )?(?:unsafe )?fn ([A-Za-z0-9_]+)",
    )
    .expect("the signature pattern compiles");
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    for (at, line) in lines.iter().enumerate() {
        let Some(caps) = signature.captures(line) else {
            continue;
        };
        // `fn f() {}` (rustfmt puts every other body on lines of its own).
        if line.trim_end().ends_with('}') {
            continue;
        }
        let indent = &caps[1];
        let close = format!("{indent}}}");
        // A declaration without a body (a trait's required method) ends in `;`
        // before any `{`.
        let Some(open) = lines[at..]
            .iter()
            .position(|l| l.ends_with('{') || l.ends_with(';'))
        else {
            continue;
        };
        if lines[at + open].ends_with(';') {
            continue;
        }
        let Some(end) = lines[at..].iter().position(|l| *l == close) else {
            continue;
        };
        let length = end + 1;
        if length <= LONG_FUNCTION {
            continue;
        }
        let above = lines[..at].iter().rev().take_while(|l| {
            let l = l.trim_start();
            l.starts_with("//") || l.starts_with("#[")
        });
        let first = lines.get(at + open + 1).into_iter();
        let says_why = above
            .chain(first)
            .any(|l| l.trim_start().starts_with("//") && l.contains("Why one function"));
        if !says_why {
            found.push(format!(
                "{}:{}: `{}` is {length} lines",
                file.display(),
                at + 1,
                &caps[2]
            ));
        }
    }
    found
}

/// Functions that were over the limit when the rule came in (issue 37), by
/// file and name: a ratchet, not an allowance. Each is to be split or to
/// say why; the test fails when one listed here is no longer long (strike
/// it), so the list only shrinks.
const LONG_BEFORE_THE_RULE: &[(&str, &str)] = &[
    ("crates/toolgate-bench/src/setup.rs", "agent_rows"),
    ("crates/toolgate-bench/src/soak.rs", "chart"),
    ("crates/toolgate-bench/src/soak.rs", "mix"),
    ("crates/toolgate-bench/src/soak.rs", "render"),
    ("crates/toolgate-bench/src/soak.rs", "run_soak"),
    ("crates/toolgate/examples/embed.rs", "main"),
    ("crates/toolgate-wasm/src/lib.rs", "load"),
    ("crates/toolgate-wasm/src/oci/pull.rs", "check_manifest"),
    ("crates/toolgate-wasm/src/oci/pull.rs", "push"),
    ("crates/toolgate-wasm/src/spec.rs", "parse"),
    ("crates/toolgate-wasm/src/spec.rs", "parse_oci"),
    ("crates/toolgate/src/config/mod.rs", "load"),
    ("crates/toolgate/src/fixture.rs", "judge"),
    ("crates/toolgate-agents/src/copilot.rs", "read"),
    ("crates/toolgate-agents/src/gemini.rs", "import_handler"),
    ("crates/toolgate-agents/src/gemini.rs", "import_settings"),
    ("src/cli/dev.rs", "place"),
    ("src/cli/doctor/wiring.rs", "check_agent"),
    ("src/cli/doctor/wiring.rs", "check_scope"),
    ("crates/toolgate-hook/src/hook_process.rs", "run"),
    ("crates/toolgate-server/src/socket.rs", "connection"),
];

/// Every Rust file of the tool (`src/`) and of each crate under `crates/`
/// (their sources, benches and examples).
fn workspace_sources(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    for dir in std::fs::read_dir(root.join("crates"))
        .expect("crates/ is readable")
        .flatten()
    {
        rust_files(&dir.path(), &mut files);
    }
    assert!(files.len() > 100, "the sources were not read: {files:?}");
    files
}

#[test]
fn no_function_over_80_lines_without_a_comment_saying_why() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = workspace_sources(root);
    let mut listed: BTreeSet<(&str, &str)> = LONG_BEFORE_THE_RULE.iter().copied().collect();
    let mut found = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("source is readable");
        let relative = file.strip_prefix(root).unwrap_or(file);
        for long in long_functions_without_a_reason(relative, &text) {
            let name = long.split('`').nth(1).unwrap_or_default();
            let key = LONG_BEFORE_THE_RULE
                .iter()
                .find(|(f, n)| Path::new(f) == relative && *n == name);
            match key {
                Some(key) => {
                    listed.remove(key);
                }
                None => found.push(long),
            }
        }
    }
    assert!(
        listed.is_empty(),
        "no longer over {LONG_FUNCTION} lines, or gone: strike them from LONG_BEFORE_THE_RULE: \
         {listed:?}"
    );
    assert!(
        found.is_empty(),
        "functions over {LONG_FUNCTION} lines with no comment saying why they are one \
         (`/// Why one function: …` above it, or `// Why one function: …` first in its body); \
         split them or say why:\n{}",
        found.join("\n")
    );
}

/// The length check itself: a long function is named, one that says why
/// is not, and a short one and a bodiless declaration are never counted.
#[test]
fn the_length_check_names_a_long_function_unless_it_says_why() {
    let body = "    let x = 1;\n".repeat(LONG_FUNCTION);
    let text = format!(
        "fn short() {{\n}}\n\
         trait T {{\n    fn required(&self) -> u8;\n}}\n\
         pub(crate) async fn long() {{\n{body}}}\n\
         /// Does a thing.\n/// Why one function: the steps share one borrow.\n\
         fn explained() {{\n{body}}}\n\
         impl S {{\n    fn inner() {{\n        // Why one function: one lock held throughout.\n{body}    }}\n}}\n"
    );
    let found = long_functions_without_a_reason(Path::new("x.rs"), &text);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("x.rs:6: `long` is 82 lines"),
        "{found:?}"
    );
}

/// The longest a module may be (its lines before `#[cfg(test)]`) without
/// its doc saying why it is one module.
const LONG_MODULE: usize = 600;

/// Modules that were over the limit when the rule came in (issue 37): a
/// ratchet like [`LONG_BEFORE_THE_RULE`].
const LONG_MODULES_BEFORE_THE_RULE: &[&str] = &[
    "crates/toolgate-bench/src/agent.rs",
    "crates/toolgate-bench/src/soak.rs",
    "crates/toolgate-wasm/src/lib.rs",
    "crates/toolgate-wasm/src/oci.rs",
    "crates/toolgate-wasm/src/oci/pull.rs",
    "crates/toolgate/src/config/hook.rs",
    "crates/toolgate/src/config/mod.rs",
    "crates/toolgate-agents/src/gemini.rs",
];

#[test]
fn no_module_over_600_lines_without_a_reason_in_its_doc() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = workspace_sources(root);
    let mut listed: BTreeSet<&str> = LONG_MODULES_BEFORE_THE_RULE.iter().copied().collect();
    let mut found = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("source is readable");
        let relative = file.strip_prefix(root).unwrap_or(file);
        let length = text.lines().take_while(|l| *l != "#[cfg(test)]").count();
        let says_why = text
            .lines()
            .take_while(|l| l.starts_with("//!"))
            .any(|l| l.contains("Why one module"));
        if length <= LONG_MODULE || says_why {
            continue;
        }
        match listed.iter().find(|f| Path::new(f) == relative).copied() {
            Some(known) => {
                listed.remove(known);
            }
            None => found.push(format!("{}: {length} lines", relative.display())),
        }
    }
    assert!(
        listed.is_empty(),
        "no longer over {LONG_MODULE} lines, or gone: strike them from \
         LONG_MODULES_BEFORE_THE_RULE: {listed:?}"
    );
    assert!(
        found.is_empty(),
        "modules over {LONG_MODULE} lines (before their tests) whose doc does not say why they \
         are one (`//! # Why one module` or a line saying so); split them or say why:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_library_without_its_wasm_feature_builds_no_wasmtime() {
    // `cargo tree -p toolgate` resolves toolgate's own features: none, as an
    // embedder who asks for nothing gets it.
    let names = builds("toolgate");
    assert!(
        names.contains("toolgate-seam") && names.contains("tokio"),
        "the tree of toolgate was not read: {names:?}"
    );
    for wasm_only in [
        "toolgate-wasm",
        "wasmtime",
        "cranelift-codegen",
        "wit-component",
    ] {
        assert!(
            !names.contains(wasm_only),
            "toolgate without features builds {wasm_only}: {names:?}"
        );
    }
}

/// Where a refusal's wording ([`toolgate::refusal::PHRASES`]) is written
/// outside its module, in `files` (path, text): code before its tests,
/// comments aside.
fn wording_outside(files: &[(PathBuf, String)]) -> Vec<String> {
    let home = Path::new("crates/toolgate-contract/src/refusal.rs");
    let mut found = Vec::new();
    for (path, text) in files {
        if path.ends_with(home) {
            continue;
        }
        let code = text.lines().take_while(|l| l.trim() != "#[cfg(test)]");
        for (n, line) in code.enumerate() {
            let trimmed = line.trim_start();
            if trimmed.starts_with("//") {
                continue;
            }
            for phrase in toolgate::refusal::PHRASES {
                if line.contains(phrase) {
                    found.push(format!("{}:{}: {phrase:?}", path.display(), n + 1));
                }
            }
        }
    }
    found
}

#[test]
fn a_refusals_wording_is_written_only_in_its_module() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut sources = workspace_sources(root);
    rust_files(&root.join("integrations"), &mut sources);
    let files: Vec<(PathBuf, String)> = sources
        .into_iter()
        // A test file may say what it checks for.
        .filter(|f| {
            !f.components()
                .any(|c| c.as_os_str() == "tests" || c.as_os_str() == "examples")
        })
        .map(|f| {
            let text = std::fs::read_to_string(&f).expect("source is readable");
            (f.strip_prefix(root).unwrap_or(&f).to_owned(), text)
        })
        .collect();
    assert!(
        files
            .iter()
            .any(|(p, _)| p.ends_with("crates/toolgate-contract/src/refusal.rs")),
        "the check does not read the module itself"
    );
    let found = wording_outside(&files);
    assert!(
        found.is_empty(),
        "a refusal's words written outside crates/toolgate-contract/src/refusal.rs \
         (call its function instead):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_wording_check_finds_a_copied_phrase_but_not_a_comment_or_a_test() {
    let files = vec![(
        PathBuf::from("crates/x/src/lib.rs"),
        "// a call blocked in a comment\nlet s = \"toolgate: call blocked: no\";\n\
         #[cfg(test)]\nassert!(s.contains(\"call blocked\"));\n"
            .to_owned(),
    )];
    assert_eq!(
        wording_outside(&files),
        ["crates/x/src/lib.rs:2: \"call blocked\""]
    );
}
