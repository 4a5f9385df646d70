//! `toolgate:secrets`: credentials in what the model is shown are redacted
//! (after the call), and a call that would write one into a file or a
//! command is refused (before it).
//!
//! # Why fixed shapes first, entropy only beside a name
//!
//! Most credentials announce themselves: a provider prefix (`ghp_`,
//! `AKIA`, `sk-ant-`, `xoxb-`), a PEM armour line, a JWT's `eyJ…`, a URL's
//! `user:password@`. Those are matched exactly, each with its length and
//! alphabet, so a git hash or a UUID is never taken for one. A string
//! without a shape is a secret only when a secret-like name sits right
//! before it (`API_KEY=…`, `"password": "…"`) and it looks random (mixed
//! classes of character, high entropy, not a placeholder like `${TOKEN}`
//! or `changeme`): high-entropy strings alone are everywhere in ordinary
//! output (hashes, lockfiles, base64 data) and redacting them would mangle
//! it. Matching is by hand rather than with `regex`, which would more than
//! double the component and its instantiation time.

use crate::guard::{Answer, Call, Options};
use crate::tools::{SHELL_TOOLS, command_line, written_text};
use serde_json::{Map, Value};

/// The kinds of secret it knows, by the name its answers use.
pub const CLASSES: &[&str] = &[
    "private-key",
    "aws-key",
    "github-token",
    "gitlab-token",
    "slack-token",
    "stripe-key",
    "openai-key",
    "anthropic-key",
    "google-api-key",
    "npm-token",
    "pypi-token",
    "huggingface-token",
    "sendgrid-key",
    "jwt",
    "connection-string",
    "assigned-secret",
];

/// The guard's options (each a list of strings).
pub const OPTIONS: &[(&str, &str)] = &[
    (
        "allow",
        "Exact strings never treated as secrets (test fixtures' fake keys).",
    ),
    ("allow_classes", "Kinds of secret this guard lets through."),
];

/// One secret found: where it is in the text, and its kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    /// Byte offsets of the secret (what is redacted).
    pub start: usize,
    /// End, exclusive.
    pub end: usize,
    /// One of [`CLASSES`].
    pub kind: &'static str,
}

/// `toolgate:secrets` on one call.
pub fn decide(call: &Call<'_>, config: &Map<String, Value>) -> Result<Answer, String> {
    let read = Options::read("secrets", config, OPTIONS)?;
    let allow = read.list("allow")?.unwrap_or_default();
    let allow_classes = read.classes("allow_classes", CLASSES)?;
    let keep = |f: &Found, text: &str| {
        allow_classes.iter().any(|c| c == f.kind)
            || allow.iter().any(|a| a == &text[f.start..f.end])
    };
    if call.pre {
        let texts: Vec<String> = if SHELL_TOOLS.contains(&call.tool) {
            command_line(call.input).into_iter().collect()
        } else {
            written_text(call.input)
                .into_iter()
                .map(str::to_owned)
                .collect()
        };
        for text in &texts {
            if let Some(f) = find(text).into_iter().find(|f| !keep(f, text)) {
                let into = if SHELL_TOOLS.contains(&call.tool) {
                    "into a command line"
                } else {
                    "into a file"
                };
                return Ok(Answer::Deny {
                    class: f.kind,
                    why: format!(
                        "it would write {} ({}) {into}; use a reference to where it is kept (an environment variable, a secret store) instead",
                        describe(f.kind),
                        preview(&text[f.start..f.end])
                    ),
                });
            }
        }
        return Ok(Answer::Allow);
    }
    let Some(output) = call.output else {
        return Ok(Answer::Allow);
    };
    // One pass: each string is scanned once, and rebuilt (a copy, cheaper
    // than a second scan) whether or not anything was found in it.
    let mut kinds = Vec::new();
    let output = map_strings(output, &mut |s| {
        let (text, found) = redact_with(s, &|f, t| keep(f, t));
        for k in found {
            if !kinds.contains(&k) {
                kinds.push(k);
            }
        }
        text
    });
    if kinds.is_empty() {
        return Ok(Answer::Allow);
    }
    Ok(Answer::Redact { output, kinds })
}

