//! The book's table of environment variables (docs/environment.md) is the whole list: a
//! variable the code reads that the table lacks is a switch no user can find
//! (and that the suite's hermetic `toolgate` would let through from the
//! developer's shell), and a row the code no longer reads is a promise of a
//! switch that does nothing. This module reads the code for the variables it
//! reads and compares them with the table, both ways, and with what
//! [`support::BINARY_ENV`](crate::support::BINARY_ENV) gives each test's
//! `toolgate`.

use crate::support::{BINARY_ENV, LIBRARY_SOURCES, binary_sources};
use regex::Regex;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, as `(path, source)` with line comments
/// and `#[cfg(test)] mod … { … }` blocks (unit tests: not the binary)
/// removed.
fn sources(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut files = Vec::new();
    let mut dirs = vec![dir.to_owned()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().map(Result::unwrap) {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                files.push((path, without_tests(&text)));
            }
        }
    }
    files.sort();
    files
}

/// `text` without line comments and `#[cfg(test)]` modules. Lines stay
/// where they were (blanked), so a read is reported on its own line.
fn without_tests(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut kept = Vec::with_capacity(lines.len());
    let mut depth: Option<i64> = None;
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        if let Some(d) = depth.as_mut() {
            *d += line.matches('{').count() as i64 - line.matches('}').count() as i64;
            if *d <= 0 {
                depth = None;
            }
            kept.push("");
            continue;
        }
        let test_module = trimmed == "#[cfg(test)]"
            && lines.get(i + 1).is_some_and(|next| {
                let next = next.trim_start();
                (next.starts_with("mod ") || next.starts_with("pub(crate) mod "))
                    && next.trim_end().ends_with('{')
            });
        if test_module {
            depth = Some(0);
            kept.push("");
        } else if trimmed.starts_with("//") {
            kept.push("");
        } else {
            kept.push(line);
        }
    }
    kept.join("\n")
}

/// Where the code reads a variable, and which (`None`: it cannot be told).
#[derive(Debug)]
struct Read {
    at: String,
    name: Option<String>,
}

/// The argument of a read: a literal, a `const`, a parameter, or other.
const ARG: &str = r#"(?:"([A-Z][A-Z0-9_]*)"|([A-Z][A-Z0-9_]*)|&?([a-z_][a-z0-9_]*)|(.*?))"#;

