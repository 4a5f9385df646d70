//! The programs that run another program: stripped, so a rule sees what
//! really runs (`sudo env X=1 nice rm -rf /` is `rm -rf /`), and the
//! strings that are code read as code (`sh -c '…'`, `eval`, `su -c`, a
//! here-document or an `echo` piped to a shell, a base64 payload decoded
//! into one).

use crate::shell::{Command, Script, Stdin, Word, parse_into};
use std::collections::BTreeMap;

/// Shells: `-c STRING` is code, and with no script they run their stdin.
pub(crate) const SHELLS: &[&str] = &[
    "sh",
    "bash",
    "zsh",
    "dash",
    "ksh",
    "mksh",
    "ash",
    "fish",
    "busybox-sh",
];

/// Every program this module looks into (besides [`SHELLS`]): a test
/// pins it to the arms of `unwrap`'s match.
const WRAPPERS: &[&str] = &[
    "sudo",
    "doas",
    "nice",
    "nohup",
    "stdbuf",
    "ionice",
    "command",
    "builtin",
    "exec",
    "time",
    "unbuffer",
    "strace",
    "ltrace",
    "caffeinate",
    "chronic",
    "env",
    "timeout",
    "chrt",
    "taskset",
    "flock",
    "watch",
    "xargs",
    "su",
    "runuser",
    "eval",
    "ssh",
    "find",
    "busybox",
];

/// Options of a wrapper that take a value (so the value is not the program).
fn valued(wrapper: &str) -> &'static [&'static str] {
    match wrapper {
        "sudo" => &[
            "-u", "-g", "-C", "-h", "-p", "-r", "-t", "-U", "-D", "-R", "-T",
        ],
        "doas" => &["-u", "-C"],
        "env" => &["-u", "-C", "--unset", "--chdir", "-P"],
        "nice" => &["-n", "--adjustment"],
        "timeout" => &["-s", "-k", "--signal", "--kill-after"],
        "stdbuf" => &["-i", "-o", "-e"],
        "ionice" => &["-c", "-n", "-t", "-p", "-P", "-u"],
        "chrt" => &["-p"],
        "taskset" => &["-c", "--cpu-list"],
        "exec" => &["-a"],
        "xargs" => &[
            "-n",
            "-I",
            "-L",
            "-P",
            "-d",
            "-s",
            "-a",
            "-E",
            "-i",
            "--max-args",
            "--replace",
            "--max-procs",
            "--delimiter",
            "--arg-file",
        ],
        "strace" => &["-e", "-o", "-p", "-s", "-u"],
        "flock" => &["-w", "-E", "--timeout", "--conflict-exit-code"],
        "watch" => &["-n", "--interval", "-d"],
        "runuser" | "su" => &["-u", "-g", "-G", "-s", "--shell", "--group", "--user"],
        _ => &[],
    }
}

