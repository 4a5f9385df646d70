//! The decision log's hash chain and signed checkpoints (issue 40), each
//! tried as an attacker with the user's permissions would: a record
//! edited, removed, inserted, reordered; a tail cut mid-record; writers
//! killed mid-write; the whole chain rewritten with every hash recomputed;
//! a checkpoint key others can read. Keys are made by Debian's `minisign`.

use crate::support::{Fixture, run_with_stdin, stderr, toolgate};
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A global hook that allows, with a line of stderr long enough to make
/// each record a few hundred bytes.
const ALLOWING: &str =
    "#!/bin/sh\ncat >/dev/null\necho 'looked at it' >&2\necho '{\"decision\":\"allow\"}'\n";

fn fixture() -> (Fixture, PathBuf) {
    let fx = Fixture::new();
    let guard = fx.global_script("guard.sh", ALLOWING);
    fx.global_hooks(json!([{"name": "guard", "command": [guard]}]));
    let log = fx.dir.path().join("logs/decisions.jsonl");
    (fx, log)
}

/// One `toolgate check` of `tool`, logging to `log`.
fn call(fx: &Fixture, log: &Path, tool: &str, max_bytes: Option<u64>) {
    let mut cmd = toolgate();
    cmd.args(["check", "--workspace"])
        .arg(fx.workspace())
        .env("TOOLGATE_CONFIG_DIR", fx.global())
        .env("TOOLGATE_DECISION_LOG", log);
    if let Some(n) = max_bytes {
        cmd.env("TOOLGATE_DEBUG_DECISION_LOG_MAX_BYTES", n.to_string());
    }
    let request = json!({"event": "pre_tool_use", "tool": tool, "input": {"n": 1}});
    let out = run_with_stdin(&mut cmd, &request.to_string());
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));
}

/// `toolgate log verify --json` on `log` with `extra` arguments: its exit
/// code and report.
fn verify(log: &Path, extra: &[&str]) -> (i32, Value) {
    let out = toolgate()
        .args(["log", "verify", "--json", "--file"])
        .arg(log)
        .args(extra)
        .output()
        .unwrap();
    let report = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {} {}",
            String::from_utf8_lossy(&out.stdout),
            stderr(&out)
        )
    });
    (out.status.code().unwrap(), report)
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn write_lines(path: &Path, lines: &[String]) {
    std::fs::write(
        path,
        lines.iter().map(|l| format!("{l}\n")).collect::<String>(),
    )
    .unwrap();
}

fn rotated(log: &Path, n: u32) -> PathBuf {
    PathBuf::from(format!("{}.{n}", log.display()))
}

/// A fresh log of `n` calls, `tool-1` … `tool-n`.
fn log_of(n: usize) -> (Fixture, PathBuf) {
    let (fx, log) = fixture();
    for i in 1..=n {
        call(&fx, &log, &format!("tool-{i}"), None);
    }
    (fx, log)
}

#[test]
fn every_record_chains_to_the_one_before_it_even_across_rotation() {
    let (fx, log) = fixture();
    for i in 0..24 {
        call(&fx, &log, &format!("tool-{i}"), Some(3000));
    }
    let (code, report) = verify(&log, &[]);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["problem"], Value::Null);
    assert_eq!(report["files"].as_array().unwrap().len(), 4, "{report:#}");
    assert_eq!(
        report["from_genesis"], false,
        "the oldest were rotated away"
    );
    assert_eq!(report["last_seq"], 24);
    // The first record of each file names the last of the one before.
    for n in [3, 2, 1] {
        let older = lines(&rotated(&log, n));
        let newer = if n == 1 {
            lines(&log)
        } else {
            lines(&rotated(&log, n - 1))
        };
        let last: Value = serde_json::from_str(older.last().unwrap()).unwrap();
        let first: Value = serde_json::from_str(&newer[0]).unwrap();
        assert_eq!(first["prev"], last["hash"]);
        assert_eq!(first["seq"].as_u64(), last["seq"].as_u64().map(|s| s + 1));
    }
}

