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

/// The paths guard's corpus: tool calls (see [`call_of`]).
pub const PATHS: &str = include_str!("../../corpus/paths.txt");

/// The egress guard's corpus: tool calls (see [`call_of`]).
pub const EGRESS: &str = include_str!("../../corpus/egress.txt");

/// The secrets guard's corpus: tool outputs (see [`output_of`]).
pub const SECRETS: &str = include_str!("../../corpus/secrets.txt");

/// The held-out paths corpus (see its header).
pub const PATHS_HELDOUT: &str = include_str!("../../corpus/paths-heldout.txt");

/// The held-out egress corpus (see its header).
pub const EGRESS_HELDOUT: &str = include_str!("../../corpus/egress-heldout.txt");

/// The held-out secrets corpus (see its header).
pub const SECRETS_HELDOUT: &str = include_str!("../../corpus/secrets-heldout.txt");

/// A tool-call case: `$ COMMAND` is a shell tool (`Bash`) running it;
/// anything else is `TOOL {input as JSON}`.
pub fn call_of(text: &str) -> Result<(String, serde_json::Value), String> {
    if let Some(command) = text.strip_prefix("$ ") {
        return Ok(("Bash".to_owned(), serde_json::json!({ "command": command })));
    }
    let (tool, input) = text
        .split_once(' ')
        .ok_or_else(|| format!("`{text}` is neither `$ COMMAND` nor `TOOL {{input}}`"))?;
    let input =
        serde_json::from_str(input).map_err(|e| format!("`{text}`: the input is not JSON: {e}"))?;
    Ok((tool.to_owned(), input))
}

/// A tool-output case: its text, `⏎` standing for a line break.
pub fn output_of(text: &str) -> String {
    text.replace('⏎', "\n")
}

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
    use crate::guard::{Answer, Call};
    use crate::{ShellOptions, check_shell};

    /// Judges every case of a tool-call corpus with `decide` (default
    /// options, in [`CORPUS_CWD`]) and holds it to the shell guard's goals:
    /// recall ≥ 0.98, false positives ≤ 0.5 %, and no mistake at all.
    /// Every mistake is printed.
    fn meets_the_goals(name: &str, corpus: &str, judge: &dyn Fn(&str) -> Answer) {
        let (mut missed, mut false_pos, mut dangerous, mut benign) = (Vec::new(), Vec::new(), 0, 0);
        for case in cases(corpus) {
            let answer = judge(case.text);
            let caught = answer != Answer::Allow;
            if case.label == "benign" {
                benign += 1;
                if caught {
                    false_pos.push(format!("line {}: {} -> {answer:?}", case.line, case.text));
                }
            } else {
                dangerous += 1;
                if !caught {
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
            "{name}: missed:\n{}\nfalse positives:\n{}",
            missed.join("\n"),
            false_pos.join("\n")
        );
        eprintln!(
            "{name}: recall {recall:.4} ({dangerous} dangerous), false positives {fp:.4} ({benign} benign)"
        );
        assert!(recall >= 0.98, "{name}: recall {recall:.4} is below 0.98");
        assert!(
            fp <= 0.005,
            "{name}: false-positive rate {fp:.4} is above 0.005"
        );
        // These corpora were written with the rules (and hold the spent
        // held-out sets): every case of them is a regression test, so
        // one mistake fails, not only missing the goals.
        assert!(
            missed.is_empty() && false_pos.is_empty(),
            "{name}: {} missed, {} false positives (printed above)",
            missed.len(),
            false_pos.len()
        );
    }

    fn judge_call(
        decide: fn(
            &Call<'_>,
            &serde_json::Map<String, serde_json::Value>,
        ) -> Result<Answer, String>,
    ) -> impl Fn(&str) -> Answer {
        move |text| {
            let (tool, input) = call_of(text).unwrap();
            let call = Call {
                pre: true,
                tool: &tool,
                input: &input,
                output: None,
                cwd: Some(CORPUS_CWD),
            };
            decide(&call, &serde_json::Map::new()).unwrap()
        }
    }

    #[test]
    fn the_paths_guard_meets_the_goals_on_its_corpus() {
        meets_the_goals("paths", PATHS, &judge_call(crate::file_rules::decide));
    }

    #[test]
    fn the_egress_guard_meets_the_goals_on_its_corpus() {
        meets_the_goals("egress", EGRESS, &judge_call(crate::egress::decide));
    }

    /// Redacting is the secrets guard's catch; a benign output must come
    /// back untouched, and a redacted one must no longer hold what was found.
    #[test]
    fn the_secrets_guard_meets_the_goals_on_its_corpus() {
        meets_the_goals("secrets", SECRETS, &|text| {
            let output = serde_json::Value::String(output_of(text));
            let input = serde_json::json!({"command": "cat x"});
            let call = Call {
                pre: false,
                tool: "Bash",
                input: &input,
                output: Some(&output),
                cwd: Some(CORPUS_CWD),
            };
            let answer = crate::secrets::decide(&call, &serde_json::Map::new()).unwrap();
            if let Answer::Redact { output: shown, .. } = &answer {
                for f in crate::secrets::find(&output_of(text)) {
                    let secret = &output_of(text)[f.start..f.end];
                    // (A short one may also be, say, the user's name beside it.)
                    if secret.len() >= 12 {
                        assert!(
                            !shown.as_str().unwrap().contains(secret),
                            "{secret} is still shown"
                        );
                    }
                }
            }
            answer
        });
    }

    #[test]
    fn every_tool_call_case_parses() {
        for corpus in [PATHS, EGRESS, PATHS_HELDOUT, EGRESS_HELDOUT] {
            for case in cases(corpus) {
                call_of(case.text).unwrap_or_else(|e| panic!("line {}: {e}", case.line));
            }
        }
    }

    /// The goals the issue sets, on the shell corpus of at least 800 lines.
    #[test]
    fn the_shell_guard_meets_its_goals_on_the_corpus() {
        let options = ShellOptions::default();
        assert!(
            cases(SHELL).len() >= 800,
            "the corpus must hold at least 800 lines"
        );
        meets_the_goals(
            "shell",
            SHELL,
            &|text| match check_shell(text, Some(CORPUS_CWD), &options) {
                Some(f) => Answer::Deny {
                    class: f.class,
                    why: f.why,
                },
                None => Answer::Allow,
            },
        );
    }
}