/// Strips wrappers from the command at `at` and reads any code it carries.
pub(crate) fn unwrap(
    at: usize,
    script: &mut Script,
    vars: &mut BTreeMap<String, Vec<String>>,
    depth: u8,
) {
    for _ in 0..16 {
        let Some(cmd) = script.commands.get(at) else {
            return;
        };
        let Some(program) = cmd.program().map(str::to_owned) else {
            return;
        };
        // Most commands are no wrapper: nothing to copy for them.
        if !WRAPPERS.contains(&program.as_str()) && !SHELLS.contains(&program.as_str()) {
            return;
        }
        let words = cmd.words.clone();
        let mut rest = 1usize;
        let skip_options = |rest: &mut usize, wrapper: &str| {
            let takes = valued(wrapper);
            while let Some(w) = words.get(*rest) {
                let t = w.text.as_str();
                if t == "--" {
                    *rest += 1;
                    break;
                }
                if !t.starts_with('-') || t == "-" {
                    break;
                }
                *rest += 1;
                if takes.contains(&t) {
                    *rest += 1;
                }
            }
        };
        match program.as_str() {
            "sudo" | "doas" | "nice" | "nohup" | "stdbuf" | "ionice" | "command" | "builtin"
            | "exec" | "time" | "unbuffer" | "strace" | "ltrace" | "caffeinate" | "chronic" => {
                if program == "command"
                    && words
                        .get(1)
                        .is_some_and(|w| w.text == "-v" || w.text == "-V")
                {
                    return;
                }
                skip_options(&mut rest, &program);
            }
            "env" => {
                skip_options(&mut rest, "env");
                // `env -S 'rm -rf /'` splits its string into a command.
                if let Some(pos) = words
                    .iter()
                    .position(|w| w.text == "-S" || w.text == "--split-string")
                    && let Some(s) = words.get(pos + 1)
                {
                    let text = s.text.clone();
                    parse_into(&text, depth + 1, Some("env -S"), script, vars);
                    return;
                }
                let first = rest;
                while words.get(rest).is_some_and(|w| {
                    w.text
                        .split_once('=')
                        .is_some_and(|(n, _)| crate::shell::is_name(n))
                }) {
                    rest += 1;
                }
                // `env NAME=value prog`: the program's environment, as if
                // written `NAME=value prog` (a proxy variable is a destination).
                let assigns: Vec<(String, Word)> = words[first..rest]
                    .iter()
                    .filter_map(|w| {
                        let (name, value) = w.text.split_once('=')?;
                        Some((
                            name.to_owned(),
                            Word {
                                text: value.to_owned(),
                                ..w.clone()
                            },
                        ))
                    })
                    .collect();
                if let Some(cmd) = script.commands.get_mut(at) {
                    cmd.assigns.extend(assigns);
                }
            }
            "timeout" => {
                skip_options(&mut rest, "timeout");
                rest += 1; // the duration
            }
            "chrt" | "taskset" => {
                skip_options(&mut rest, &program);
                rest += 1; // the priority or mask
            }
            "flock" => {
                skip_options(&mut rest, "flock");
                rest += 1; // the lock file
                if words.get(rest).is_some_and(|w| w.text == "-c") {
                    let text = words
                        .get(rest + 1)
                        .map(|w| w.text.clone())
                        .unwrap_or_default();
                    parse_into(&text, depth + 1, Some("flock -c"), script, vars);
                    return;
                }
            }
            "watch" => {
                skip_options(&mut rest, "watch");
                let text = join(&words[rest.min(words.len())..]);
                parse_into(&text, depth + 1, Some("watch"), script, vars);
                return;
            }
            "xargs" => {
                skip_options(&mut rest, "xargs");
                if rest >= words.len() {
                    return;
                }
                let mut inner: Vec<Word> = words[rest..].to_vec();
                match stdin_text(script, at, 0) {
                    // `echo / | xargs rm -rf`: the line shows the arguments.
                    Some(text) => inner.extend(text.split_whitespace().map(|t| Word {
                        text: t.to_owned(),
                        ..Word::default()
                    })),
                    None => inner.push(Word {
                        text: "$(stdin)".into(),
                        dynamic: true,
                        ..Word::default()
                    }),
                }
                replace_words(script, at, inner, "xargs");
                continue;
            }
            "su" | "runuser" => {
                if let Some(pos) = words
                    .iter()
                    .position(|w| w.text == "-c" || w.text == "--command")
                    && let Some(s) = words.get(pos + 1)
                {
                    let text = s.text.clone();
                    parse_into(&text, depth + 1, Some("su -c"), script, vars);
                }
                return;
            }
            "eval" => {
                let text = join(&words[1..]);
                parse_into(&text, depth + 1, Some("eval"), script, vars);
                return;
            }
            "ssh" => {
                // ssh [options] host [command…]: the command runs remotely, as a shell line.
                let mut i = 1;
                while let Some(w) = words.get(i) {
                    if !w.text.starts_with('-') {
                        break;
                    }
                    let flag = w.text.as_str();
                    i += 1;
                    if flag.len() == 2 && "bcDEeFIiJLlmOopQRSWw".contains(&flag[1..]) {
                        i += 1;
                    }
                }
                if words.len() > i + 1 {
                    let text = join(&words[i + 1..]);
                    parse_into(&text, depth + 1, Some("ssh (remote)"), script, vars);
                }
                return;
            }
            "find" => {
                find_exec(at, script, vars, depth);
                return;
            }
            p if SHELLS.contains(&p)
                || p == "busybox"
                    && words
                        .get(1)
                        .is_some_and(|w| SHELLS.contains(&w.text.as_str())) =>
            {
                shell_code(at, script, vars, depth);
                return;
            }
            "busybox" => {}
            _ => return,
        }
        if program == "busybox" {
            rest = 1;
        }
        if rest >= words.len() {
            return;
        }
        let inner = words[rest..].to_vec();
        replace_words(script, at, inner, &program);
    }
}

