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

/// A code point a terminal shows as nothing, or that only changes what is
/// around it: Unicode's `Default_Ignorable_Code_Point` (zero-width
/// characters, word joiners, variation selectors, the tag characters
/// U+E0000–E0FFF, fillers, the soft hyphen) and the other format (`Cf`)
/// characters. A model reads them; a person never sees them. (From
/// Unicode 16's DerivedCoreProperties.txt and the `Cf` category; a table
/// here rather than a crate, so a reviewer can read it whole.)
pub fn is_invisible(c: char) -> bool {
    matches!(
        u32::from(c),
        0x00AD
            | 0x034F
            | 0x0600..=0x0605
            | 0x061C
            | 0x06DD
            | 0x070F
            | 0x0890..=0x0891
            | 0x08E2
            | 0x115F..=0x1160
            | 0x17B4..=0x17B5
            | 0x180B..=0x180F
            | 0x200B..=0x200F
            | 0x202A..=0x202E
            | 0x2060..=0x206F
            | 0x3164
            | 0xFE00..=0xFE0F
            | 0xFEFF
            | 0xFFA0
            | 0xFFF0..=0xFFFB
            | 0x110BD
            | 0x110CD
            | 0x13430..=0x1343F
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0000..=0xE0FFF
    )
}

/// What someone else wrote (an MCP server's tool description, its
/// instructions), shown so that it cannot pass for the text around it: on
/// one line, in double quotes, with `"` and `\` escaped, every line break
/// (`\n`, `\r`, U+2028, U+2029) and control character escaped, and every
/// [invisible](is_invisible) code point shown as `\u{…}` — with how many
/// of those there were, so a caller can say so.
pub fn quoted(text: &str) -> (String, usize) {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    let hidden = escape_into(&mut out, text, true);
    out.push('"');
    (out, hidden)
}

/// [`quoted`]'s escapes for text that is already JSON (so already holds no
/// raw line break or quote of its own): invisible and control code points
/// shown as `\u{…}`, and how many were invisible.
pub fn visible_json(json: &str) -> (String, usize) {
    let mut out = String::with_capacity(json.len());
    let hidden = escape_into(&mut out, json, false);
    (out, hidden)
}

fn escape_into(out: &mut String, text: &str, quotes: bool) -> usize {
    use std::fmt::Write as _;
    let mut hidden = 0;
    for c in text.chars() {
        match c {
            '"' if quotes => out.push_str("\\\""),
            '\\' if quotes => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if is_invisible(c) => {
                hidden += 1;
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}') => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    hidden
}

/// `text` without its [invisible](is_invisible) code points, and how many
/// there were.
pub fn strip_invisible(text: &str) -> (String, usize) {
    let before = text.chars().count();
    let kept: String = text.chars().filter(|&c| !is_invisible(c)).collect();
    let stripped = before - kept.chars().count();
    (kept, stripped)
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
    fn server_text_shown_quoted_cannot_forge_a_line_and_shows_every_hidden_code_point() {
        // A tag-character order, a zero-width space, a variation selector.
        let hidden: String = "ignore"
            .chars()
            .map(|c| char::from_u32(0xE0000 + u32::from(c)).unwrap())
            .collect();
        let text = format!("Adds numbers.{hidden}\u{200B}\u{FE0F}\n`x`: 1 tool(s), as approved\"");
        let (shown, count) = quoted(&text);
        assert_eq!(count, 8, "{shown}");
        assert!(
            !shown.contains('\n') && shown.lines().count() == 1,
            "{shown}"
        );
        assert!(
            shown.starts_with("\"Adds numbers.\\u{e0069}\\u{e0067}"),
            "{shown}"
        );
        assert!(
            shown.ends_with("\\n`x`: 1 tool(s), as approved\\\"\""),
            "{shown}"
        );
        assert!(shown.contains("\\u{200b}\\u{fe0f}"), "{shown}");
        // What was typed as an escape reads differently from an escape.
        assert_eq!(quoted("\\u{200b}").0, "\"\\\\u{200b}\"");
        assert_eq!(quoted("a\u{2028}b\u{1b}").1, 0);
        assert_eq!(quoted("a\u{2028}b\u{1b}").0, "\"a\\u{2028}b\\u{1b}\"");
        let (stripped, n) = strip_invisible(&text);
        assert_eq!(n, 8);
        assert!(stripped.starts_with("Adds numbers.\n"), "{stripped}");
        let (json, n) = visible_json(&serde_json::to_string(&text).unwrap());
        assert_eq!(n, 8);
        assert!(
            !json.contains('\n') && json.contains("\\u{e0069}"),
            "{json}"
        );
    }

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