#[test]
fn verify_names_the_first_record_edited_removed_inserted_or_reordered() {
    let (_fx, log) = log_of(6);
    let original = lines(&log);
    let cases: Vec<(&str, Vec<String>, usize)> = vec![
        (
            "edited",
            original
                .iter()
                .enumerate()
                .map(|(i, l)| {
                    if i == 2 {
                        l.replace("tool-3", "tool-X")
                    } else {
                        l.clone()
                    }
                })
                .collect(),
            3,
        ),
        ("removed", [&original[..2], &original[3..]].concat(), 3),
        (
            "inserted",
            [&original[..5], &original[1..2], &original[5..]].concat(),
            6,
        ),
        (
            "reordered",
            [
                &original[..1],
                &original[2..3],
                &original[1..2],
                &original[3..],
            ]
            .concat(),
            2,
        ),
    ];
    for (kind, tampered, line) in cases {
        write_lines(&log, &tampered);
        let (code, report) = verify(&log, &[]);
        assert_eq!(code, 2, "{kind}: {report:#}");
        assert_eq!(report["problem"]["kind"], kind, "{report:#}");
        assert_eq!(report["problem"]["line"], line, "{kind}: {report:#}");
    }
    // A record whose text and hash were both rewritten: the next one
    // no longer follows it.
    let mut resealed = original.clone();
    resealed[2] = reseal(&original[2].replace("tool-3", "tool-X"));
    write_lines(&log, &resealed);
    let (code, report) = verify(&log, &[]);
    assert_eq!(code, 2);
    assert_eq!(report["problem"]["kind"], "edited", "{report:#}");
    assert_eq!(report["problem"]["seq"], 4, "named at the record after it");
    // Records cut from the start of a log that was never rotated.
    write_lines(&log, &original[2..]);
    let (code, report) = verify(&log, &[]);
    assert_eq!(code, 2);
    assert_eq!(report["problem"]["kind"], "removed", "{report:#}");
    // The untouched log verifies.
    write_lines(&log, &original);
    assert_eq!(verify(&log, &[]).0, 0);
}

/// `line` with its hash recomputed over its text, as an attacker who read
/// the format would do.
fn reseal(line: &str) -> String {
    let cut = line.len() - 75;
    let body = format!("{}}}", &line[..cut]);
    let hash = blake3::hash(body.as_bytes()).to_hex();
    format!("{},\"hash\":\"{hash}\"}}", &line[..cut])
}

/// The whole chain rewritten from `lines`, `edit` applied to each record's
/// text, every number, `prev` and hash recomputed in order.
fn rewrite(lines: &[String], edit: impl Fn(&str) -> String) -> Vec<String> {
    let mut prev = "0".repeat(64);
    lines
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let edited = edit(l);
            // `,"seq":N,"prev":"<64>","hash":"<64>"}` ends every record.
            let head = &edited[..edited.len() - 74 - 75];
            let head = format!(
                "{},\"seq\":{}",
                &head[..head.rfind(",\"seq\":").unwrap()],
                i + 1
            );
            let text = format!("{head},\"prev\":\"{prev}\"}}");
            let hash = blake3::hash(text.as_bytes()).to_hex().to_string();
            let line = format!("{head},\"prev\":\"{prev}\",\"hash\":\"{hash}\"}}");
            prev = hash;
            line
        })
        .collect()
}

#[test]
fn a_torn_last_record_is_reported_then_cut_and_recorded_by_the_next_writer() {
    let (fx, log) = log_of(4);
    let fourth = lines(&log)[3].len() + 1;
    let whole = std::fs::read(&log).unwrap();
    // What a writer killed inside its write leaves: part of a line.
    std::fs::write(&log, &whole[..whole.len() - 100]).unwrap();
    let (code, report) = verify(&log, &[]);
    assert_eq!(code, 2);
    assert_eq!(report["problem"]["kind"], "torn_tail", "{report:#}");
    assert_eq!(report["last_seq"], 3, "whole up to the last whole record");
    call(&fx, &log, "after", None);
    let (code, report) = verify(&log, &[]);
    assert_eq!(code, 0, "{report:#}");
    let torn = (fourth - 100) as u64;
    assert_eq!(report["torn_repaired"], json!([[4, torn]]), "{report:#}");
    let last: Value = serde_json::from_str(lines(&log).last().unwrap()).unwrap();
    assert_eq!(last["tool"], "after");
    assert_eq!(last["seq"], 4, "it takes the cut record's place");
}

