//! `toolgate:shell`'s rules and OpenMoat's classifier (openmoat-core
//! 0.12.1, its default policy), side by side on the same labeled corpora
//! (the tuned one and the held-out one):
//! both see every line as run in `corpus::CORPUS_CWD` with home
//! `/home/dev`. OpenMoat answers deny, ask (a person must decide) or allow;
//! both "deny" and "deny or ask" are counted. The numbers are printed
//! (`cargo test -p toolgate-guards --test openmoat -- --nocapture`) and
//! quoted in docs/guards.md.

use openmoat_core::{Action, CompiledPolicy, DEFAULT_POLICY, EvalContext, Policy, Verdict};
use toolgate_guards::corpus::{self, CORPUS_CWD};
use toolgate_guards::{ShellOptions, check_shell};

#[derive(Default)]
struct Tally {
    dangerous: usize,
    benign: usize,
    caught: [usize; 3],
    flagged: [usize; 3],
}

#[test]
fn openmoat_and_toolgate_shell_judge_the_same_corpus_side_by_side() {
    let tuned = side_by_side(
        "guards/corpus/shell.txt (written with toolgate's rules)",
        corpus::SHELL,
    );
    assert!(tuned >= 800, "both judged the whole corpus");
    // The held-out set was written after toolgate's rules were frozen, and
    // neither classifier was changed for it: the fairer of the two rows.
    let held_out = side_by_side(
        "guards/corpus/shell-heldout.txt (tuned on by neither)",
        corpus::SHELL_HELDOUT,
    );
    assert!(held_out >= 100, "both judged the held-out set");
}

/// Judges every case of `corpus` with both classifiers and prints the
/// figures; returns how many cases there were.
fn side_by_side(name: &str, text: &str) -> usize {
    let policy = Policy::parse(DEFAULT_POLICY).expect("OpenMoat's default policy parses");
    let ctx = EvalContext {
        home: "/home/dev".into(),
        project: Some(CORPUS_CWD.into()),
        real_home: None,
        real_project: None,
        moved_dirs: Vec::new(),
        cwd: CORPUS_CWD.into(),
        case_insensitive_paths: false,
    };
    let moat = CompiledPolicy::compile(&policy, &ctx).expect("it compiles");
    let options = ShellOptions::default();
    let mut t = Tally::default();
    let mut per_class: std::collections::BTreeMap<&str, (usize, usize, usize)> = Default::default();
    for case in corpus::cases(text) {
        let verdict = moat
            .decide(&Action::Shell {
                command: case.text.to_owned(),
            })
            .verdict;
        let ours = check_shell(case.text, Some(CORPUS_CWD), &options).is_some();
        let moat_deny = verdict == Verdict::Deny;
        let moat_any = matches!(verdict, Verdict::Deny | Verdict::Ask);
        let hits = [ours, moat_deny, moat_any];
        if case.label == "benign" {
            t.benign += 1;
            for (k, h) in hits.iter().enumerate() {
                t.flagged[k] += usize::from(*h);
            }
        } else {
            t.dangerous += 1;
            for (k, h) in hits.iter().enumerate() {
                t.caught[k] += usize::from(*h);
            }
            let e = per_class.entry(case.label).or_default();
            e.0 += 1;
            e.1 += usize::from(ours);
            e.2 += usize::from(moat_any);
        }
    }
    let pct = |n: usize, d: usize| 100.0 * n as f64 / d as f64;
    println!("\n{name}: {} dangerous, {} benign", t.dangerous, t.benign);
    println!("{:<32} {:>10} {:>16}", "", "recall", "false positives");
    for (k, who) in [
        "toolgate:shell",
        "OpenMoat 0.12.1, deny",
        "OpenMoat 0.12.1, deny or ask",
    ]
    .iter()
    .enumerate()
    {
        println!(
            "{who:<32} {:>9.1} % {:>15.1} %",
            pct(t.caught[k], t.dangerous),
            pct(t.flagged[k], t.benign)
        );
    }
    println!("\nper class: cases, toolgate:shell, OpenMoat (deny or ask)");
    for (class, (n, ours, moat)) in &per_class {
        println!("  {class:<20} {n:>4} {ours:>4} {moat:>4}");
    }
    t.dangerous + t.benign
}