/// What a kind is, in words.
fn describe(kind: &str) -> String {
    match kind {
        "private-key" => "a private key".into(),
        "connection-string" => "a connection string with its password".into(),
        "assigned-secret" => "a secret assigned to a secret-like name".into(),
        "jwt" => "a JSON Web Token".into(),
        other => format!("a credential ({other})"),
    }
}

/// The first characters of a secret, enough to recognise it, never all.
fn preview(secret: &str) -> String {
    let head: String = secret.chars().take(4).collect();
    format!("{head}…, {} characters", secret.chars().count())
}

/// `value` with `f` applied to every string in it.
fn map_strings(value: &Value, f: &mut dyn FnMut(&str) -> String) -> Value {
    match value {
        Value::String(s) => Value::String(f(s)),
        Value::Array(items) => Value::Array(items.iter().map(|v| map_strings(v, f)).collect()),
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(k, v)| (k.clone(), map_strings(v, f)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// `text` with every secret replaced by `[REDACTED:kind]`, and the kinds.
pub fn redact(text: &str) -> (String, Vec<&'static str>) {
    redact_with(text, &|_, _| false)
}

fn redact_with(text: &str, keep: &dyn Fn(&Found, &str) -> bool) -> (String, Vec<&'static str>) {
    let mut out = String::with_capacity(text.len());
    let mut kinds = Vec::new();
    let mut at = 0;
    for f in find(text) {
        if keep(&f, text) {
            continue;
        }
        out.push_str(&text[at..f.start]);
        out.push_str("[REDACTED:");
        out.push_str(f.kind);
        out.push(']');
        at = f.end;
        kinds.push(f.kind);
    }
    out.push_str(&text[at..]);
    (out, kinds)
}

/// Every secret in `text`, in order, not overlapping.
pub fn find(text: &str) -> Vec<Found> {
    let bytes = text.as_bytes();
    let mut out: Vec<Found> = Vec::new();
    let mut i = 0;
    // Each detector starts only where its first byte can be, tested here
    // before it is called: the scan is a few comparisons per byte, so a
    // large output fits the guard's fuel (docs/guards.md has the figure).
    while let Some(&b) = bytes.get(i) {
        // Every secret starts with an ASCII byte, which is a char boundary.
        if !b.is_ascii() {
            i += 1;
            continue;
        }
        let prev = if i == 0 { b' ' } else { bytes[i - 1] };
        // Only a token's first byte starts a shaped match: `xAKIA…` is not a key.
        // PEM armour is its own boundary (`…NOP-----BEGIN PRIVATE KEY`): read
        // only after a token, it would be found once that token is redacted,
        // and a redacted output must hold nothing `find` finds (the hostile
        // property test found this).
        let mut found = None;
        if (!is_token_byte(prev) || b == b'-') && SHAPE_STARTS.contains(&b) {
            found = shaped(text, i);
        }
        if found.is_none() && b == b':' {
            found = connection_password(text, i);
        }
        if found.is_none() && matches!(prev, b'=' | b':' | b'"' | b'\'' | b' ' | b'\t') {
            found = assigned(text, i);
        }
        match found {
            Some(f) if f.end > i => {
                i = f.end;
                out.push(f);
            }
            _ => i += 1,
        }
    }
    out
}

/// The first bytes of the shaped secrets ([`shaped`] matches nothing else).
const SHAPE_STARTS: &[u8] = b"-AgxsrwnphSe";

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// The length of the run of bytes from `at` that `ok` accepts.
fn run(bytes: &[u8], at: usize, ok: impl Fn(u8) -> bool) -> usize {
    bytes[at.min(bytes.len())..]
        .iter()
        .take_while(|&&b| ok(b))
        .count()
}

fn alnum(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

fn url_safe(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// A secret with a fixed shape starting at `i` (at a token boundary).
fn shaped(text: &str, i: usize) -> Option<Found> {
    let bytes = text.as_bytes();
    let rest = &text[i..];
    let found = |len: usize, kind: &'static str| {
        Some(Found {
            start: i,
            end: i + len,
            kind,
        })
    };
    // A token of `len` bytes must end there (not run on into more token).
    let ends = |len: usize| bytes.get(i + len).is_none_or(|b| !alnum(*b));
    if rest.starts_with("-----BEGIN ") {
        let line_end = rest.find('\n').unwrap_or(rest.len());
        if rest[..line_end].contains("PRIVATE KEY") {
            // Through the END line's closing dashes, or to the end of the
            // text when it was cut off.
            let end = rest[line_end..]
                .find("-----END ")
                .map(|e| line_end + e + "-----END ".len())
                .and_then(|e| rest[e..].find("-----").map(|n| e + n + 5))
                .unwrap_or(rest.len());
            return found(end, "private-key");
        }
        return None;
    }
    for prefix in ["AKIA", "ASIA", "ABIA", "ACCA"] {
        if rest.starts_with(prefix) {
            let n = run(bytes, i + 4, |b| {
                b.is_ascii_uppercase() || b.is_ascii_digit()
            });
            if n == 16 && ends(20) {
                return found(20, "aws-key");
            }
        }
    }
    for prefix in ["ghp_", "gho_", "ghu_", "ghs_", "ghr_"] {
        if rest.starts_with(prefix) {
            let n = run(bytes, i + 4, alnum);
            if n >= 36 {
                return found(4 + n, "github-token");
            }
        }
    }
    if rest.starts_with("github_pat_") {
        let n = run(bytes, i + 11, |b| alnum(b) || b == b'_');
        if n >= 22 {
            return found(11 + n, "github-token");
        }
    }
    if rest.starts_with("glpat-") {
        let n = run(bytes, i + 6, url_safe);
        if n >= 20 {
            return found(6 + n, "gitlab-token");
        }
    }
    if rest.len() > 5
        && rest.starts_with("xox")
        && b"abprse".contains(&bytes[i + 3])
        && bytes[i + 4] == b'-'
    {
        let n = run(bytes, i + 5, url_safe);
        if n >= 10 && rest[5..5 + n].bytes().any(|b| b.is_ascii_digit()) {
            return found(5 + n, "slack-token");
        }
    }
    // Slack's app-level tokens: `xapp-1-A…-1…-hex`.
    if rest.starts_with("xapp-") {
        let n = run(bytes, i + 5, url_safe);
        if n >= 20 && rest[5..5 + n].bytes().any(|b| b.is_ascii_digit()) {
            return found(5 + n, "slack-token");
        }
    }
    for prefix in ["sk_live_", "rk_live_", "sk_test_", "rk_test_", "whsec_"] {
        if rest.starts_with(prefix) {
            let n = run(bytes, i + prefix.len(), alnum);
            if n >= 16 {
                return found(prefix.len() + n, "stripe-key");
            }
        }
    }
    if rest.starts_with("sk-ant-") {
        let n = run(bytes, i + 7, url_safe);
        if n >= 20 {
            return found(7 + n, "anthropic-key");
        }
    }
    if rest.starts_with("sk-") {
        let n = run(bytes, i + 3, url_safe);
        let body = &rest[3..3 + n];
        if n >= 20
            && body.bytes().any(|b| b.is_ascii_digit())
            && body.bytes().any(|b| b.is_ascii_uppercase())
        {
            return found(3 + n, "openai-key");
        }
    }
    if rest.starts_with("AIza") {
        let n = run(bytes, i + 4, url_safe);
        if n == 35 {
            return found(39, "google-api-key");
        }
    }
    if rest.starts_with("npm_") {
        let n = run(bytes, i + 4, alnum);
        if n == 36 {
            return found(40, "npm-token");
        }
    }
    if rest.starts_with("pypi-AgE") {
        let n = run(bytes, i + 8, url_safe);
        if n >= 50 {
            return found(8 + n, "pypi-token");
        }
    }
    if rest.starts_with("hf_") {
        let n = run(bytes, i + 3, alnum);
        if (30..=40).contains(&n) && rest[3..3 + n].bytes().any(|b| b.is_ascii_uppercase()) {
            return found(3 + n, "huggingface-token");
        }
    }
    if rest.starts_with("SG.") {
        let a = run(bytes, i + 3, url_safe);
        if a == 22 && bytes.get(i + 25) == Some(&b'.') {
            let b = run(bytes, i + 26, url_safe);
            if b == 43 {
                return found(69, "sendgrid-key");
            }
        }
    }
    if rest.starts_with("eyJ") {
        let a = run(bytes, i, url_safe);
        if a >= 10 && bytes.get(i + a) == Some(&b'.') && rest[a + 1..].starts_with("eyJ") {
            let b = run(bytes, i + a + 1, url_safe);
            if b >= 10 && bytes.get(i + a + 1 + b) == Some(&b'.') {
                let c = run(bytes, i + a + b + 2, url_safe);
                if c >= 10 {
                    return found(a + b + c + 2, "jwt");
                }
            }
        }
    }
    None
}

/// The password of `scheme://user:password@host` starting at `i` (at the
/// `:` after the user): only the password is redacted.
fn connection_password(text: &str, i: usize) -> Option<Found> {
    let bytes = text.as_bytes();
    if bytes[i] != b':' {
        return None;
    }
    // Walk back over the user to `://`.
    let user_start = i - run_back(bytes, i, |b| url_safe(b) || b == b'.' || b == b'%');
    // The user may be empty: `redis://:password@host` is Redis's own form.
    if user_start < 3 || &bytes[user_start - 3..user_start] != b"://" {
        return None;
    }
    let n = run(bytes, i + 1, |b| {
        !matches!(
            b,
            b'@' | b'/' | b' ' | b'\n' | b'\t' | b'"' | b'\'' | b'`' | b'<' | b'>'
        )
    });
    if n == 0 || bytes.get(i + 1 + n) != Some(&b'@') {
        return None;
    }
    let password = &text[i + 1..i + 1 + n];
    // `postgres:postgres@`: a default account's, the same as its user.
    let default_account = &text[user_start..i] == password;
    (!placeholder(password) && !default_account).then_some(Found {
        start: i + 1,
        end: i + 1 + n,
        kind: "connection-string",
    })
}

fn run_back(bytes: &[u8], at: usize, ok: impl Fn(u8) -> bool) -> usize {
    bytes[..at].iter().rev().take_while(|&&b| ok(b)).count()
}

/// Names that say the value after them is a secret.
const SECRET_NAMES: &[&str] = &[
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "api_key",
    "apikey",
    "api-key",
    "access_key",
    "accesskey",
    "private_key",
    "client_secret",
    "auth",
    "credential",
];

/// Name parts that make a secret-like name something else (`token_count`,
/// `password_hash_algorithm`).
const NOT_SECRET_NAMES: &[&str] = &[
    "count",
    "length",
    "limit",
    "type",
    "usage",
    "url",
    "uri",
    "file",
    "path",
    "name",
    "id",
    "expires",
    "ttl",
    "max",
    "min",
    "size",
    "prompt",
    "field",
    "env",
    "header",
    "policy",
    "algorithm",
    "endpoint",
    "method",
    "mode",
    "required",
    "enabled",
];

/// Whether a name says its value is a secret (`API_KEY`, `db.password`,
/// `--docker-password`), and no part of it says otherwise (`token_count`).
pub(crate) fn secret_name(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    let parts: Vec<&str> = name.split(['_', '-', '.']).collect();
    // A `…_KEY` is a secret when the rest says what kind of key
    // (`JWT_SIGNING_KEY`), not any key (`CACHE_KEY`, `SORT_KEY`).
    const KEY_KINDS: &[&str] = &[
        "signing",
        "encryption",
        "hmac",
        "jwt",
        "master",
        "session",
        "crypt",
        "cipher",
        "app",
        "license",
        "service",
        "deploy",
        "ssh",
        "gpg",
        "pgp",
        "webhook",
        "sign",
        "aes",
        "rsa",
        "cookie",
        "csrf",
    ];
    let kind_of_key = parts.last() == Some(&"key")
        && parts[..parts.len() - 1]
            .iter()
            .any(|p| KEY_KINDS.contains(p));
    // `DB_PASS`, `DB_PWD`: the short forms, as a whole part only.
    let short = parts.iter().any(|p| matches!(*p, "pass" | "pwd" | "pw"));
    (kind_of_key
        || short
        || SECRET_NAMES.iter().any(|s| {
            name.ends_with(s)
                || parts
                    .iter()
                    .any(|p| p == s || p.ends_with(s) && s.len() > 5)
        }))
        && !parts.iter().any(|p| NOT_SECRET_NAMES.contains(p))
}

/// A value assigned to a secret-like name starting at `i` (the value's
/// first byte, after `=`, `:` or `: "`): `API_KEY=q8Zr…`, `"password": "…"`.
fn assigned(text: &str, i: usize) -> Option<Found> {
    let bytes = text.as_bytes();
    // In quotes a value is everything up to the closing quote.
    let quote = (i > 0 && matches!(bytes[i - 1], b'"' | b'\'')).then(|| bytes[i - 1]);
    let starts = match quote {
        Some(q) => bytes[i] != q && !bytes[i].is_ascii_whitespace(),
        None => url_safe(bytes[i]) || b"+/.~!#%^*".contains(&bytes[i]),
    };
    if i == 0 || !starts {
        return None;
    }
    // Step back over an opening quote, spaces and the `=`/`:`.
    let mut j = i;
    if quote.is_some() {
        j -= 1;
    }
    let spaced = run_back(bytes, j, |b| b == b' ' || b == b'\t');
    j -= spaced;
    if j == 0 {
        return None;
    }
    if matches!(bytes[j - 1], b'=' | b':') {
        j -= 1;
    } else if !(spaced > 0 && long_option_before(bytes, j)) {
        // Only a command line's `--docker-password VALUE` names a value
        // with a space alone: a word before a space is no name in prose.
        return None;
    }
    if j > 0 && bytes[j - 1] == b':' {
        return None; // `::` is a path, not an assignment
    }
    if j > 0 && matches!(bytes[j - 1], b'"' | b'\'') {
        j -= 1;
    }
    j -= run_back(bytes, j, |b| b == b' ' || b == b'\t');
    let name_len = run_back(bytes, j, |b| url_safe(b) || b == b'.');
    if name_len == 0 {
        return None;
    }
    if !secret_name(&text[j - name_len..j]) {
        return None;
    }
    let n = match quote {
        Some(q) => run(bytes, i, |b| b != q && b.is_ascii_graphic()),
        None => run(bytes, i, |b| url_safe(b) || b"+/=.~!#%^*$&?@".contains(&b)),
    };
    let value = &text[i..i + n];
    let value = value.trim_end_matches(['.', ',']);
    let next = bytes.get(i + value.len()).copied();
    if matches!(next, Some(b'(' | b'[' | b'{')) || placeholder(value) || !random_looking(value) {
        return None;
    }
    Some(Found {
        start: i,
        end: i + value.len(),
        kind: "assigned-secret",
    })
}

/// Whether the word ending at `j` is a long option, `--name` (at the start
/// of the text or after a space).
fn long_option_before(bytes: &[u8], j: usize) -> bool {
    let word = run_back(bytes, j, |b| url_safe(b) || b == b'.');
    let start = j - word;
    let text = &bytes[start..j];
    text.len() > 3
        && text.starts_with(b"--")
        && text[2] != b'-'
        && (start == 0 || matches!(bytes[start - 1], b' ' | b'\t' | b'\n'))
}

/// A value that stands for a secret rather than being one.
fn placeholder(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    value.is_empty()
        || value.starts_with('$')
        || value.starts_with('<')
        || value.starts_with("{{")
        || value.contains("${")
        || value
            .chars()
            .all(|c| c == '*' || c == 'x' || c == 'X' || c == '.' || c == '•')
        || [
            "changeme",
            "password",
            "secret",
            "example",
            "redacted",
            "placeholder",
            "your",
            "xxxx",
            "dummy",
            "test",
            "fake",
            "none",
            "null",
            "true",
            "false",
            "undefined",
            "env.",
            "process.",
            "os.environ",
            "settings.",
            "config.",
        ]
        .iter()
        .any(|p| lower.contains(p))
}

/// Whether a value looks machine-made: long enough, letters and digits
/// mixed, and high in entropy.
fn random_looking(value: &str) -> bool {
    let len = value.chars().count();
    if !(8..=512).contains(&len) {
        return false;
    }
    let digits = value.bytes().any(|b| b.is_ascii_digit());
    let letters = value.bytes().any(|b| b.is_ascii_alphabetic());
    let upper = value.bytes().any(|b| b.is_ascii_uppercase());
    let lower = value.bytes().any(|b| b.is_ascii_lowercase());
    let symbols = value.bytes().any(|b| !b.is_ascii_alphanumeric());
    // Random mixed case flips case often; a CamelCase word does not.
    let flips = value
        .as_bytes()
        .windows(2)
        .filter(|w| {
            w[0].is_ascii_uppercase() != w[1].is_ascii_uppercase()
                && w[1].is_ascii_alphabetic()
                && w[0].is_ascii_alphabetic()
        })
        .count();
    let mixed_case = upper && lower && (symbols || (len >= 10 && flips >= 4));
    if !(mixed_case || digits && letters) {
        return false;
    }
    entropy(value) >= if len >= 16 { 3.3 } else { 2.7 }
}

/// Shannon entropy in bits per character.
fn entropy(value: &str) -> f64 {
    let mut counts = [0u32; 256];
    for b in value.bytes() {
        counts[b as usize] += 1;
    }
    let n = value.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_git_hash_a_uuid_and_a_lockfile_checksum_are_left_alone() {
        for text in [
            "commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
            "id: 123e4567-e89b-12d3-a456-426614174000",
            "checksum = \"b1a5e9f1c0a4d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7\"",
            "integrity sha512-Xz4Ftr5z0Pl3Yu+XbXzR9W0kq0bC8YDwXbQ1qQ2sA7vJv9Ut2gRj4ZcYc8w==",
            "token_count: 4096",
            "password: ********",
        ] {
            assert_eq!(find(text), vec![], "{text}");
        }
    }

    #[test]
    fn only_the_password_of_a_connection_string_is_redacted() {
        let (text, kinds) = redact("DATABASE_URL=postgres://app:Zk3v9Qp2@db.internal:5432/app");
        assert_eq!(
            text,
            "DATABASE_URL=postgres://app:[REDACTED:connection-string]@db.internal:5432/app"
        );
        assert_eq!(kinds, vec!["connection-string"]);
    }

    #[test]
    fn a_private_key_is_redacted_from_armour_to_armour() {
        let key = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n";
        let (text, _) = redact(&format!("before\n{key}after"));
        assert_eq!(text, "before\n[REDACTED:private-key]\nafter");
    }

    #[test]
    fn pem_armour_right_after_a_token_is_found_so_redaction_leaves_none() {
        let text = "sk_live_ABCDEFGHIJKLMNOP-----BEGIN PRIVATE KEY-----";
        let kinds: Vec<&str> = find(text).iter().map(|f| f.kind).collect();
        assert_eq!(kinds, ["stripe-key", "private-key"]);
        let (shown, _) = redact(text);
        assert!(find(&shown).is_empty(), "{shown}");
    }
}
