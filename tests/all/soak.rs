//! `toolgate bench --soak`: a short soak through the real binary (a real
//! `toolgate serve`, the agent commands' client) passes, and its report and
//! chart carry what the long run is judged by.

use crate::support::{stdout_json, succeeded, toolgate};

/// Every field a sample carries; the JSON report must keep each (a reader
/// of the million-call report relies on them).
const SAMPLE_FIELDS: &[&str] = &[
    "calls",
    "elapsed_s",
    "rss_kib",
    "rss_anon_kib",
    "rss_file_kib",
    "fds",
    "threads",
    "children",
    "cache_bytes",
    "bench_rss_kib",
    "window_calls",
    "p50_us",
    "p99_us",
    "kinds",
];

#[test]
fn a_short_soak_passes_samples_every_gauge_and_writes_a_chart_beside_its_report() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    // No guest examples here (the guests are reported skipped): the wasm
    // binding is the trivial WAT guest, so the test does not wait on
    // compiling every example in a debug build; CI's soak step runs them.
    let guests = dir.path().join("no-guests");
    std::fs::create_dir_all(&guests).unwrap();
    let run = succeeded(
        toolgate()
            .args(["bench", "--soak", "2000", "--sample-every", "500", "--json"])
            .arg("--out")
            .arg(&out)
            .arg("--guests")
            .arg(&guests),
    );
    let report = stdout_json(&run);
    assert_eq!(report["passed"], true, "{report:#}");
    assert_eq!(report["calls"], 2000);
    assert_eq!(report["warmup_calls"], 200);
    let samples = report["samples"].as_array().unwrap();
    assert_eq!(samples.len(), 4, "one every 500 calls: {report:#}");
    for sample in samples.iter().chain([&report["settled"]]) {
        for field in SAMPLE_FIELDS {
            assert!(sample.get(field).is_some(), "{field} missing in {sample}");
        }
        assert!(sample["rss_kib"].as_u64().unwrap() > 0, "{sample}");
        assert!(sample["fds"].as_u64().unwrap() > 0, "{sample}");
        assert!(sample["threads"].as_u64().unwrap() > 0, "{sample}");
    }
    assert!(samples[0]["p99_us"].as_f64().unwrap() >= samples[0]["p50_us"].as_f64().unwrap());
    assert_eq!(report["children_left"], 0);
    // The mix happened: every lane made calls, each answered as expected,
    // and the windows saw failures and timeouts, not only allows.
    for lane in report["lanes"].as_array().unwrap() {
        assert!(lane["calls"].as_u64().unwrap() > 0, "{lane}");
        // A call the server did not acknowledge in time is the client's
        // own to decide, and is counted apart (a loaded machine sees some).
        let not_taken = lane["kinds"]["not taken"].as_u64().unwrap_or(0);
        let expect = lane["expect"].as_str().unwrap();
        if expect != "any" {
            let answered = lane["kinds"][expect].as_u64().unwrap_or(0);
            assert_eq!(
                answered + not_taken,
                lane["calls"].as_u64().unwrap(),
                "{lane}"
            );
        }
    }
    let lanes: Vec<&str> = report["lanes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["lane"].as_str().unwrap())
        .collect();
    for lane in [
        "in-process: allow",
        "subprocess: modify",
        "subprocess: slow",
        "wasm: trivial (WAT)",
    ] {
        assert!(lanes.contains(&lane), "{lanes:?}");
    }
    let seen: Vec<&String> = samples
        .iter()
        .flat_map(|s| s["kinds"].as_object().unwrap().keys())
        .collect();
    for kind in [
        "allow",
        "deny",
        "modify",
        "replace",
        "failed:timed_out",
        "failed:not_a_decision",
    ] {
        assert!(
            seen.iter().any(|k| *k == kind),
            "{kind} never answered: {seen:?}"
        );
    }
    assert_eq!(report["skipped"].as_array().unwrap().len(), 6, "{report:#}");
    for key in ["json_path", "chart_path"] {
        let path = std::path::Path::new(report[key].as_str().unwrap());
        assert!(path.starts_with(&out), "{key}: {}", path.display());
        assert!(std::fs::metadata(path).unwrap().len() > 0, "{key} is empty");
    }
    let chart = std::fs::read_to_string(report["chart_path"].as_str().unwrap()).unwrap();
    // RSS, descriptors, threads, p50 and p99: a line each (and its legend's).
    let lines = chart.matches("stroke-width=\"2\" points=").count();
    assert!(
        chart.starts_with("<svg") && lines >= 5,
        "not the five lines: {lines}"
    );
    let written: serde_json::Value =
        serde_json::from_slice(&std::fs::read(report["json_path"].as_str().unwrap()).unwrap())
            .unwrap();
    assert_eq!(written["samples"], report["samples"]);
}