/// The variables the code in `files` reads: `std::env::var`/`var_os` on a
/// literal, a `const`, or a parameter of a function (whose callers then name
/// the variable, as `env::dir("HOME")` does); tracing's `try_from_env`;
/// clap's `env = "…"`; an agent's project variable (below); a variable
/// the user names in `--upstream-header` (`named_by_user`, one place); and `TMPDIR` through `std::env::temp_dir` or a
/// `tempfile` made outside a given directory. A read it cannot name (a
/// computed name, every variable at once) is a `Read` with no name.
fn reads(files: &[(PathBuf, String)]) -> Vec<Read> {
    let direct = Regex::new(&format!(
        r"(?:\benv::var(?:_os)?|\btry_from_env|\bfrom_env)\(\s*{ARG}\s*\)"
    ))
    .unwrap();
    let clap = Regex::new(r#"\benv\s*=\s*"([A-Z][A-Z0-9_]*)""#).unwrap();
    let unnamed = Regex::new(
        r"\benv::vars(?:_os)?\(|\bfrom_default_env\(|#\[(?:arg|clap)\([^\]]*\benv\s*[,)]",
    )
    .unwrap();
    let tmpdir = Regex::new(
        r"\benv::temp_dir\b|\btempfile::(?:tempdir|tempfile|NamedTempFile::new)\(\)|\.tempdir\(\)",
    )
    .unwrap();
    let consts: BTreeMap<String, String> = files
        .iter()
        .flat_map(|(_, code)| {
            Regex::new(r#"const ([A-Z][A-Z0-9_]*): &str = "([A-Z][A-Z0-9_]*)";"#)
                .unwrap()
                .captures_iter(code)
                .map(|c| (c[1].to_owned(), c[2].to_owned()))
                .collect::<Vec<_>>()
        })
        .collect();
    let fns = Regex::new(r"fn ([a-z_][a-z0-9_]*)\s*(?:<[^>]*>)?\(([^)]*)\)").unwrap();
    let mut found = Vec::new();
    // Functions that pass a parameter to a read: their callers name it.
    let mut wrappers: Vec<String> = Vec::new();
    let at = |path: &Path, code: &str, offset: usize| {
        let line = code[..offset].lines().count().max(1);
        let file = path
            .strip_prefix(env!("CARGO_MANIFEST_DIR"))
            .unwrap_or(path);
        format!("{}:{line}", file.display())
    };
    // The variable an argument names, or the function whose parameter it is.
    let resolve = |code: &str, c: &regex::Captures<'_>| -> Result<Option<String>, String> {
        if let Some(literal) = c.get(1) {
            Ok(Some(literal.as_str().to_owned()))
        } else if let Some(constant) = c.get(2) {
            Ok(consts.get(constant.as_str()).cloned())
        } else if let Some(param) = c.get(3) {
            let param = Regex::new(&format!(r"\b{}\s*:", param.as_str())).unwrap();
            let offset = c.get(0).unwrap().start();
            match fns.captures_iter(&code[..offset]).last() {
                Some(f) if param.is_match(&f[2]) => Err(f[1].to_owned()),
                _ => Ok(None),
            }
        } else {
            Ok(None)
        }
    };
    // An agent's project variable is named by its dialect
    // (`fn project_var(&self) … { Some("CLAUDE_PROJECT_DIR") }` in
    // crates/toolgate-agents/src/) and read by the lean client as `var_os(project_var)`:
    // that read reads every name a dialect gives.
    let dialect_var =
        Regex::new(r#"fn project_var\(&self\)[^{]*\{(?:[^}]|\n)*?Some\("([A-Z][A-Z0-9_]*)"\)"#)
            .unwrap();
    let project_vars: Vec<String> = files
        .iter()
        .flat_map(|(_, code)| {
            dialect_var
                .captures_iter(code)
                .map(|c| c[1].to_owned())
                .collect::<Vec<_>>()
        })
        .collect();
    // The variables an agent's spec names for doctor and install
    // (`var: "CLAUDE_CONFIG_DIR"`, `var: Some("GEMINI_CLI_SYSTEM_SETTINGS_PATH")`
    // in crates/toolgate-agents/src/), read as `env::dir(agent_var)`:
    // that read reads every name a spec gives.
    let spec_var = Regex::new(r#"\bvar:\s*(?:Some\()?"([A-Z][A-Z0-9_]*)""#).unwrap();
    let agent_vars: Vec<String> = files
        .iter()
        .filter(|(path, _)| {
            path.to_string_lossy()
                .contains("crates/toolgate-agents/src/")
        })
        .flat_map(|(_, code)| {
            spec_var
                .captures_iter(code)
                .map(|c| c[1].to_owned())
                .collect::<Vec<_>>()
        })
        .collect();
    let every_agent_var = |at: String| {
        agent_vars
            .iter()
            .map(|name| Read {
                at: at.clone(),
                name: Some(name.clone()),
            })
            .collect::<Vec<_>>()
    };
    for (path, code) in files {
        for c in direct.captures_iter(code) {
            if c.get(3).is_some_and(|p| p.as_str() == "agent_var") {
                found.extend(every_agent_var(at(path, code, c.get(0).unwrap().start())));
                continue;
            }
            // The variables an operator names in `toolgate mcp
            // --upstream-header '…${VAR}…'`: chosen on the command line,
            // not read by toolgate of its own (docs/environment.md says
            // so below its table). Only that one place may read so.
            if c.get(3).is_some_and(|p| p.as_str() == "named_by_user") {
                assert!(
                    path.ends_with("src/cli/mcp.rs"),
                    "{}: only --upstream-header's expansion reads a variable the user names",
                    at(path, code, c.get(0).unwrap().start())
                );
                continue;
            }
            if c.get(3).is_some_and(|p| p.as_str() == "project_var") {
                for name in &project_vars {
                    found.push(Read {
                        at: at(path, code, c.get(0).unwrap().start()),
                        name: Some(name.clone()),
                    });
                }
                continue;
            }
            match resolve(code, &c) {
                Ok(name) => found.push(Read {
                    at: at(path, code, c.get(0).unwrap().start()),
                    name,
                }),
                Err(wrapper) => wrappers.push(wrapper),
            }
        }
        for (pattern, name) in [(&clap, None), (&unnamed, None), (&tmpdir, Some("TMPDIR"))] {
            for c in pattern.captures_iter(code) {
                let name = name
                    .map(str::to_owned)
                    .or_else(|| c.get(1).map(|m| m.as_str().to_owned()));
                found.push(Read {
                    at: at(path, code, c.get(0).unwrap().start()),
                    name,
                });
            }
        }
    }
    // Calls of the wrappers (and of wrappers of wrappers), not their
    // definitions nor methods of the same name.
    let mut seen = BTreeSet::new();
    while let Some(wrapper) = wrappers.pop() {
        if !seen.insert(wrapper.clone()) {
            continue;
        }
        let call = Regex::new(&format!(r"(?:^|[^\w.:]|\benv::){wrapper}\(\s*{ARG}\s*\)")).unwrap();
        for (path, code) in files {
            for c in call.captures_iter(code) {
                let offset = c.get(0).unwrap().start();
                if code[..offset + 1].ends_with("fn ") {
                    continue;
                }
                if c.get(3).is_some_and(|p| p.as_str() == "agent_var") {
                    found.extend(every_agent_var(at(path, code, offset)));
                    continue;
                }
                match resolve(code, &c) {
                    Ok(name) => found.push(Read {
                        at: at(path, code, offset),
                        name,
                    }),
                    Err(wrapper) => wrappers.push(wrapper),
                }
            }
        }
    }
    found
}

/// The book's "Environment" table (docs/environment.md): the variable of
/// each row.
fn environment_table() -> BTreeSet<String> {
    let section =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/environment.md"))
            .expect("the book has an Environment page");
    let section = section.as_str();
    let row = Regex::new(r"(?m)^\| `([A-Z][A-Z0-9_]*)` \|").unwrap();
    let names: Vec<String> = row
        .captures_iter(section)
        .map(|c| c[1].to_owned())
        .collect();
    let unique: BTreeSet<String> = names.iter().cloned().collect();
    assert_eq!(
        unique.len(),
        names.len(),
        "a variable has two rows: {names:?}"
    );
    unique
}

/// The sources under each of `dirs` (relative to the repository root).
fn sources_in(dirs: &[&str]) -> Vec<(PathBuf, String)> {
    dirs.iter()
        .flat_map(|dir| sources(&Path::new(env!("CARGO_MANIFEST_DIR")).join(dir)))
        .collect()
}

/// What the code reads, by name; fails on a read whose variable it cannot
/// tell.
fn read_by(dirs: &[&str]) -> BTreeMap<String, Vec<String>> {
    let files = sources_in(dirs);
    assert!(!files.is_empty(), "no sources under {dirs:?}");
    let mut by_name: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for read in reads(&files) {
        let name = read.name.unwrap_or_else(|| {
            panic!(
                "{}: reads an environment variable this test cannot name; read it by a literal \
                 or a `const NAME: &str = \"…\"`",
                read.at
            )
        });
        by_name.entry(name).or_default().push(read.at);
    }
    by_name
}

#[test]
fn every_variable_the_binary_reads_is_in_the_environment_table_and_no_other() {
    // The binary is the command-line tool and every crate it is built on
    // (read together: a name a library declares, the tool may read).
    let code = read_by(&binary_sources());
    let table = environment_table();
    // The reads this test must find, or it is not reading the code.
    for known in ["TOOLGATE_CONFIG_DIR", "HOME", "TOOLGATE_LOG", "NO_COLOR"] {
        assert!(code.contains_key(known), "{known} was not found: {code:#?}");
    }
    let missing: Vec<String> = code
        .iter()
        .filter(|(name, _)| !table.contains(*name))
        .map(|(name, at)| format!("{name} (read at {})", at.join(", ")))
        .collect();
    assert!(
        missing.is_empty(),
        "read by the code but not in the Environment table (docs/environment.md): {missing:#?}"
    );
    let stale: Vec<&String> = table.iter().filter(|n| !code.contains_key(*n)).collect();
    assert!(
        stale.is_empty(),
        "in the Environment table (docs/environment.md) but read nowhere in the sources: {stale:?}"
    );
}

#[test]
fn the_suites_toolgate_is_given_every_variable_in_the_table() {
    let table = environment_table();
    let given: BTreeSet<String> = BINARY_ENV.iter().map(|(k, _)| (*k).to_owned()).collect();
    assert_eq!(
        given, table,
        "support::BINARY_ENV and the Environment table (docs/environment.md) list different variables"
    );
}

#[test]
fn the_library_an_embedder_builds_reads_no_variable_of_its_own() {
    // The integrations read none; the core library only the system's
    // temporary directory (where the standard library's temp_dir looks).
    let integrations = read_by(&["integrations/mentra/src"]);
    assert!(integrations.is_empty(), "{integrations:#?}");
    let library = sources_in(LIBRARY_SOURCES);
    let names: BTreeSet<String> = reads(&library).into_iter().filter_map(|r| r.name).collect();
    assert_eq!(names, BTreeSet::from(["TMPDIR".to_owned()]));
}
