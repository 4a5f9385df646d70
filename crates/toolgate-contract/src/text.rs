//! Text that came from a hook, made safe to hand on.
//!
//! # Why one place
//!
//! Everything a hook or guest says — a deny reason, advisory context, an
//! error message, its stderr — ends up in front of someone: the model, or the
//! operator's terminal. A hostile hook can make that text huge (a 100 MiB
//! deny reason fills the model's context and the agent's memory) or make it
//! drive the terminal (escape sequences that retitle the window, rewrite
//! earlier lines or hide text). Bounding and sanitising in one module, and
//! calling it at the chain (for every binding at once) and at every place the
//! CLI prints for a person, closes both for every binding and every printer.
//!
//! Truncation is always visible: a notice says how much was left out, so a
//! cut reason is never mistaken for the whole one. A truncated deny is still
//! a deny.

/// Bound on a deny reason handed to the model.
pub const MAX_REASON: usize = 4 * 1024;
/// Bound on a failure message (a guest's error, a trap) kept for the operator.
pub const MAX_MESSAGE: usize = 4 * 1024;
/// Bound on a run record's diagnostics (stderr, guest output, notes), as a
/// backstop over each binding's own capture limit.
pub const MAX_DIAGNOSTICS: usize = 20 * 1024;

/// Replaces terminal control characters (C0 except newline and tab, DEL, C1)
/// and the Unicode bidirectional overrides (which reorder what a terminal
/// shows, "Trojan Source" style) with U+FFFD.
pub fn sanitize(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '\n' | '\t' => c,
            c if c.is_control() || is_bidi_control(c) => '\u{FFFD}',
            c => c,
        })
        .collect()
}

/// [`sanitize`], and newlines and tabs flattened to spaces: for one table cell
/// or one log line.
pub fn one_line(text: &str) -> String {
    sanitize(text)
        .chars()
        .map(|c| if c == '\n' || c == '\t' { ' ' } else { c })
        .collect()
}

/// [`one_line`], trimmed, and cut to `max_chars` characters with a `…`:
/// for quoting the start of something a hook printed, or summarising a tool
/// input in a table.
pub fn excerpt(text: &str, max_chars: usize) -> String {
    let line = one_line(text);
    let line = line.trim();
    if line.chars().count() > max_chars {
        let mut cut: String = line.chars().take(max_chars.saturating_sub(1)).collect();
        cut.push('…');
        cut
    } else {
        line.to_owned()
    }
}

fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// An error and its sources in one line (`outer: inner: innermost`), as
/// anyhow's `{:#}` prints them: error types here do not repeat their source
/// in their own message, so this is how the whole story is told.
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        text.push_str(": ");
        text.push_str(&e.to_string());
        source = e.source();
    }
    text
}

/// Cuts `text` to at most `limit` bytes (on a character boundary), ending with
/// a visible notice naming `what` was cut and how much.
pub fn bound(text: String, limit: usize, what: &str) -> String {
    if text.len() <= limit {
        return text;
    }
    let notice = |n: usize| format!("… [toolgate: {what} truncated, {n} bytes omitted]");
    // The notice itself must fit; 20 digits covers any usize.
    let room = limit.saturating_sub(notice(usize::MAX).len());
    let keep = floor_char_boundary(&text, room);
    let mut out = text[..keep].to_owned();
    out.push_str(&notice(text.len() - keep));
    out
}

/// The largest char boundary of `s` at or below `at`.
pub fn floor_char_boundary(s: &str, mut at: usize) -> usize {
    if at >= s.len() {
        return s.len();
    }
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// `time` in UTC, RFC 3339 with milliseconds (`2026-12-01T21:40:00.123Z`):
/// for records a person or a program reads back (the decision log, Gemini
/// CLI's `timestamp`). A time before 1970 is written as 1970's start.
pub fn rfc3339(time: std::time::SystemTime) -> String {
    let since = time
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = since.as_secs();
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm).
    let z = i64::try_from(days).unwrap_or(0) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60,
        since.subsec_millis()
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn times_are_rfc3339_utc() {
        use std::time::{Duration, UNIX_EPOCH};
        let at = |s: u64| super::rfc3339(UNIX_EPOCH + Duration::from_secs(s));
        assert_eq!(at(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00.000Z");
        assert_eq!(at(1_796_161_445), "2026-12-01T21:44:05.000Z");
        assert_eq!(
            super::rfc3339(UNIX_EPOCH + Duration::from_millis(1_796_161_445_208)),
            "2026-12-01T21:44:05.208Z"
        );
    }

    use super::*;

    #[test]
    fn a_bounded_text_fits_its_limit_and_says_what_was_cut() {
        let cut = bound("é".repeat(10_000), 1000, "reason");
        assert!(cut.len() <= 1000, "{}", cut.len());
        assert!(cut.ends_with("bytes omitted]"), "{cut}");
        assert!(cut.contains("reason truncated"));
        assert_eq!(bound("short".into(), 1000, "reason"), "short");
    }

    #[test]
    fn sanitize_strips_escapes_and_bidi_but_keeps_newlines() {
        let s = sanitize("a\u{1b}[2Jb\u{9b}c\u{202e}d\ne\tf");
        assert_eq!(s, "a\u{FFFD}[2Jb\u{FFFD}c\u{FFFD}d\ne\tf");
        assert_eq!(one_line("a\nb\tc"), "a b c");
    }

    #[test]
    fn an_excerpt_is_one_trimmed_line_cut_visibly() {
        assert_eq!(excerpt("  a\nb  ", 10), "a b");
        assert_eq!(excerpt("abcdef", 4), "abc…");
        assert_eq!(excerpt("\u{1b}[2J", 10), "\u{FFFD}[2J");
    }
}