#[test]
fn writers_killed_at_random_moments_leave_a_chain_that_verifies() {
    let (fx, log) = fixture();
    // Long records (a hook's long stderr), so writes span pages.
    let loud = fx.global_script(
        "loud.sh",
        "#!/bin/sh\ncat >/dev/null\ni=0; while [ $i -lt 300 ]; do echo \"diagnostic line $i ......................................\" >&2; i=$((i+1)); done\necho '{\"decision\":\"allow\"}'\n",
    );
    fx.global_hooks(json!([{"name": "loud", "command": [loud]}]));
    for round in 0..40u64 {
        let mut cmd = toolgate();
        cmd.args(["check", "--workspace"])
            .arg(fx.workspace())
            .env("TOOLGATE_CONFIG_DIR", fx.global())
            .env("TOOLGATE_DECISION_LOG", &log)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        let mut child = cmd.spawn().unwrap();
        use std::io::Write;
        let _ = child
            .stdin
            .take()
            .unwrap()
            .write_all(br#"{"event":"pre_tool_use","tool":"t","input":{}}"#);
        // From before the hook runs (~10 ms in a debug build) to after the
        // record is written: some kills land around the write.
        std::thread::sleep(std::time::Duration::from_micros(round * 400));
        let _ = child.kill();
        let _ = child.wait();
        // Whatever it left, the chain holds up to its last whole record.
        if log.exists() {
            let (code, report) = verify(&log, &[]);
            assert!(
                code == 0 || report["problem"]["kind"] == "torn_tail",
                "{report:#}"
            );
        }
    }
    call(&fx, &log, "last", None);
    let (code, report) = verify(&log, &[]);
    assert_eq!(code, 0, "{report:#}");
    let written = report["records"].as_u64().unwrap();
    assert!(
        written > 1 && written < 41,
        "some killed writers got to write, some did not: {written}"
    );
}

/// A minisign key pair made by Debian's `minisign -G -W` in `dir`: the
/// secret key's path and the public key's.
fn key_pair(dir: &Path) -> (PathBuf, PathBuf) {
    let (sk, pk) = (dir.join("log.key"), dir.join("log.pub"));
    let out = Command::new("minisign")
        .args(["-G", "-W", "-f", "-p"])
        .arg(&pk)
        .arg("-s")
        .arg(&sk)
        .output()
        .expect("minisign is installed (test.sh)");
    assert!(out.status.success(), "{}", stderr(&out));
    std::fs::set_permissions(&sk, std::fs::Permissions::from_mode(0o600)).unwrap();
    (sk, pk)
}

fn checkpoint(log: &Path, key: &Path) -> std::process::Output {
    toolgate()
        .args(["log", "checkpoint", "--key"])
        .arg(key)
        .arg("--file")
        .arg(log)
        .output()
        .unwrap()
}

#[test]
fn a_signed_checkpoint_catches_a_chain_rewritten_with_every_hash_recomputed() {
    let (fx, log) = log_of(3);
    let (sk, pk) = key_pair(fx.dir.path());
    let pk = pk.to_str().unwrap();
    let out = checkpoint(&log, &sk);
    assert!(out.status.success(), "{}", stderr(&out));
    call(&fx, &log, "tool-4", None);
    let (code, report) = verify(&log, &["--pubkey", pk]);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["checkpoints_verified"], 1);
    assert_eq!(report["signed_through"], 3);
    assert_eq!(report["unsigned_after"], 2, "the checkpoint and tool-4");
    // The signature is minisign's own: minisign -V checks it over the statement.
    let record: Value = serde_json::from_str(&lines(&log)[3]).unwrap();
    let statement = fx.dir.path().join("statement");
    std::fs::write(
        &statement,
        format!(
            "toolgate decision log checkpoint\nseq 3\nhash {}\n",
            record["prev"].as_str().unwrap()
        ),
    )
    .unwrap();
    std::fs::write(
        fx.dir.path().join("statement.minisig"),
        record["signature"].as_str().unwrap(),
    )
    .unwrap();
    let out = Command::new("minisign")
        .args(["-V", "-p", pk, "-m"])
        .arg(&statement)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));

    // The whole chain rewritten, record 2 changed, every hash recomputed:
    // the chain alone cannot tell, the signature can.
    let original = lines(&log);
    write_lines(&log, &rewrite(&original, |l| l.replace("tool-2", "tool-X")));
    let (code, report) = verify(&log, &[]);
    assert_eq!(code, 0, "the chain alone is fooled: {report:#}");
    let (code, report) = verify(&log, &["--pubkey", pk]);
    assert_eq!(code, 2, "{report:#}");
    assert_eq!(report["problem"]["kind"], "bad_signature", "{report:#}");
    // Rewritten without the checkpoint: nothing signed covers it.
    let without: Vec<String> = original
        .iter()
        .filter(|l| !l.contains("\"checkpoint\""))
        .cloned()
        .collect();
    write_lines(&log, &rewrite(&without, |l| l.replace("tool-2", "tool-X")));
    let (code, report) = verify(&log, &["--pubkey", pk]);
    assert_eq!(code, 2, "{report:#}");
    assert_eq!(report["problem"]["kind"], "unsigned", "{report:#}");
    // Another key's checkpoint is not the operator's.
    write_lines(&log, &original);
    let other = tempfile::tempdir().unwrap();
    let (_, other_pk) = key_pair(other.path());
    let (code, report) = verify(&log, &["--pubkey", other_pk.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert_eq!(report["problem"]["kind"], "bad_signature", "{report:#}");
}

/// Signed checkpoints protected only what came before the first one: a
/// record a later checkpoint covered could be rewritten, the chain
/// resealed and that checkpoint dropped, and `verify --pubkey` said
/// whole; a log cut back to its first checkpoint passed too. A witness
/// file (`log checkpoint --witness`, kept by an account the user cannot
/// write as) is what the auditor holds: `verify --witness` finds every
/// checkpoint it kept in the log, with its hash, or says the log was
/// rolled back or rewritten.
#[test]
fn a_witnessed_checkpoint_catches_a_rollback_and_a_rewrite_with_a_later_checkpoint_dropped() {
    let (fx, log) = log_of(2);
    let (sk, pk) = key_pair(fx.dir.path());
    let pk = pk.to_str().unwrap();
    let witness = fx.dir.path().join("auditor/witness.jsonl");
    std::fs::create_dir_all(witness.parent().unwrap()).unwrap();
    let checkpoint_witnessed = || {
        let out = toolgate()
            .args(["log", "checkpoint", "--key"])
            .arg(&sk)
            .arg("--file")
            .arg(&log)
            .arg("--witness")
            .arg(&witness)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
    };
    checkpoint_witnessed(); // record 3, over 1..=2
    call(&fx, &log, "tool-3", None);
    call(&fx, &log, "tool-4", None);
    checkpoint_witnessed(); // record 6, over 1..=5
    call(&fx, &log, "tool-5", None);
    let w = witness.to_str().unwrap();
    let (code, report) = verify(&log, &["--pubkey", pk, "--witness", w]);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["witnessed"], 2, "{report:#}");
    assert_eq!(report["witnessed_through"], 6, "{report:#}");
    let original = lines(&log);

    // Record 4 (covered by the second checkpoint only) rewritten, the
    // chain resealed, the second checkpoint dropped: the signatures alone
    // are fooled, the witness is not.
    let dropped: Vec<String> = original
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 5)
        .map(|(_, l)| l.clone())
        .collect();
    let forged = rewrite(&dropped, |l| l.replace("tool-3", "tool-X"));
    write_lines(&log, &forged);
    let (code, report) = verify(&log, &["--pubkey", pk]);
    assert_eq!(code, 0, "without a witness this passes: {report:#}");
    let (code, report) = verify(&log, &["--pubkey", pk, "--witness", w]);
    assert_eq!(code, 2, "{report:#}");
    assert_eq!(report["problem"]["kind"], "rewritten", "{report:#}");

    // Cut back to the first checkpoint: the same.
    write_lines(&log, &original[..3]);
    let (code, report) = verify(&log, &["--pubkey", pk]);
    assert_eq!(code, 0, "without a witness this passes: {report:#}");
    let (code, report) = verify(&log, &["--pubkey", pk, "--witness", w]);
    assert_eq!(code, 2, "{report:#}");
    assert_eq!(report["problem"]["kind"], "rolled_back", "{report:#}");

    // A witness file that is not one is an error naming it and the line.
    write_lines(&log, &original);
    std::fs::write(fx.dir.path().join("bad.jsonl"), "{\"checkpoint\": 3}\n").unwrap();
    let out = toolgate()
        .args(["log", "verify", "--file"])
        .arg(&log)
        .args(["--witness"])
        .arg(fx.dir.path().join("bad.jsonl"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("bad.jsonl, line 1"),
        "{}",
        stderr(&out)
    );
}

