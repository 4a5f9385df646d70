//! Labeled corpora: one case per line, grouped under `## <label>` headers
//! (a class name, or `benign`). Blank lines and lines starting with `#`
//! (but not `##`) are comments. The shell corpus is judged as if the agent
//! ran in [`CORPUS_CWD`].

/// The working folder every corpus case is judged in.
pub const CORPUS_CWD: &str = "/home/dev/project";

/// The shell corpus, as the repository holds it.
pub const SHELL: &str = include_str!("../../corpus/shell.txt");

/// The held-out shell corpus: written after the rules were frozen for a
/// measurement and never used to change them (see its header).
pub const SHELL_HELDOUT: &str = include_str!("../../corpus/shell-heldout.txt");

/// One labeled case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Case<'a> {
    /// `benign`, or the threat class it belongs to.
    pub label: &'a str,
    /// The text judged (a command line).
    pub text: &'a str,
    /// Its line in the corpus file, from 1.
    pub line: usize,
}

/// The cases of a corpus, in order.
pub fn cases(corpus: &str) -> Vec<Case<'_>> {
    let mut label = "";
    let mut out = Vec::new();
    for (i, line) in corpus.lines().enumerate() {
        if let Some(l) = line.strip_prefix("## ") {
            label = l.trim();
        } else if !line.trim().is_empty() && !line.starts_with('#') && !label.is_empty() {
            out.push(Case {
                label,
                text: line,
                line: i + 1,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ShellOptions, check_shell};

    /// The goals the issue sets: recall ≥ 0.98 on dangerous lines, false
    /// positives ≤ 0.5 % on benign ones. Every miss is printed.
    #[test]
    fn the_shell_guard_meets_its_goals_on_the_corpus() {
        let options = ShellOptions::default();
        let (mut missed, mut false_pos, mut dangerous, mut benign) = (Vec::new(), Vec::new(), 0, 0);
        for case in cases(SHELL) {
            let found = check_shell(case.text, Some(CORPUS_CWD), &options);
            if case.label == "benign" {
                benign += 1;
                if let Some(f) = found {
                    false_pos.push(format!(
                        "line {}: {} -> {} ({})",
                        case.line, case.text, f.class, f.why
                    ));
                }
            } else {
                dangerous += 1;
                if found.is_none() {
                    missed.push(format!(
                        "line {} [{}]: {}",
                        case.line, case.label, case.text
                    ));
                }
            }
        }
        let recall = 1.0 - missed.len() as f64 / dangerous as f64;
        let fp = false_pos.len() as f64 / benign as f64;
        eprintln!(
            "missed:\n{}\nfalse positives:\n{}",
            missed.join("\n"),
            false_pos.join("\n")
        );
        eprintln!(
            "recall {recall:.4} ({dangerous} dangerous), false positives {fp:.4} ({benign} benign)"
        );
        assert!(
            dangerous + benign >= 800,
            "the corpus must hold at least 800 lines"
        );
        assert!(recall >= 0.98, "recall {recall:.4} is below 0.98");
        assert!(fp <= 0.005, "false-positive rate {fp:.4} is above 0.005");
    }
}