fn replace_words(script: &mut Script, at: usize, inner: Vec<Word>, wrapper: &str) {
    if let Some(cmd) = script.commands.get_mut(at) {
        cmd.words = inner;
        cmd.wrappers.push(wrapper.to_owned());
    }
}

/// Words joined back into a line (`eval a b` evaluates `a b`).
fn join(words: &[Word]) -> String {
    words
        .iter()
        .map(|w| w.text.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// A shell: `-c STRING` is parsed; with no script, its stdin is, when the
/// line shows what that is.
fn shell_code(at: usize, script: &mut Script, vars: &mut BTreeMap<String, Vec<String>>, depth: u8) {
    let Some(cmd) = script.commands.get(at) else {
        return;
    };
    let words = cmd.words.clone();
    let mut i = 1;
    if words.first().is_some_and(|w| w.text.ends_with("busybox")) {
        i = 2;
    }
    let mut has_script = false;
    while let Some(w) = words.get(i) {
        let t = w.text.as_str();
        if t == "-c"
            || (t.starts_with('-') && !t.starts_with("--") && t.contains('c') && t.len() <= 4)
        {
            if let Some(code) = words.get(i + 1) {
                let text = code.text.clone();
                parse_into(&text, depth + 1, Some("sh -c"), script, vars);
                // `sh -c "$(echo … | base64 -d)"`: the code is what the substitution prints.
                if let Some(&last) = code.substituted.iter().max()
                    && let Some(printed) = output_text(script, last, 0)
                {
                    parse_into(
                        &printed,
                        depth + 1,
                        Some("sh -c of a decoded payload"),
                        script,
                        vars,
                    );
                }
            }
            return;
        }
        if t == "-s" || t == "-" {
            break;
        }
        if t.starts_with('-') || t.starts_with('+') {
            if t == "-o" || t == "+o" || t == "--rcfile" || t == "--init-file" {
                i += 1;
            }
            i += 1;
            continue;
        }
        has_script = true;
        break;
    }
    if has_script {
        return;
    }
    let Some(text) = stdin_text(script, at, 0) else {
        return;
    };
    parse_into(&text, depth + 1, Some("stdin of a shell"), script, vars);
}

/// What a command reads on stdin, when the line shows it: a here-document,
/// a here-string, or what the command piping into it prints.
pub(crate) fn stdin_text(script: &Script, at: usize, hops: u8) -> Option<String> {
    if hops > 4 {
        return None;
    }
    match &script.commands.get(at)?.stdin {
        Stdin::Text(t) => Some(t.clone()),
        Stdin::Inherited => None,
        Stdin::Pipe(from) => output_text(script, *from, hops + 1),
    }
}

/// What a command prints, when the line shows it: `echo`, `printf`, `cat`
/// of its stdin, or `base64 -d` of any of those.
pub(crate) fn output_text(script: &Script, at: usize, hops: u8) -> Option<String> {
    if hops > 4 {
        return None;
    }
    let src = script.commands.get(at)?;
    match src.program()? {
        "echo" => Some(
            src.args()
                .iter()
                .filter(|w| !(w.text.starts_with('-') && w.text.len() == 2))
                .map(|w| w.text.as_str())
                .collect::<Vec<_>>()
                .join(" "),
        ),
        "printf" => src.args().first().map(|w| w.text.replace("\\n", "\n")),
        "cat" if src.args().is_empty() => stdin_text(script, at, hops + 1),
        "base64" | "openssl" | "base32"
            if src
                .args()
                .iter()
                .any(|w| matches!(w.text.as_str(), "-d" | "--decode" | "-D" | "-di" | "-A")) =>
        {
            let encoded = match src
                .args()
                .iter()
                .rev()
                .find(|w| !w.text.starts_with('-') && w.text != "enc")
            {
                Some(w) if src.program() == Some("base64") => Some(w.text.clone()),
                _ => stdin_text(script, at, hops + 1),
            }?;
            decode_base64(encoded.trim())
        }
        _ => None,
    }
}

/// Standard (or URL-safe) base64, padding optional, whitespace ignored.
pub(crate) fn decode_base64(text: &str) -> Option<String> {
    let mut out = Vec::new();
    let mut buf = 0u32;
    let mut bits = 0;
    for c in text.chars() {
        let v = match c {
            'A'..='Z' => c as u32 - 'A' as u32,
            'a'..='z' => c as u32 - 'a' as u32 + 26,
            '0'..='9' => c as u32 - '0' as u32 + 52,
            '+' | '-' => 62,
            '/' | '_' => 63,
            '=' => break,
            c if c.is_whitespace() => continue,
            _ => return None,
        };
        buf = (buf << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((buf >> bits) as u8);
            buf &= (1 << bits) - 1;
        }
    }
    String::from_utf8(out).ok()
}

/// `find ROOTS… -exec CMD {} ;`: CMD runs on things beneath ROOTS, so it is
/// added as a command whose `{}` reads `ROOT/…`.
fn find_exec(at: usize, script: &mut Script, vars: &mut BTreeMap<String, Vec<String>>, depth: u8) {
    let Some(cmd) = script.commands.get(at) else {
        return;
    };
    let words = cmd.words.clone();
    let roots: Vec<String> = words[1..]
        .iter()
        .take_while(|w| !w.text.starts_with('-') && w.text != "(" && w.text != "!")
        .map(|w| w.text.clone())
        .collect();
    let roots = if roots.is_empty() {
        vec![".".to_owned()]
    } else {
        roots
    };
    let mut i = 1;
    while i < words.len() {
        let t = words[i].text.as_str();
        if matches!(t, "-exec" | "-execdir" | "-ok" | "-okdir") {
            let end = words[i + 1..]
                .iter()
                .position(|w| w.text == ";" || w.text == "+")
                .map_or(words.len(), |p| i + 1 + p);
            for root in &roots {
                let inner: Vec<Word> = words[i + 1..end]
                    .iter()
                    .map(|w| {
                        let mut w = w.clone();
                        if w.text.contains("{}") {
                            w.text = w
                                .text
                                .replace("{}", &format!("{}/…", root.trim_end_matches('/')));
                            w.dynamic = true;
                        }
                        w
                    })
                    .collect();
                if inner.is_empty() {
                    continue;
                }
                let new = Command {
                    words: inner,
                    depth: depth + 1,
                    wrappers: vec!["find -exec".into()],
                    origin: Some("find -exec".into()),
                    ..Command::default()
                };
                let idx = script.commands.len();
                script.commands.push(new);
                unwrap(idx, script, vars, depth + 1);
            }
            i = end;
        }
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    /// Every program `unwrap` has an arm for is in `WRAPPERS`, so the
    /// early return never skips one.
    #[test]
    fn every_wrapper_unwrap_handles_is_listed() {
        let source = include_str!("wrappers.rs");
        let body = &source[source.find("match program.as_str() {").unwrap()..];
        let body = &body[..body.find("_ => return,").unwrap()];
        for arm in body
            .lines()
            .map(str::trim)
            .filter(|l| l.starts_with('"') || l.starts_with("| \""))
        {
            for name in arm.split('"').skip(1).step_by(2) {
                if name.starts_with('-') {
                    continue;
                }
                assert!(
                    super::WRAPPERS.contains(&name),
                    "`{name}` is handled but not in WRAPPERS"
                );
            }
        }
    }
}
