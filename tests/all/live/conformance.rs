//! The conformance table: for each agent and version (a column) and each of
//! toolgate's answers (a row), what the live run showed. The live tests
//! record their cells ([`record`]); the cells are kept in
//! `tests/agents/conformance.json`, and the book's table (docs/agents.md) is
//! generated from that file ([`the_book_table_is_the_recorded_conformance`]).
//!
//! A live test fails when what it saw differs from the recorded cell, so the
//! file (and the book) can only say what a real run showed. After a
//! deliberate change — a new agent, a new release — run the live tests with
//! `TOOLGATE_BLESS=1` to rewrite the cells they record, then
//! `TOOLGATE_BLESS=1 cargo test conformance::` to regenerate the book's
//! table, and review both diffs.

use serde_json::{Map, Value, json};
use std::path::PathBuf;
use std::sync::Mutex;

/// The rows: toolgate's answers, and its failures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, strum::Display, strum::VariantArray)]
pub(crate) enum Row {
    #[strum(serialize = "deny (before)")]
    Deny,
    #[strum(serialize = "modify")]
    Modify,
    #[strum(serialize = "ask (before)")]
    Ask,
    #[strum(serialize = "context")]
    Context,
    #[strum(serialize = "replace (before)")]
    PreReplace,
    #[strum(serialize = "replace (after)")]
    PostReplace,
    #[strum(serialize = "deny (after)")]
    PostDeny,
    #[strum(serialize = "a command that fails")]
    FailedCall,
    #[strum(serialize = "a wasm guard denies")]
    WasmGuard,
    #[strum(serialize = "deny at a permission request")]
    PermissionRequest,
    #[strum(serialize = "toolgate cannot evaluate")]
    OwnFailure,
    #[strum(serialize = "toolgate missing, crashing or hanging")]
    Missing,
}

/// One cell: what a run showed.
pub(crate) struct Cell<'a> {
    /// What happened, in a few words (the book shows this).
    pub(crate) summary: &'a str,
    /// What the model was shown, as the test asserted it (verbatim, or the
    /// part the test checked); `None` where the model was shown nothing.
    pub(crate) model_saw: Option<&'a str>,
    /// Whether a real agent run showed it; `false` only for agents that
    /// cannot run here, tested against their documented schema.
    pub(crate) live: bool,
}

fn path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/agents/conformance.json")
}

fn blessing() -> bool {
    std::env::var_os("TOOLGATE_BLESS").is_some_and(|v| v == "1")
}

/// One test at a time reads and writes the file.
static FILE: Mutex<()> = Mutex::new(());

fn load() -> Map<String, Value> {
    match std::fs::read_to_string(path()) {
        Ok(text) => serde_json::from_str(&text).expect("conformance.json is a JSON object"),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Map::new(),
        Err(e) => panic!("{}: {e}", path().display()),
    }
}

/// Records what a run of `column` (`"Claude Code 2.1.197"`) showed for `row`:
/// with `TOOLGATE_BLESS=1` it is written; otherwise it must be what the file
/// already says.
pub(crate) fn record(column: &str, row: Row, cell: Cell<'_>) {
    let value = json!({"summary": cell.summary, "model_saw": cell.model_saw, "live": cell.live});
    let _guard = FILE.lock().unwrap_or_else(|e| e.into_inner());
    let mut table = load();
    let recorded = table.get(column).and_then(|c| c.get(row.to_string()));
    if recorded == Some(&value) {
        return;
    }
    assert!(
        blessing(),
        "{column}, {row}: the run showed {value:#}, but tests/agents/conformance.json says {:#}; \
         if the change is meant, rerun with TOOLGATE_BLESS=1 and review the diff",
        recorded.unwrap_or(&Value::Null)
    );
    table
        .entry(column.to_owned())
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .expect("a column is an object")
        .insert(row.to_string(), value);
    let text = serde_json::to_string_pretty(&Value::Object(table)).unwrap() + "\n";
    std::fs::write(path(), text).unwrap();
}

/// Records a live cell of the column of `agent` at the release pinned under
/// `var` in tests/agents/versions.env (`"Codex 0.171.0"`).
pub(crate) fn saw_live(agent: &str, var: &str, row: Row, summary: &str, model_saw: Option<&str>) {
    let column = format!("{agent} {}", super::pinned(var));
    let cell = Cell {
        summary,
        model_saw,
        live: true,
    };
    record(&column, row, cell);
}

/// The book's table (docs/agents.md), from the recorded cells: rows in [`Row`]'s order,
/// columns in the file's order.
fn render(table: &Map<String, Value>) -> String {
    use strum::VariantArray;
    let mut out = String::from("| toolgate's answer |");
    for column in table.keys() {
        out += &format!(" {column} |");
    }
    out += "\n|---|";
    out += &"---|".repeat(table.len());
    out += "\n";
    for row in Row::VARIANTS {
        out += &format!("| {row} |");
        for cells in table.values() {
            let cell = &cells[row.to_string()];
            let text = match cell["summary"].as_str() {
                None => "—".to_owned(),
                Some(summary) if cell["live"] == false => format!("{summary} (not verified live)"),
                Some(summary) => summary.to_owned(),
            };
            out += &format!(" {} |", text.replace('|', "\\|"));
        }
        out += "\n";
    }
    out
}

const BEGIN: &str = "<!-- conformance table: generated from tests/agents/conformance.json -->\n";
const END: &str = "<!-- end of conformance table -->\n";

#[test]
fn the_book_table_is_the_recorded_conformance() {
    let page_path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/agents.md");
    let readme = std::fs::read_to_string(&page_path).unwrap();
    let table = render(&load());
    let (Some(start), Some(end)) = (readme.find(BEGIN), readme.find(END)) else {
        panic!("docs/agents.md has no conformance table between {BEGIN:?} and {END:?}");
    };
    let current = &readme[start + BEGIN.len()..end];
    if current == table {
        return;
    }
    assert!(
        blessing(),
        "docs/agents.md's conformance table is not the one tests/agents/conformance.json gives; \
         rerun with TOOLGATE_BLESS=1 to regenerate it:\n{table}"
    );
    let updated = format!("{}{BEGIN}{table}{}", &readme[..start], &readme[end..]);
    std::fs::write(&page_path, updated).unwrap();
}