/// `toolgate bench --load`: a short run through the real binary drives a
/// real server over its socket and over HTTP at each level, with no error,
/// and reports every class's percentiles (and its clients' lateness), the
/// fairness ratio (from when each call was due and from its start), the server's
/// peak memory and descriptors, and a chart beside its JSON.
#[test]
fn a_short_load_run_drives_both_transports_at_each_level_without_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    // The trivial WAT guest and the subprocess hook only (see above).
    let guests = dir.path().join("no-guests");
    std::fs::create_dir_all(&guests).unwrap();
    let run = succeeded(
        toolgate()
            .args([
                "bench",
                "--load",
                "--load-clients",
                "1,4",
                "--load-window",
                "0.3",
                "--load-pace",
                "20",
            ])
            .arg("--json")
            .arg("--out")
            .arg(&out)
            .arg("--guests")
            .arg(&guests),
    );
    let report = stdout_json(&run);
    assert_eq!(report["errors"], 0, "{report:#}");
    let levels = report["levels"].as_array().unwrap();
    let shape: Vec<(String, String, u64)> = levels
        .iter()
        .map(|l| {
            (
                l["transport"].as_str().unwrap().to_owned(),
                l["mix"].as_str().unwrap().to_owned(),
                l["clients"].as_u64().unwrap(),
            )
        })
        .collect();
    // Per level: closed loop, then paced; each over the socket and HTTP
    // with every class, then the fast class alone.
    let want: Vec<(String, String, u64)> = [1, 4]
        .iter()
        .flat_map(|&n| {
            [[0, 1, 2], [0, 1, 2]].concat().into_iter().map(move |i| {
                let (t, m) = [("socket", "mix"), ("http", "mix"), ("socket", "fast alone")][i];
                (t.to_owned(), m.to_owned(), n)
            })
        })
        .collect();
    assert_eq!(shape, want);
    let modes: Vec<&str> = levels.iter().map(|l| l["mode"].as_str().unwrap()).collect();
    assert_eq!(
        &modes[..6],
        [
            "closed loop",
            "closed loop",
            "closed loop",
            "paced",
            "paced",
            "paced"
        ]
    );
    // Paced at 20 a second per client: the offered rate is said.
    assert_eq!(levels[9]["offered_per_s"], 80.0, "{:#}", levels[9]);
    for level in levels {
        assert!(level["calls"].as_u64().unwrap() > 0, "{level}");
        assert!(level["peak_rss_kib"].as_u64().unwrap() > 0, "{level}");
        assert!(level["peak_fds"].as_u64().unwrap() > 0, "{level}");
        for class in level["classes"].as_array().unwrap() {
            assert!(class["calls"].as_u64().unwrap() > 0, "{class}");
            let p = |k: &str| class[k].as_f64().unwrap();
            assert!(p("p50_us") > 0.0 && p("p50_us") <= p("p99_us"), "{class}");
            assert!(p("p99_us") <= p("p999_us"), "{class}");
            // The client's own lateness is part of each latency, and
            // taking it out leaves no more than the whole.
            assert!(p("late_p99_us") >= 0.0, "{class}");
            assert!(
                p("started_p99_us") > 0.0 && p("started_p99_us") <= p("p99_us"),
                "{class}"
            );
        }
    }
    let classes: Vec<&str> = levels[0]["classes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["class"].as_str().unwrap())
        .collect();
    assert_eq!(
        classes,
        [
            "subprocess: allow",
            "subprocess: allow-confined",
            "wasm: trivial (WAT)"
        ]
    );
    let fairness = report["fairness"].as_array().unwrap();
    assert_eq!(
        fairness.len(),
        4,
        "closed loop and paced, per level: {report:#}"
    );
    assert!(
        fairness
            .iter()
            .all(|f| f["ratio"].as_f64().unwrap() > 0.0
                && f["started_ratio"].as_f64().unwrap() > 0.0)
    );
    assert!(
        report["goals"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["goal"] == "no errors at any level" && g["met"] == true),
        "{report:#}"
    );
    let chart = std::fs::read_to_string(report["chart_path"].as_str().unwrap()).unwrap();
    for panel in [
        "closed loop, over the socket",
        "closed loop, over HTTP",
        "paced, over the socket",
    ] {
        assert!(chart.contains(panel), "no panel {panel}");
    }
    let written: serde_json::Value =
        serde_json::from_slice(&std::fs::read(report["json_path"].as_str().unwrap()).unwrap())
            .unwrap();
    assert_eq!(written["levels"], report["levels"]);
}
