//! The shell guard reads text an agent (or a prompt injection) wrote: any
//! input must end, without a panic (a panic in the component is a trap,
//! which blocks the call: a denial of service, not a bypass, but still a
//! guard that cannot be relied on), and nesting past the limit is refused
//! rather than read halfway.

use proptest::prelude::*;
use toolgate_guards::{ShellOptions, check_shell};

/// Shell text: the characters the parser treats specially, words the rules
/// look for, and anything else.
fn shell_text() -> impl Strategy<Value = String> {
    let pieces = prop::sample::select(vec![
        "rm",
        " -rf ",
        "/",
        "~",
        "$",
        "(",
        ")",
        "{",
        "}",
        "`",
        "'",
        "\"",
        "\\",
        "|",
        "&",
        ";",
        "<",
        ">",
        "<<",
        "EOF",
        "\n",
        "$(",
        "${",
        ":-",
        "=",
        "*",
        "sh -c ",
        "eval ",
        "sudo ",
        "xargs ",
        "find . -exec ",
        " {} ",
        "\\;",
        "base64 -d",
        "echo ",
        "for x in ",
        "do ",
        "done",
        "case ",
        " in ",
        ")",
        ";;",
        "esac",
        "f()",
        "$'\\x",
        "7",
        "a",
        " ",
    ]);
    prop::collection::vec(
        prop_oneof![
            pieces.prop_map(str::to_owned),
            any::<char>().prop_map(String::from)
        ],
        0..60,
    )
    .prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn any_text_is_judged_without_a_panic(text in shell_text()) {
        let _ = check_shell(&text, Some("/home/dev/project"), &ShellOptions::default());
        let _ = check_shell(&text, None, &ShellOptions::default());
    }
}

/// `sh -c` nested past the limit is refused as unreadable, not allowed.
#[test]
fn nesting_past_the_limit_is_refused() {
    let mut line = "ls".to_owned();
    for _ in 0..12 {
        line = format!("sh -c {}", shell_quote(&line));
    }
    let found = check_shell(&line, Some("/w"), &ShellOptions::default()).expect("refused");
    assert!(
        found.why.contains("deeper than the guard reads"),
        "{found:?}"
    );
    // Within the limit, the innermost command is read: this is a delete.
    let mut line = "rm -rf /".to_owned();
    for _ in 0..4 {
        line = format!("sh -c {}", shell_quote(&line));
    }
    assert_eq!(
        check_shell(&line, Some("/w"), &ShellOptions::default())
            .unwrap()
            .class,
        "recursive-delete"
    );
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}
