//! Advisory context from many hooks, merged within one byte budget.
//!
//! # Why a budget, and a visible cut
//!
//! Every participant may add context for the model; ten chatty hooks must
//! not fill the model's window. The merged text is bounded
//! (`DEFAULT_CONTEXT_LIMIT`), and what does not fit is cut with a notice
//! saying how much was left out, so neither the model nor the operator
//! mistakes a cut text for the whole. A participant consulted again in a
//! later round (re-judgement) does not repeat itself.

use crate::text::floor_char_boundary;

/// Merges advisory context within a byte budget, truncating visibly.
pub(super) struct ContextMerger {
    limit: usize,
    text: String,
    omitted: usize,
    /// (participant, context) pairs already merged: a participant consulted
    /// again in a later round does not repeat itself.
    seen: std::collections::HashSet<(String, String)>,
}

const SEPARATOR: &str = "\n\n";

impl ContextMerger {
    pub(super) fn new(limit: usize) -> Self {
        ContextMerger {
            limit,
            text: String::new(),
            omitted: 0,
            seen: std::collections::HashSet::new(),
        }
    }

    /// Adds one hook's context; returns whether any of it was cut.
    pub(super) fn push(&mut self, from: &str, context: &str) -> bool {
        if context.is_empty() || !self.seen.insert((from.to_owned(), context.to_owned())) {
            return false;
        }
        let sep = if self.text.is_empty() { "" } else { SEPARATOR };
        let incoming = sep.len() + context.len();
        let room = self.limit.saturating_sub(self.text.len());
        if self.omitted == 0 && incoming <= room {
            self.text.push_str(sep);
            self.text.push_str(context);
            return false;
        }
        // Keep what fits now; `finish` makes room for the notice.
        if self.omitted == 0 && room > sep.len() {
            let cut = floor_char_boundary(context, room - sep.len());
            self.text.push_str(sep);
            self.text.push_str(&context[..cut]);
            self.omitted += context.len() - cut;
        } else {
            self.omitted += incoming;
        }
        true
    }

    pub(super) fn finish(mut self) -> Option<String> {
        if self.omitted > 0 {
            // The notice itself must fit in the budget; 20 digits covers any usize.
            let notice_room =
                "\n[toolgate: advisory context truncated, 00000000000000000000 bytes omitted]"
                    .len();
            let keep = floor_char_boundary(&self.text, self.limit.saturating_sub(notice_room));
            self.omitted += self.text.len() - keep;
            self.text.truncate(keep);
            self.text.push_str(&format!(
                "\n[toolgate: advisory context truncated, {} bytes omitted]",
                self.omitted
            ));
        }
        (!self.text.is_empty()).then_some(self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contexts_are_joined_in_order() {
        let mut m = ContextMerger::new(100);
        assert!(!m.push("a", "one"));
        assert!(!m.push("b", "two"));
        assert_eq!(m.finish().as_deref(), Some("one\n\ntwo"));
    }

    #[test]
    fn nothing_merged_is_none() {
        let mut m = ContextMerger::new(100);
        assert!(!m.push("a", ""));
        assert_eq!(m.finish(), None);
    }

    #[test]
    fn a_participant_asked_again_does_not_repeat_itself() {
        let mut m = ContextMerger::new(100);
        m.push("a", "note");
        m.push("a", "note");
        m.push("b", "note");
        assert_eq!(m.finish().as_deref(), Some("note\n\nnote"));
    }

    #[test]
    fn over_the_budget_the_text_is_cut_with_a_notice_that_fits() {
        let mut m = ContextMerger::new(120);
        assert!(!m.push("a", &"x".repeat(60)));
        assert!(m.push("b", &"y".repeat(200)));
        let text = m.finish().unwrap();
        assert!(text.len() <= 120, "{} bytes", text.len());
        assert!(text.starts_with(&"x".repeat(20)));
        assert!(text.contains("advisory context truncated"));
    }

    #[test]
    fn a_cut_never_splits_a_character() {
        let mut m = ContextMerger::new(100);
        m.push("a", &"é".repeat(200));
        let text = m.finish().unwrap();
        assert!(text.len() <= 100);
        assert!(text.is_char_boundary(text.len()));
    }
}
