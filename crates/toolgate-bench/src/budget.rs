//! The performance budget (DESIGN.md), each target against one run: the
//! targets a change must keep, in one place, so a regression shows as a
//! target not met rather than a number someone has to remember.

use super::report::{Row, Target};

/// Every target that applies to this run's rows.
pub(crate) fn budget(
    rows: &[Row],
    reference: &Row,
    reference_name: &str,
    threads_ratio: f64,
    log_median_us: f64,
) -> Vec<Target> {
    let mut budget = wasm_targets(rows, reference, reference_name);
    budget.extend(rows.iter().filter_map(agent_path_target));
    budget.extend(lean_client_targets(rows));
    budget.extend(served_python_target(rows));
    budget.push(Target::new(
        "calls/s with 2 threads ≥ 1.7× one thread".into(),
        threads_ratio,
        1.7,
        "×",
        false,
    ));
    budget.push(Target::new(
        "decision log per decision median ≤ 5 µs".into(),
        log_median_us,
        5.0,
        "µs",
        true,
    ));
    budget
}

/// The in-process targets: the reference guest, a chain of three, the
/// ratio to subprocess hooks, a fresh `toolgate check`, and the guests
/// with a language runtime.
fn wasm_targets(rows: &[Row], reference: &Row, reference_name: &str) -> Vec<Target> {
    let find = |prefix: &str| rows.iter().find(|r| r.scenario.starts_with(prefix));
    let at_most =
        |target: String, value, limit, unit| Target::new(target, value, limit, unit, true);
    let mut budget = vec![
        at_most(
            format!("{reference_name} median ≤ 5 µs"),
            reference.median_us,
            5.0,
            "µs",
        ),
        at_most(
            format!("{reference_name} p99 ≤ 20 µs"),
            reference.p99_us,
            20.0,
            "µs",
        ),
    ];
    if let Some(r) = find("wasm chain of 3") {
        budget.push(at_most(
            "chain of three wasm hooks median ≤ 15 µs".into(),
            r.median_us,
            15.0,
            "µs",
        ));
    }
    let fastest_sub = rows
        .iter()
        .filter(|r| r.scenario.starts_with("subprocess"))
        .map(|r| r.median_us)
        .fold(f64::INFINITY, f64::min);
    budget.push(Target::new(
        "≥ 150× faster than the fastest subprocess hook".into(),
        fastest_sub / reference.median_us,
        150.0,
        "×",
        false,
    ));
    if let Some(r) = find("subprocess: python") {
        budget.push(Target::new(
            "≥ 5,000× faster than the Python subprocess hook".into(),
            r.median_us / reference.median_us,
            5000.0,
            "×",
            false,
        ));
    }
    if let Some(r) = find("`toolgate check`") {
        budget.push(at_most(
            "`toolgate check` fresh process, warm cache ≤ 3 ms".into(),
            r.median_us / 1e3,
            3.0,
            "ms",
        ));
    }
    for lang in ["js-", "javascript-", "python-", "py-"] {
        if let Some(r) = find(&format!("wasm: {lang}")) {
            budget.push(at_most(
                format!("{} ≤ 1 ms per call", r.scenario),
                r.median_us / 1e3,
                1.0,
                "ms",
            ));
        }
    }
    budget
}

/// Each lean client through the server (the one beside `toolgate`, then
/// any other build measured) against a C program that does nothing,
/// spawned the same way in the same rounds: the ratio of their medians
/// (what a hook process costs beyond the floor of being one).
fn lean_client_targets(rows: &[Row]) -> Vec<Target> {
    let Some(floor) = rows
        .iter()
        .find(|r| r.scenario == super::setup::DO_NOTHING_ROW)
    else {
        return Vec::new();
    };
    rows.iter()
        .filter_map(|r| {
            let named = super::setup::lean_client_of(&r.scenario)?;
            Some(Target::new(
                format!(
                    "lean client{named} through the server ≤ 1.3× a do-nothing C program spawned \
                     the same way"
                ),
                r.median_us / floor.median_us,
                1.3,
                "×",
                true,
            ))
        })
        .collect()
}

/// The Python guest through the server against the same guard as a Python
/// subprocess hook through the same server, both as the agent calls them
/// (a process per call): what moving a Python hook into a component buys.
fn served_python_target(rows: &[Row]) -> Option<Target> {
    const SERVED: &str = "agent path via `toolgate serve` + ";
    let served = |what: &str| {
        rows.iter().find(|r| {
            r.scenario
                .strip_prefix(SERVED)
                .is_some_and(|s| s.starts_with(what))
        })
    };
    let (guest, script) = (served("wasm: python-")?, served("python script")?);
    Some(Target::new(
        "agent path via the server, Python guest ≤ 0.1× the Python subprocess hook".into(),
        guest.median_us / script.median_us,
        0.1,
        "×",
        true,
    ))
}

/// The agent path (fast where agents call it): a fresh process per call
/// with a warm cache; through a running server; one socket request.
fn agent_path_target(r: &Row) -> Option<Target> {
    let ms = r.median_us / 1e3;
    if let Some(what) = r
        .scenario
        .strip_prefix("agent path: `toolgate claude-code` + wasm: ")
    {
        let small =
            what.starts_with("c-") || what.starts_with("rust-") || what.starts_with("trivial");
        let limit = if small { 5.0 } else { 20.0 };
        Some(Target::new(
            format!("agent path, no server, {what} ≤ {limit} ms"),
            ms,
            limit,
            "ms",
            true,
        ))
    } else if let Some(what) = r
        .scenario
        .strip_prefix("agent path via `toolgate serve` + wasm: ")
    {
        Some(Target::new(
            format!("agent path via the server, {what} ≤ 3 ms"),
            ms,
            3.0,
            "ms",
            true,
        ))
    } else if let Some(named) = super::setup::lean_client_of(&r.scenario) {
        Some(Target::new(
            format!("lean client{named} through the server ≤ 1.5 ms"),
            ms,
            1.5,
            "ms",
            true,
        ))
    } else if r.scenario.starts_with("HTTP request to the server") {
        Some(Target::new(
            "HTTP request to the server ≤ 300 µs".into(),
            r.median_us,
            300.0,
            "µs",
            true,
        ))
    } else {
        r.scenario
            .strip_prefix("one request over the socket to `toolgate serve` ")
            .map(|what| {
                Target::new(
                    format!("socket request ≤ 30 µs {what}"),
                    r.median_us,
                    30.0,
                    "µs",
                    true,
                )
            })
    }
}
