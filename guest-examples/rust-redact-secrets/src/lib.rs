//! A toolgate hook, compiled to a WebAssembly component: redacts secrets from
//! tool output before the model sees it (`post_tool_use`, `replace`).
//!
//! Why post and not pre: the secret is already on disk or in the environment;
//! what must not happen is that it enters the model's context (and from there
//! logs, transcripts and other tools). The tool runs; its output is rewritten.
//!
//! Why walk the JSON rather than the text: a private key inside a JSON string
//! is one line with `\n` escapes, and a regex over the encoded text would have
//! to know JSON's escaping. Parsed, every string is plain text, and the output
//! stays the same JSON shape with only secret substrings replaced.
//!
//! Found: AWS access key ids (`AKIA…`/`ASIA…`), AWS secret keys given as
//! `aws_secret_access_key = …`, GitHub tokens (`ghp_`, `gho_`, `ghu_`, `ghs_`,
//! `ghr_`, `github_pat_`), Slack tokens, and PEM private-key blocks. The hook's
//! config may add patterns: `{"extra_patterns": ["sk-[A-Za-z0-9]{20,}"]}`.

use regex_lite::Regex;
use toolgate_hook::serde_json::Value;
use toolgate_hook::{Hook, Request, Verdict};

/// (what it is, literal hints, regex). A pattern's regex is compiled only
/// when one of its hints occurs in the output (in any case): every call is a fresh
/// instance, so compiling all six regexes up front would be paid on every
/// call, secret or not (measured: ~1.4 M fuel, ~75 µs).
const BUILT_IN: &[(&str, &[&str], &str)] = &[
    (
        "private key",
        &["PRIVATE KEY-----"],
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----",
    ),
    ("AWS access key id", &["AKIA", "ASIA"], r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    (
        "AWS secret access key",
        &["aws_secret_access_key"],
        r"(?i)aws_secret_access_key\s*[=:]\s*[A-Za-z0-9/+]{40}",
    ),
    ("GitHub token", &["ghp_", "gho_", "ghu_", "ghs_", "ghr_"], r"\bgh[pousr]_[A-Za-z0-9]{36,}\b"),
    ("GitHub token", &["github_pat_"], r"\bgithub_pat_[A-Za-z0-9_]{22,}\b"),
    ("Slack token", &["xox"], r"\bxox[baprs]-[A-Za-z0-9-]{10,}\b"),
];

struct RedactSecrets;

impl Hook for RedactSecrets {
    fn decide(request: Request) -> Result<Verdict, String> {
        let Some(result) = &request.result else {
            return Ok(Verdict::allow()); // pre_tool_use: nothing to redact yet
        };
        let patterns = patterns(&request, &result.output)?;
        if patterns.is_empty() {
            return Ok(Verdict::allow());
        }
        let mut output: Value = request
            .output_json()?
            .unwrap_or(Value::Null);
        let mut found: Vec<&str> = Vec::new();
        redact(&mut output, &patterns, &mut found);
        if found.is_empty() {
            return Ok(Verdict::allow());
        }
        found.sort_unstable();
        found.dedup();
        Ok(Verdict::replace(&output, result.is_error)?.with_context(format!(
            "toolgate redacted {} from this tool output ({}). The values are \
             still where the tool found them; do not try to print them another way.",
            if found.len() == 1 { "a secret" } else { "secrets" },
            found.join(", ")
        )))
    }
}

/// The patterns that could match `text`: built-ins whose hints occur in it,
/// and every configured pattern.
fn patterns(request: &Request, text: &str) -> Result<Vec<(String, Regex)>, String> {
    let mut out = Vec::new();
    let lower = text.to_ascii_lowercase(); // hints match in any case, like `(?i)`
    for (what, hints, re) in BUILT_IN {
        if hints.iter().any(|h| lower.contains(&h.to_ascii_lowercase())) {
            out.push(((*what).to_string(), Regex::new(re).map_err(|e| e.to_string())?));
        }
    }
    if let Some(config) = request.config_json::<Value>()? {
        for extra in config
            .get("extra_patterns")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let re = extra
                .as_str()
                .ok_or("config.extra_patterns must be strings")?;
            let compiled = Regex::new(re)
                .map_err(|e| format!("config.extra_patterns: `{re}` is not a regex: {e}"))?;
            out.push(("configured pattern".to_string(), compiled));
        }
    }
    Ok(out)
}

/// Replaces every match in every string of `value` (object keys included are
/// left alone: they name fields, they do not carry secrets).
fn redact<'a>(value: &mut Value, patterns: &'a [(String, Regex)], found: &mut Vec<&'a str>) {
    match value {
        Value::String(s) => {
            for (what, re) in patterns {
                if re.is_match(s) {
                    found.push(what);
                    let label = format!("[REDACTED {what}]");
                    *s = re.replace_all(s, label.as_str()).into_owned();
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| redact(v, patterns, found)),
        Value::Object(map) => map.values_mut().for_each(|v| redact(v, patterns, found)),
        _ => {}
    }
}

toolgate_hook::export!(RedactSecrets);
