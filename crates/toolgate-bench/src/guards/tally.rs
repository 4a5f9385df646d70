//! Counting what a guard said of a corpus (per label: recall, precision,
//! false positives, every mistake) and drawing it as a table: apart from
//! the measurement in `guards`, which only asks.

use super::{ClassRow, Judged};
use crate::report::new_table;
use toolgate_guards::corpus;

/// The cases and what the guard said of each, per label.
pub(super) fn tally(name: &str, cases: &[corpus::Case<'_>], said: &[Option<String>]) -> Judged {
    let class_of = |reason: &str| -> String {
        reason
            .split_once('[')
            .and_then(|(_, r)| r.split_once(']'))
            .map(|(c, _)| c.to_owned())
            .unwrap_or_default()
    };
    let mut labels: Vec<&str> = Vec::new();
    for c in cases {
        if !labels.contains(&c.label) {
            labels.push(c.label);
        }
    }
    let mut rows = Vec::new();
    let mut mistakes = Vec::new();
    let (mut dangerous, mut caught, mut benign, mut false_pos) = (0, 0, 0, 0);
    for label in &labels {
        let mine: Vec<usize> = (0..cases.len())
            .filter(|&i| cases[i].label == *label)
            .collect();
        let denied: Vec<usize> = mine
            .iter()
            .copied()
            .filter(|&i| said[i].is_some())
            .collect();
        let same = denied
            .iter()
            .filter(|&&i| said[i].as_deref().map(class_of).as_deref() == Some(*label))
            .count();
        let put_here: Vec<usize> = (0..cases.len())
            .filter(|&i| said[i].as_deref().map(class_of).as_deref() == Some(*label))
            .collect();
        let precision = (!put_here.is_empty()).then(|| {
            put_here
                .iter()
                .filter(|&&i| cases[i].label != "benign")
                .count() as f64
                / put_here.len() as f64
        });
        if *label == "benign" {
            benign += mine.len();
            false_pos += denied.len();
        } else {
            dangerous += mine.len();
            caught += denied.len();
        }
        for &i in &mine {
            let wrong = (*label == "benign") == said[i].is_some();
            if wrong {
                mistakes.push(format!(
                    "line {} [{}]: {} -> {}",
                    cases[i].line,
                    label,
                    cases[i].text,
                    said[i].as_deref().unwrap_or("allowed")
                ));
            }
        }
        rows.push(ClassRow {
            label: (*label).to_owned(),
            cases: mine.len(),
            denied: denied.len(),
            same_class: same,
            rate: denied.len() as f64 / mine.len().max(1) as f64,
            precision,
        });
    }

    Judged {
        corpus: name.to_owned(),
        classes: rows,
        recall: caught as f64 / dangerous.max(1) as f64,
        false_positive_rate: false_pos as f64 / benign.max(1) as f64,
        mistakes,
    }
}

impl Judged {
    pub(super) fn render(&self, width: Option<u16>) -> String {
        let mut out = String::new();
        let mut t = new_table(
            width,
            &[
                "label",
                "cases",
                "denied",
                "rate",
                "same class",
                "precision",
            ],
        );
        for r in &self.classes {
            let rate = if r.label == "benign" {
                format!("{:.2} % false positives", r.rate * 100.0)
            } else {
                format!("{:.3} recall", r.rate)
            };
            t.add_row(vec![
                r.label.clone(),
                r.cases.to_string(),
                r.denied.to_string(),
                rate,
                if r.label == "benign" {
                    "-".into()
                } else {
                    r.same_class.to_string()
                },
                r.precision.map_or("-".into(), |p| format!("{p:.3}")),
            ]);
        }
        out.push_str(&format!("{t}\n"));
        out.push_str(&format!(
            "recall {:.4} on {} dangerous lines; false positives {:.2} % on {} benign lines\n",
            self.recall,
            self.classes
                .iter()
                .filter(|r| r.label != "benign")
                .map(|r| r.cases)
                .sum::<usize>(),
            self.false_positive_rate * 100.0,
            self.classes
                .iter()
                .filter(|r| r.label == "benign")
                .map(|r| r.cases)
                .sum::<usize>(),
        ));
        if !self.mistakes.is_empty() {
            out.push_str("mistakes:\n");
            for m in &self.mistakes {
                out.push_str(&format!("  {m}\n"));
            }
        }
        out
    }
}