/// Another user planted `<log>.1` beside the user's log in a shared sticky
/// folder: the chain continued from it, `verify` said whole, `toolgate
/// log` showed the planted records, and the planted file made rotation
/// fail, so every later record was dropped in silence. Now a file that is
/// not the user's is never read as part of the log (and said), and a
/// rotation it stands in the way of writes the record in place, said.
#[test]
fn a_file_another_user_plants_beside_the_log_is_never_read_and_never_costs_a_record() {
    use std::os::unix::fs::PermissionsExt;
    assert!(
        nix::unistd::geteuid().is_root(),
        "this test plays another user (chown): run the suite as root, as CI does"
    );
    let (fx, _) = fixture();
    let shared = fx.dir.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let log = shared.join("decisions.jsonl");
    // The planted file: a real chained log of someone else's, three records.
    let (other_fx, other_log) = log_of(3);
    let planted = rotated(&log, 1);
    std::fs::copy(&other_log, &planted).unwrap();
    crate::support::chown_to_nobody(&planted);
    drop(other_fx);
    let write = |tool: &str| {
        let mut cmd = toolgate();
        cmd.args(["check", "--workspace"])
            .arg(fx.workspace())
            .env("TOOLGATE_CONFIG_DIR", fx.global())
            .env("TOOLGATE_DECISION_LOG", &log)
            .env("TOOLGATE_DEBUG_DECISION_LOG_MAX_BYTES", "1500");
        let request = json!({"event": "pre_tool_use", "tool": tool, "input": {"n": 1}});
        let out = run_with_stdin(&mut cmd, &request.to_string());
        assert!(out.status.success(), "{}", stderr(&out));
        stderr(&out)
    };
    let said = write("mine-1");
    assert!(said.contains("is not this user's"), "{said}");
    let first: Value = serde_json::from_str(&lines(&log)[0]).unwrap();
    assert_eq!(
        first["seq"], 1,
        "the chain continued from the planted file: {first}"
    );
    // Past the size limit, with `.1` the other user's: nothing is dropped.
    let mut warned = String::new();
    for i in 2..=8 {
        warned.push_str(&write(&format!("mine-{i}")));
    }
    assert!(warned.contains("was not rotated"), "{warned}");
    let out = toolgate()
        .args(["log", "--json", "--all", "--file"])
        .arg(&log)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let shown = String::from_utf8_lossy(&out.stdout);
    let tools: Vec<String> = shown
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|r| r["tool"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        tools,
        (1..=8).map(|i| format!("mine-{i}")).collect::<Vec<_>>(),
        "every record, and none planted"
    );
    assert!(stderr(&out).contains("is not yours"), "{}", stderr(&out));
    let (code, report) = verify(&log, &[]);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["files"].as_array().unwrap().len(), 1, "{report:#}");
    assert_eq!(report["from_genesis"], true, "{report:#}");
    assert_eq!(report["last_seq"], 8, "{report:#}");
}

