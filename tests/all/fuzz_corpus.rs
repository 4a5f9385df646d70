//! The fuzz targets' committed corpus and saved crashes, run without AFL.
//!
//! Every file in `fuzz/corpus/<target>/` (what the campaigns start from) and
//! `fuzz/crashes/<target>/` (each crash a campaign found, minimised, kept
//! once its bug was fixed) goes through the same harness the AFL++ binaries
//! run: `fuzz/src/lib.rs`, included here as a module (see its docs for why
//! not a dependency). A fixed crash that comes back fails here, in CI,
//! without a fuzzer.

use std::path::{Path, PathBuf};

use toolgate::Decision;

#[allow(unreachable_pub, dead_code)]
#[path = "../../fuzz/src/lib.rs"]
mod harness;

/// Every input of `target`, corpus and crashes, with its path.
fn inputs(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut all = Vec::new();
    for dir in ["corpus", "crashes"] {
        let Ok(entries) = std::fs::read_dir(fuzz.join(dir).join(target)) else {
            continue;
        };
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            if path.is_file() && path.file_name().is_some_and(|n| n != "README.md") {
                let bytes = std::fs::read(&path).expect("a corpus file");
                all.push((path, bytes));
            }
        }
    }
    all.sort();
    all
}

/// Runs `run` on each input of `target`; names every input that broke an
/// invariant (or panicked).
fn holds(target: &str, minimum: usize, run: impl Fn(&[u8])) {
    let inputs = inputs(target);
    assert!(
        inputs.len() >= minimum,
        "fuzz/corpus/{target} has {} inputs, expected at least {minimum}",
        inputs.len()
    );
    let failed: Vec<String> = inputs
        .iter()
        .filter(|(_, bytes)| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(bytes))).is_err()
        })
        .map(|(path, _)| path.display().to_string())
        .collect();
    assert!(
        failed.is_empty(),
        "inputs that broke an invariant: {failed:#?}"
    );
}

#[test]
fn every_protocol_corpus_input_and_saved_crash_keeps_the_invariants() {
    holds("protocol", 20, harness::protocol);
}

#[test]
fn every_mcp_corpus_input_and_saved_crash_keeps_the_invariants() {
    holds("mcp", 8, harness::mcp);
}

#[test]
fn every_config_corpus_input_and_saved_crash_keeps_the_invariants() {
    let target = harness::ConfigTarget::new();
    holds("config", 3, |data| target.run(data));
}

#[test]
fn every_guest_corpus_input_and_saved_crash_keeps_the_invariants() {
    let target = harness::GuestTarget::new();
    holds("guest", 5, |data| {
        target.run(data);
    });
}

/// Every module the corpus makes either is refused at load or is decided,
/// and the corpus reaches both sides: modules that run as hooks, and
/// modules refused for a proposal off the list (or any other reason).
#[test]
fn every_module_corpus_input_and_saved_crash_keeps_the_invariants() {
    let target = harness::ModuleTarget::new();
    let (ran, refused) = (std::cell::Cell::new(0), std::cell::Cell::new(0));
    holds("module", 5, |data| match target.run(data) {
        Some(_) => ran.set(ran.get() + 1),
        None => refused.set(refused.get() + 1),
    });
    assert!(
        ran.get() > 0 && refused.get() > 0,
        "the corpus reaches one side only: {} ran, {} refused",
        ran.get(),
        refused.get()
    );
}

/// The guest's canonical-ABI offsets are what the seeds encode: an all-zero
/// answer is `ok(allow)`, `ok(deny("no"))` denies with its reason, and a
/// deny whose reason points outside the guest's memory is a failure (which
/// denies by default), never an allow.
#[test]
fn the_hostile_guest_lifts_what_its_bytes_encode() {
    let target = harness::GuestTarget::new();
    assert_eq!(target.run(&[0; 32]), Decision::Allow);
    let mut deny = [0u8; 34];
    deny[harness::DECISION_CASE] = 1;
    deny[8] = 32;
    deny[12] = 2;
    deny[32..].copy_from_slice(b"no");
    assert_eq!(
        target.run(&deny),
        Decision::Deny {
            reason: "no".into()
        }
    );
    deny[8..12].copy_from_slice(&0xFFFF_0000u32.to_le_bytes());
    let Decision::Deny { reason } = target.run(&deny) else {
        panic!("an out-of-bounds reason was not a denial");
    };
    assert_ne!(reason, "no");
}