/// `toolgate check` of `tool` through `server`, logging to `log`.
fn call_via(server: &crate::serve::Server, fx: &Fixture, log: &Path, tool: &str) {
    let mut cmd = server.client();
    cmd.args(["check", "--workspace"])
        .arg(fx.workspace())
        .env("TOOLGATE_CONFIG_DIR", fx.global())
        .env("TOOLGATE_DECISION_LOG", log);
    let request = json!({"event": "pre_tool_use", "tool": tool, "input": {"n": 1}});
    let out = run_with_stdin(&mut cmd, &request.to_string());
    assert!(out.status.success(), "{}", stderr(&out));
}

/// The records of `log` that are checkpoints.
fn checkpoints_in(log: &Path) -> usize {
    lines(log)
        .iter()
        .filter(|l| l.contains("\"kind\":\"checkpoint\""))
        .count()
}

/// Issue 40, periodic checkpoints without a timer: `toolgate serve
/// --checkpoint-key` signs its decision log every `--checkpoint-every`
/// seconds when something was logged (a quiet log gets no checkpoint over
/// a checkpoint), and once more as it stops, so `log verify --pubkey`
/// finds every call signed.
#[test]
fn the_server_signs_its_log_periodically_and_as_it_stops_and_a_quiet_log_once() {
    let (fx, log) = fixture();
    let (sk, pk) = key_pair(fx.dir.path());
    let mut cmd = toolgate();
    cmd.env("TOOLGATE_CONFIG_DIR", fx.global())
        .env("TOOLGATE_DECISION_LOG", &log);
    let sk = sk.to_str().unwrap();
    let mut server =
        crate::serve::Server::start_as(cmd, &["--checkpoint-key", sk, "--checkpoint-every", "1"]);
    for i in 1..=3 {
        call_via(&server, &fx, &log, &format!("tool-{i}"));
    }
    // Signed once nothing more is logged: the last record a checkpoint.
    let started = std::time::Instant::now();
    while !log.exists()
        || !lines(&log)
            .last()
            .is_some_and(|l| l.contains("\"checkpoint\""))
    {
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // Three more ticks with nothing logged: no checkpoint over it.
    let signed = checkpoints_in(&log);
    std::thread::sleep(std::time::Duration::from_millis(3500));
    assert_eq!(checkpoints_in(&log), signed, "{:#?}", lines(&log));
    call_via(&server, &fx, &log, "tool-4");
    let status = server.terminate();
    assert!(status.success(), "{status}");
    let (code, report) = verify(&log, &["--pubkey", pk.to_str().unwrap()]);
    assert_eq!(code, 0, "{report:#}");
    assert!(
        report["checkpoints_verified"].as_u64().unwrap() >= 2,
        "{report:#}"
    );
    assert_eq!(
        report["unsigned_after"], 1,
        "only the last checkpoint: {report:#}"
    );
}

/// `serve --checkpoint-key` with no decision log, or a key others can
/// read, does not start: a server that cannot sign must not look as if it
/// does.
#[test]
fn a_server_that_cannot_sign_its_log_does_not_start() {
    let (fx, log) = fixture();
    let (sk, _) = key_pair(fx.dir.path());
    let out = toolgate()
        .args(["serve", "--checkpoint-key"])
        .arg(&sk)
        .arg("--socket")
        .arg(fx.dir.path().join("s.sock"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("TOOLGATE_DECISION_LOG"),
        "{}",
        stderr(&out)
    );
    std::fs::set_permissions(&sk, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = toolgate()
        .args(["serve", "--checkpoint-key"])
        .arg(&sk)
        .arg("--socket")
        .arg(fx.dir.path().join("s.sock"))
        .env("TOOLGATE_DECISION_LOG", &log)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(stderr(&out).contains("chmod 600"), "{}", stderr(&out));
}

#[test]
fn a_checkpoint_key_others_can_read_is_refused_and_nothing_is_written() {
    let (fx, log) = log_of(1);
    let (sk, _) = key_pair(fx.dir.path());
    std::fs::set_permissions(&sk, std::fs::Permissions::from_mode(0o644)).unwrap();
    let before = std::fs::read(&log).unwrap();
    let out = checkpoint(&log, &sk);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("others may read or change it (mode 644)"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read(&log).unwrap(), before);
    let link = fx.dir.path().join("link.key");
    std::os::unix::fs::symlink(&sk, &link).unwrap();
    std::fs::set_permissions(&sk, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = checkpoint(&log, &link);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("it is a symlink"), "{}", stderr(&out));
}

#[test]
fn log_json_prints_each_record_as_written_one_per_line() {
    let (_fx, log) = log_of(3);
    let out = crate::support::succeeded(
        toolgate()
            .args(["log", "--json", "--all", "--file"])
            .arg(&log),
    );
    let printed: Vec<&str> = std::str::from_utf8(&out.stdout).unwrap().lines().collect();
    assert_eq!(
        printed,
        lines(&log),
        "byte for byte, so each hash still checks"
    );
}

/// A validator for the published record schema,
/// docs/decision-log.schema.json.
pub(crate) fn record_validator() -> crate::config::Validator {
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/decision-log.schema.json"),
        )
        .unwrap(),
    )
    .unwrap();
    crate::config::Validator::with_schema(&schema)
}

/// Every kind of record the log holds (allow, deny, ask, a failed hook,
/// an error, a checkpoint, a record after a torn tail) passes the
/// published schema, docs/decision-log.schema.json.
#[test]
fn every_record_passes_the_published_schema() {
    let fx = Fixture::new();
    let log = fx.dir.path().join("logs/decisions.jsonl");
    let answer = |name: &str, body: &str| {
        fx.global_script(name, &format!("#!/bin/sh\ncat >/dev/null\n{body}\n"))
    };
    let scripts = [
        answer("allow.sh", "echo '{\"decision\":\"allow\"}'"),
        answer(
            "deny.sh",
            "echo '{\"decision\":\"deny\",\"reason\":\"no\"}'",
        ),
        answer(
            "ask.sh",
            "echo '{\"decision\":\"ask\",\"reason\":\"sure?\"}'",
        ),
        answer("crash.sh", "echo boom >&2; exit 1"),
    ];
    for script in &scripts {
        fx.global_hooks(json!([{"name": "guard", "command": [script]}]));
        let mut cmd = toolgate();
        cmd.args(["check", "--workspace"])
            .arg(fx.workspace())
            .env("TOOLGATE_CONFIG_DIR", fx.global())
            .env("TOOLGATE_DECISION_LOG", &log);
        run_with_stdin(
            &mut cmd,
            r#"{"event":"pre_tool_use","tool":"Bash","input":{"command":"ls"},"session_id":"s","tool_call_id":"c"}"#,
        );
    }
    // A config toolgate cannot load: an `error` record.
    fx.global_hooks(json!([{"name": "x", "wasm": 7}]));
    run_with_stdin(
        toolgate()
            .args(["check", "--workspace"])
            .arg(fx.workspace())
            .env("TOOLGATE_CONFIG_DIR", fx.global())
            .env("TOOLGATE_DECISION_LOG", &log),
        r#"{"event":"pre_tool_use","tool":"Bash","input":{}}"#,
    );
    let (sk, _) = key_pair(fx.dir.path());
    assert!(checkpoint(&log, &sk).status.success());
    fx.global_hooks(json!([{"name": "guard", "command": [&scripts[0]]}]));
    call(&fx, &log, "before the tear", None);
    let whole = std::fs::read(&log).unwrap();
    std::fs::write(&log, &whole[..whole.len() - 10]).unwrap();
    call(&fx, &log, "after the tear", None);
    let mut validator = record_validator();
    let records: Vec<Value> = lines(&log)
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let decisions: Vec<&str> = records
        .iter()
        .filter_map(|r| r["decision"].as_str())
        .collect();
    for kind in ["allow", "deny", "ask", "error"] {
        assert!(decisions.contains(&kind), "{decisions:?}");
    }
    assert!(records.iter().any(|r| r["kind"] == "checkpoint"));
    assert!(records.iter().any(|r| r["torn_bytes"].is_u64()));
    assert!(
        records.iter().any(|r| r["runs"][0]["failure"].is_object()),
        "a failed hook's record"
    );
    for record in &records {
        let errors = validator.errors(record);
        assert!(errors.is_empty(), "{errors:?} in {record:#}");
    }
}
