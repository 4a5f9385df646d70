//! The `shell` guard's rules: each threat class is one function over the
//! parsed line. A rule sees programs and arguments (after wrappers were
//! stripped), redirections, pipes and what the line defines; it never
//! matches raw text, so `echo "rm -rf /"` is an echo.

use crate::guard::{Answer, Call, Options};
use crate::paths::{
    TEMP_DIRS, beneath, guard_config, harmless_device, is_a_home, is_system, resolve, secret_kind,
};
use crate::shell::{Command, Script, Stdin, Word, parse};
use crate::tools::{SHELL_TOOLS, command_line};
use crate::wrappers::SHELLS;
use serde_json::{Map, Value};

/// The classes of danger the `shell` guard knows, by the name its reasons
/// and its options use.
pub const CLASSES: &[&str] = &{
    let mut names = [""; RULES.len()];
    let mut i = 0;
    while i < RULES.len() {
        names[i] = RULES[i].0;
        i += 1;
    }
    names
};

/// One rule per class, in the order they are tried (the first that finds
/// something names the class): the one list of class names.
const RULES: [(&str, Rule); 12] = [
    ("reverse-shell", reverse_shell),
    ("fork-bomb", fork_bomb),
    ("download-exec", download_exec),
    ("filesystem-format", filesystem_format),
    ("device-write", device_write),
    ("recursive-delete", recursive_delete),
    ("system-permissions", system_permissions),
    ("system-damage", system_damage),
    ("disable-guard", disable_guard),
    ("credential-dump", credential_dump),
    ("history-rewrite", history_rewrite),
    ("discard-work", discard_work),
];

/// The guard's options as hooks.json's `config` names them, each a list of
/// strings, with what it means: the guard reads exactly these (any other
/// key is refused), and the published JSON Schema describes them from here.
pub const OPTIONS: &[(&str, &str)] = &[
    (
        "tools",
        "The exact tool names judged as shell commands; default, every agent's shell tool.",
    ),
    (
        "workspaces",
        "More folders (absolute) that count as the workspace, besides the agent's working directory.",
    ),
    (
        "protected_branches",
        "Branches whose history may not be rewritten (`*` matches the rest of the name); default main, master, release/*, production.",
    ),
    (
        "allow_classes",
        "Classes of danger this guard lets through.",
    ),
    (
        "ask_classes",
        "Classes of danger a person decides: the guard answers `ask` instead of refusing (a confirmation in Claude Code; elsewhere a refusal that says one was needed).",
    ),
    (
        "deletable",
        "Folders (absolute or ~/…) beneath which recursive deletes are fine, besides the temp folders and ~/.cache.",
    ),
    (
        "trusted_installers",
        "Hosts whose installers may be piped into a shell (sh.rustup.rs).",
    ),
];

/// The guard's options (its hooks.json `config`).
#[derive(Clone, Debug)]
pub struct ShellOptions {
    /// The workspace roots; the agent's working directory is always one.
    pub workspaces: Vec<String>,
    /// Branches whose history must not be rewritten (`*` matches the rest).
    pub protected_branches: Vec<String>,
    /// Classes this guard lets through.
    pub allow_classes: Vec<String>,
    /// Classes a person decides (`ask` instead of a refusal).
    pub ask_classes: Vec<String>,
    /// Folders beneath which recursive deletes are fine (default: the temp folders).
    pub deletable: Vec<String>,
    /// Hosts whose installers may be piped into a shell (`sh.rustup.rs`).
    pub trusted_installers: Vec<String>,
}

impl Default for ShellOptions {
    fn default() -> Self {
        Self {
            workspaces: Vec::new(),
            protected_branches: vec![
                "main".into(),
                "master".into(),
                "release/*".into(),
                "production".into(),
            ],
            allow_classes: Vec::new(),
            ask_classes: Vec::new(),
            deletable: TEMP_DIRS
                .iter()
                .chain(&["~/.cache", "~/Library/Caches"])
                .map(|s| (*s).to_owned())
                .collect(),
            trusted_installers: Vec::new(),
        }
    }
}

/// Why a command line is dangerous.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// One of [`CLASSES`].
    pub class: &'static str,
    /// What was found, for the model and the operator.
    pub why: String,
}

/// The first danger in `line`, if any. `cwd` is the agent's working folder.
pub fn check(line: &str, cwd: Option<&str>, options: &ShellOptions) -> Option<Finding> {
    let script = parse(line);
    let heres = folders(&script, cwd);
    if script.too_deep {
        return Some(Finding {
            class: "download-exec",
            why: "the command nests shells, evals or decoded payloads deeper than the guard reads"
                .into(),
        });
    }
    for (class, rule) in RULES {
        if options.allow_classes.iter().any(|c| c == class) {
            continue;
        }
        for (at, here) in heres.iter().enumerate() {
            let ctx = Ctx {
                script: &script,
                cwd,
                here: here.as_deref(),
                options,
            };
            if let Some(why) = rule(&ctx, at) {
                return Some(Finding { class, why });
            }
        }
    }
    None
}

/// `toolgate:shell` on one call: a shell tool's command line before it
/// runs (by default every agent's shell tool; `tools` names them exactly).
pub fn decide(call: &Call<'_>, config: &Map<String, Value>) -> Result<Answer, String> {
    let read = Options::read("shell", config, OPTIONS)?;
    let mut options = ShellOptions::default();
    if let Some(v) = read.list("workspaces")? {
        options.workspaces = v;
    }
    if let Some(v) = read.list("protected_branches")? {
        options.protected_branches = v;
    }
    options.allow_classes = read.classes("allow_classes", CLASSES)?;
    options.ask_classes = read.classes("ask_classes", CLASSES)?;
    if let Some(v) = read.list("deletable")? {
        options.deletable.extend(v);
    }
    if let Some(v) = read.list("trusted_installers")? {
        options.trusted_installers = v;
    }
    let is_shell = match read.list("tools")? {
        Some(list) => list.iter().any(|t| t == call.tool),
        None => SHELL_TOOLS.contains(&call.tool),
    };
    if !call.pre || !is_shell {
        return Ok(Answer::Allow);
    }
    let Some(command) = command_line(call.input) else {
        return Err(format!(
            "the `{}` tool's input has no `command` this guard can read",
            call.tool
        ));
    };
    // A danger a person may not wave through is looked for first, past the
    // classes a person decides: otherwise a person asked about `git reset
    // --hard` would also be letting through the `rm -rf ~` beside it.
    if options.ask_classes.is_empty() {
        return Ok(match check(&command, call.cwd, &options) {
            Some(Finding { class, why }) => Answer::Deny { class, why },
            None => Answer::Allow,
        });
    }
    let mut refused = options.clone();
    refused
        .allow_classes
        .extend(options.ask_classes.iter().cloned());
    if let Some(Finding { class, why }) = check(&command, call.cwd, &refused) {
        return Ok(Answer::Deny { class, why });
    }
    Ok(match check(&command, call.cwd, &options) {
        Some(Finding { class, why }) => Answer::Ask { class, why },
        None => Answer::Allow,
    })
}

/// The folder each command runs in: the agent's, until a `cd DIR` or
/// `pushd DIR` the line shows moves it (`cd` alone: the home). A `cd` to a
/// folder the line does not show (`cd "$D"`, `cd -`) leaves it where it
/// was: the guard cannot follow it, and the workspace is what the agent
/// was in. A subshell's `cd` is read as lasting (the parser keeps no
/// scopes): later relative paths may be judged as in that folder, which
/// errs toward refusing.
fn folders(script: &Script, cwd: Option<&str>) -> Vec<Option<String>> {
    let mut here = cwd.map(str::to_owned);
    let mut out = Vec::with_capacity(script.commands.len());
    for cmd in &script.commands {
        out.push(here.clone());
        if matches!(cmd.program(), Some("cd" | "pushd")) {
            match cmd.args().iter().find(|w| !w.text.starts_with('-')) {
                None if cmd.args().is_empty() => here = Some("~".into()),
                Some(w) if !w.dynamic && !w.text.contains(['$', '`']) => {
                    here = Some(resolve(&w.text, here.as_deref()));
                }
                _ => {}
            }
        }
    }
    out
}

/// One class's rule: what it found in the command at an index, if anything.
type Rule = fn(&Ctx<'_>, usize) -> Option<String>;

struct Ctx<'a> {
    script: &'a Script,
    /// The agent's working directory: the workspace.
    cwd: Option<&'a str>,
    /// Where this command runs (after the line's `cd`s): what its relative
    /// paths mean.
    here: Option<&'a str>,
    options: &'a ShellOptions,
}

impl Ctx<'_> {
    fn cmd(&self, at: usize) -> &Command {
        &self.script.commands[at]
    }

    fn path(&self, word: &str) -> String {
        resolve(word, self.here)
    }

    fn in_workspace(&self, resolved: &str) -> bool {
        self.cwd.is_some_and(|c| beneath(resolved, c))
            || self.options.workspaces.iter().any(|w| beneath(resolved, w))
            || (self.cwd.is_none()
                && !resolved.starts_with('/')
                && !resolved.starts_with('~')
                && !resolved.starts_with(".."))
    }

    fn workspace_root(&self, resolved: &str) -> bool {
        let root = resolved.trim_end_matches("/*").trim_end_matches('*');
        let root = if root.is_empty() && resolved.starts_with('*') {
            "."
        } else {
            root
        };
        self.cwd
            .is_some_and(|c| c.trim_end_matches('/') == root.trim_end_matches('/'))
            || self
                .options
                .workspaces
                .iter()
                .any(|w| w.trim_end_matches('/') == root.trim_end_matches('/'))
            || (self.cwd.is_none() && (root.is_empty() || root == "."))
    }

    /// Who reads this command's output through a pipe.
    fn readers(&self, at: usize) -> impl Iterator<Item = usize> + '_ {
        self.script
            .commands
            .iter()
            .enumerate()
            .filter(move |(_, c)| c.stdin == Stdin::Pipe(at))
            .map(|(i, _)| i)
    }

    /// The programs a word's substitutions run, transitively.
    fn substituted_programs(&self, word: &Word) -> Vec<usize> {
        let mut out = Vec::new();
        let mut todo: Vec<usize> = word.substituted.clone();
        while let Some(i) = todo.pop() {
            if out.contains(&i) || out.len() > 64 {
                continue;
            }
            out.push(i);
            if let Some(c) = self.script.commands.get(i) {
                for w in &c.words {
                    todo.extend(&w.substituted);
                }
            }
        }
        out
    }
}

fn flags(cmd: &Command) -> impl Iterator<Item = &str> {
    cmd.args()
        .iter()
        .map(|w| w.text.as_str())
        .take_while(|t| *t != "--")
        .filter(|t| t.starts_with('-') && t.len() > 1)
}

fn has_short(cmd: &Command, letter: char) -> bool {
    flags(cmd).any(|f| !f.starts_with("--") && f[1..].contains(letter))
}

fn has_long(cmd: &Command, name: &str) -> bool {
    flags(cmd).any(|f| f == name || f.strip_prefix(name).is_some_and(|r| r.starts_with('=')))
}

/// Arguments that are not options (everything after `--`).
fn operands(cmd: &Command) -> Vec<&Word> {
    let mut out = Vec::new();
    let mut after = false;
    for w in cmd.args() {
        if after {
            out.push(w);
        } else if w.text == "--" {
            after = true;
        } else if !(w.text.starts_with('-') && w.text.len() > 1)
            || w.quoted && !w.text.starts_with('-')
        {
            out.push(w);
        }
    }
    out
}

pub(crate) fn program(cmd: &Command) -> &str {
    cmd.program().unwrap_or("")
}

/// A resolved path without its trailing `/*`, `/.*` or `/…` (what `find`
/// reaches beneath a root), and whether it had `/…`: things strictly
/// beneath it, not the folder itself.
fn split_beneath(resolved: &str) -> (&str, bool) {
    let inside = resolved.ends_with("/…");
    let base = resolved
        .trim_end_matches("/…")
        .trim_end_matches("/*")
        .trim_end_matches("/.*");
    (if base.is_empty() { "/" } else { base }, inside)
}

/// A path word's danger as a deletion target, if it has one.
fn delete_danger(ctx: &Ctx<'_>, word: &Word) -> Option<String> {
    let text = word.text.as_str();
    // `$X/` or `"$X"/*` with X unknown: an unset X deletes from `/`.
    if word.dynamic
        && let Some(rest) = text.strip_prefix('$')
    {
        let after = rest
            .trim_start_matches('{')
            .trim_start_matches(|c: char| c == '_' || c.is_ascii_alphanumeric())
            .trim_start_matches('}');
        if matches!(after, "/" | "/*" | "/.*") {
            return Some(format!(
                "`{text}` is `/{}` when the variable is unset",
                after.trim_start_matches('/')
            ));
        }
    }
    if text.starts_with('$') || text.is_empty() {
        return None;
    }
    let resolved = ctx.path(text);
    let (base, inside) = split_beneath(&resolved);
    let glob_all = resolved.ends_with("/*") || resolved.ends_with("/.*");
    if base == "/" {
        return Some(format!("`{text}` is the root of the file system"));
    }
    if base == "~" || is_a_home(base) {
        return Some(format!("`{text}` is the home folder"));
    }
    if ctx
        .options
        .deletable
        .iter()
        .any(|d| beneath(base, d) && (inside || base != d.trim_end_matches('/')))
    {
        return None;
    }
    if !inside && (ctx.workspace_root(&resolved) || (glob_all && ctx.workspace_root(base))) {
        return Some(format!("`{text}` is the whole workspace"));
    }
    if ctx.in_workspace(base) {
        return None;
    }
    if is_system(base) {
        return Some(format!("`{text}` is a system folder"));
    }
    if base.starts_with("~/") {
        return Some(format!(
            "`{text}` is in the home folder, outside the workspace"
        ));
    }
    Some(format!("`{text}` is outside the workspace"))
}

fn recursive_delete(ctx: &Ctx<'_>, at: usize) -> Option<String> {
    let cmd = ctx.cmd(at);
    let targets: Vec<&Word> = match program(cmd) {
        "rm" if has_short(cmd, 'r') || has_short(cmd, 'R') || has_long(cmd, "--recursive") => {
            operands(cmd)
        }
        // `find ROOT -exec rm {} +`: `find` walks the tree, so even a plain
        // `rm` (or `unlink`, `shred -u`) it runs deletes beneath ROOT: its
        // `{}` reads `ROOT/…` (see `wrappers::find_exec`).
        "rm" | "unlink" | "shred" if cmd.origin.as_deref() == Some("find -exec") => operands(cmd)
            .into_iter()
            .filter(|w| w.text.ends_with("/…"))
            .collect(),
        "find" if cmd.args().iter().any(|w| w.text == "-delete") => {
            // What it deletes is beneath its roots: `ROOT/…`.
            let beneath: Vec<Word> = cmd
                .args()
                .iter()
                .take_while(|w| !w.text.starts_with('-') && w.text != "(" && w.text != "!")
                .map(|w| Word {
                    text: format!("{}/…", w.text.trim_end_matches('/')),
                    ..w.clone()
                })
                .collect();
            let beneath = if beneath.is_empty() {
                vec![Word {
                    text: "./…".into(),
                    ..Word::default()
                }]
            } else {
                beneath
            };
            return beneath
                .iter()
                .find_map(|w| delete_danger(ctx, w))
                .map(|why| format!("`find -delete` deletes recursively: {why}"));
        }
        "rsync" if cmd.args().iter().any(|w| w.text.starts_with("--delete")) => {
            operands(cmd).last().copied().into_iter().collect()
        }
        "shred" if has_short(cmd, 'u') || has_long(cmd, "--remove") => operands(cmd),
        // `python3 -c "shutil.rmtree('/home/dev')"`: a tree deleted by
        // inline code, at a path the code names.
        _ => {
            let code = inline_code(cmd)?;
            const RMTREE: &[&str] = &[
                "rmtree(",
                ".rmSync(",
                ".rmdirSync(",
                ".rm(",
                "rimraf",
                "FileUtils.rm_r",
                "remove_dir_all(",
                "Remove-Item",
                "File.delete(",
            ];
            let api = RMTREE.iter().find(|a| code.contains(**a))?;
            return quoted_literals(&code).into_iter().find_map(|lit| {
                let word = Word {
                    text: lit.to_owned(),
                    ..Word::default()
                };
                delete_danger(ctx, &word)
                    .map(|why| format!("`{}`'s code deletes a tree (`{api}`): {why}", program(cmd)))
            });
        }
    };
    for word in targets {
        if let Some(why) = delete_danger(ctx, word) {
            let what = if cmd.wrappers.is_empty() {
                String::new()
            } else {
                format!(" (through {})", cmd.wrappers.join(", "))
            };
            return Some(format!(
                "`{}` deletes recursively: {why}{what}",
                program(cmd)
            ));
        }
    }
    None
}

fn device_target(word: &str) -> Option<&str> {
    (word.starts_with("/dev/") && !harmless_device(word)).then_some(word)
}

fn device_write(ctx: &Ctx<'_>, at: usize) -> Option<String> {
    let cmd = ctx.cmd(at);
    for r in &cmd.redirects {
        if r.writes()
            && let Some(dev) = device_target(&r.target.text)
        {
            return Some(format!("writes to the device `{dev}`"));
        }
    }
    match program(cmd) {
        "dd" | "dcfldd" | "dc3dd" => cmd.args().iter().find_map(|w| {
            let of = w.text.strip_prefix("of=")?;
            device_target(of).map(|d| format!("`{}` writes to the device `{d}`", program(cmd)))
        }),
        // `ddrescue IN OUT [MAP]`: OUT is written.
        "ddrescue" => operands(cmd)
            .get(1)
            .and_then(|w| device_target(&w.text))
            .map(|d| format!("`ddrescue` writes to the device `{d}`")),
        "flashrom" if has_short(cmd, 'w') || has_long(cmd, "--write") => {
            Some("`flashrom -w` rewrites the machine's firmware flash".into())
        }
        "shred" | "wipefs" | "blkdiscard" | "badblocks" | "cp" | "tee" | "cat" | "pv"
        | "hdparm" | "sg_format" | "nvme" => {
            if program(cmd) == "badblocks" && !has_short(cmd, 'w') {
                return None;
            }
            if program(cmd) == "nvme"
                && !cmd
                    .args()
                    .iter()
                    .any(|w| matches!(w.text.as_str(), "format" | "sanitize"))
            {
                return None;
            }
            let words = operands(cmd);
            let candidates: Vec<&&Word> = match program(cmd) {
                "cp" => words.last().into_iter().collect(),
                "cat" | "pv" => Vec::new(),
                _ => words.iter().collect(),
            };
            candidates
                .into_iter()
                .find_map(|w| device_target(&w.text))
                .map(|d| format!("`{}` writes to the device `{d}`", program(cmd)))
        }
        _ => None,
    }
}

fn filesystem_format(ctx: &Ctx<'_>, at: usize) -> Option<String> {
    let cmd = ctx.cmd(at);
    let p = program(cmd);
    let listing = cmd
        .args()
        .iter()
        .any(|w| matches!(w.text.as_str(), "-l" | "--list" | "print" | "-p"));
    if cmd
        .args()
        .iter()
        .any(|w| matches!(w.text.as_str(), "--help" | "-h" | "--version" | "-V"))
    {
        return None;
    }
    let formats = p.starts_with("mkfs")
        || matches!(
            p,
            "mke2fs" | "mkswap" | "mkntfs" | "mkdosfs" | "mkexfatfs" | "newfs" | "format.com"
        )
        || matches!(
            p,
            "fdisk" | "sfdisk" | "cfdisk" | "gdisk" | "sgdisk" | "parted"
        ) && !listing
        || p == "diskutil"
            && cmd.args().iter().any(|w| {
                w.text.starts_with("erase")
                    || w.text == "partitionDisk"
                    || w.text == "zeroDisk"
                    || w.text == "randomDisk"
            })
        || p == "zpool"
            && cmd
                .args()
                .first()
                .is_some_and(|w| w.text == "destroy" || w.text == "labelclear")
        || matches!(p, "lvremove" | "vgremove" | "pvremove")
        || p == "cryptsetup"
            && cmd
                .args()
                .iter()
                .any(|w| w.text == "luksFormat" || w.text == "erase")
        || p == "mdadm" && has_long(cmd, "--zero-superblock");
    // `mkfs.ext4 -F disk.img`: a file that names itself an image, and no
    // device or word the line does not show, is no disk.
    let ops = operands(cmd);
    let image = !ops.is_empty()
        && !ops
            .iter()
            .any(|w| w.dynamic || w.text.starts_with("/dev/") || w.text.contains('$'))
        && ops.iter().any(|w| {
            const IMAGES: &[&str] = &[
                ".img", ".raw", ".iso", ".qcow2", ".vhd", ".vmdk", ".ext4", ".fs",
            ];
            IMAGES.iter().any(|e| w.text.ends_with(e))
        });
    (formats && !image).then(|| format!("`{p}` formats or repartitions a disk"))
}

fn system_permissions(ctx: &Ctx<'_>, at: usize) -> Option<String> {
    let cmd = ctx.cmd(at);
    let p = program(cmd);
    if !matches!(p, "chmod" | "chown" | "chgrp" | "setfacl") {
        return None;
    }
    let recursive = has_short(cmd, 'R') || has_long(cmd, "--recursive");
    let ops = operands(cmd);
    // chmod MODE FILES / chown OWNER FILES: the first operand is not a path.
    let (mode, files) = match ops.split_first() {
        Some((m, rest)) if p != "setfacl" => (m.text.as_str(), rest.to_vec()),
        _ => ("", ops.clone()),
    };
    let setuid = p == "chmod"
        && (mode.contains('s')
            || mode.len() == 4 && matches!(mode.chars().next(), Some('4' | '2' | '6')));
    let world = p == "chmod"
        && (mode.ends_with('7')
            || mode.ends_with('6')
            || mode.contains("o+w")
            || mode.contains("a+w"));
    for f in files {
        let resolved = ctx.path(&f.text);
        let (base, inside) = split_beneath(&resolved);
        if inside
            && (base == "/" || is_system(base) || base == "~")
            && (world || setuid || p != "chmod")
        {
            return Some(format!("`{p}` of everything beneath `{base}`"));
        }
        if world && critical_system_file(base) {
            return Some(format!(
                "`chmod {mode}` lets every user change `{}`",
                f.text
            ));
        }
        if ctx.in_workspace(base) && !ctx.workspace_root(base) || f.text.starts_with('$') {
            continue;
        }
        // Application data beneath the system's folders (`/var/www/site`,
        // `/srv/app`, `/opt/app`) is what a deploy hands to its service
        // user; the folders themselves and the rest are the system's.
        let app_data = ["/var/www/", "/srv/", "/opt/"]
            .iter()
            .any(|r| base.strip_prefix(r).is_some_and(|rest| !rest.is_empty()));
        let system = is_system(base) && !app_data;
        let home = base == "~" || is_a_home(base) || base == "~/.ssh";
        if recursive && (system || home) {
            return Some(format!(
                "recursive `{p}` of `{}`, a system or home folder",
                f.text
            ));
        }
        if base == "/" || crate::paths::SYSTEM_DIRS.contains(&base) {
            return Some(format!("`{p}` of `{}`, a system folder", f.text));
        }
        if setuid && !ctx.in_workspace(base) {
            return Some(format!(
                "`chmod {mode}` makes `{}` run as its owner (setuid)",
                f.text
            ));
        }
        if world && recursive && !ctx.in_workspace(base) {
            return Some(format!(
                "`chmod -R {mode}` opens `{}` to every user",
                f.text
            ));
        }
    }
    None
}

fn fork_bomb(ctx: &Ctx<'_>, at: usize) -> Option<String> {
    let cmd = ctx.cmd(at);
    if let Some(name) = cmd.program()
        && let Some(body) = ctx.script.functions.get(name)
        && !body.contains(&at)
    {
        let calls = body
            .iter()
            .filter(|&&i| ctx.cmd(i).program() == Some(name))
            .count();
        let piped = body.iter().any(|&i| {
            ctx.cmd(i).program() == Some(name) && matches!(ctx.cmd(i).stdin, Stdin::Pipe(_))
        });
        if calls >= 2 || piped {
            return Some(format!(
                "the function `{name}` calls itself {calls} times per call: a fork bomb"
            ));
        }
    }
    // `while true; do bash & done`: a loop that never ends starting
    // processes it never waits for.
    if cmd.background
        && let Some(l) = ctx
            .script
            .loops
            .iter()
            .find(|l| l.first < at && at < l.end && endless(ctx, l))
        && !(l.first..l.end).any(|i| ctx.cmd(i).program() == Some("wait"))
    {
        return Some(format!(
            "an endless `{}` loop starts `{}` in the background each time round: a fork bomb",
            if l.until { "until" } else { "while" },
            program(cmd)
        ));
    }
    let code = inline_code(cmd)?;
    let lower = code.to_ascii_lowercase();
    const ENDLESS: &[&str] = &[
        "while",
        "for(;;)",
        "for (;;)",
        "loop",
        "iter(int, 1)",
        "iter(int,1)",
        "itertools.count",
        "until",
        "repeat",
    ];
    (lower.contains("fork") && ENDLESS.iter().any(|e| lower.contains(e)))
        .then(|| format!("`{}` forks in a loop: a fork bomb", program(cmd)))
}

/// The string literals in a piece of code (between `'…'` or `"…"`).
pub(crate) fn quoted_literals(code: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for quote in ['\'', '"'] {
        // Odd pieces are inside quotes.
        for (k, part) in code.split(quote).enumerate() {
            if k % 2 == 1 && !part.is_empty() && !out.contains(&part) {
                out.push(part);
            }
        }
    }
    out
}

/// Whether a loop's condition never changes: `while true`, `while :`,
/// `while [ 1 ]`, `until false`.
fn endless(ctx: &Ctx<'_>, l: &crate::shell::Loop) -> bool {
    let cond = ctx.cmd(l.first);
    let words: Vec<&str> = cond.words.iter().map(|w| w.text.as_str()).collect();
    if l.until {
        words == ["false"]
    } else {
        matches!(
            words.as_slice(),
            ["true"] | [":"] | ["[", "1", "]"] | ["[[", "1", "]]"] | ["/bin/true"]
        )
    }
}

/// The code an interpreter runs from its command line (`python -c`, `perl -e`…).
fn inline_code(cmd: &Command) -> Option<String> {
    let p = program(cmd);
    let flag: &[&str] = match p {
        p if p.starts_with("python") => &["-c"],
        "perl" | "ruby" => &["-e", "-E"],
        "node" | "nodejs" | "deno" | "bun" => &["-e", "--eval", "-p", "--print", "eval"],
        "php" => &["-r"],
        "lua" => &["-e"],
        "pwsh" | "powershell" | "powershell.exe" => &["-c", "-Command", "-command"],
        "awk" | "gawk" => {
            return cmd
                .args()
                .iter()
                .find(|w| !w.text.starts_with('-'))
                .map(|w| w.text.clone());
        }
        _ => return None,
    };
    let words = cmd.args();
    let pos = words.iter().position(|w| {
        flag.contains(&w.text.as_str())
            || w.text.starts_with("-e") && flag.contains(&"-e") && w.text.len() > 2
    })?;
    if words[pos].text.len() > 2 && words[pos].text.starts_with("-e") {
        return Some(words[pos].text[2..].to_owned());
    }
    Some(
        words
            .get(pos + 1..)?
            .iter()
            .map(|w| w.text.as_str())
            .collect::<Vec<_>>()
            .join(" "),
    )
}

const DOWNLOADERS: &[&str] = &[
    "curl",
    "wget",
    "fetch",
    "aria2c",
    "http",
    "https",
    "xh",
    "lynx",
    "iwr",
    "irm",
    "invoke-webrequest",
    "invoke-restmethod",
    "ftp",
    "tftp",
];
const NETWORK_TOOLS: &[&str] = &[
    "nc", "ncat", "netcat", "telnet", "socat", "openssl", "ssh", "cryptcat",
];
/// Whether a program runs code given on its command line (`python -c`).
pub(crate) fn is_interpreter(program: &str) -> bool {
    INTERPRETERS.contains(&program)
}

const INTERPRETERS: &[&str] = &[
    "python",
    "python2",
    "python3",
    "perl",
    "ruby",
    "node",
    "nodejs",
    "php",
    "pwsh",
    "powershell",
    "lua",
    "deno",
    "bun",
    "osascript",
    "tclsh",
    "Rscript",
];

/// Runs what it reads on stdin: a shell or interpreter with no script.
fn runs_stdin(cmd: &Command) -> bool {
    let p = program(cmd);
    let is_shell = SHELLS.contains(&p);
    let is_interp = INTERPRETERS.contains(&p) || p.starts_with("python3.");
    if !(is_shell || is_interp) {
        return matches!(p, "source" | ".")
            && cmd
                .args()
                .first()
                .is_some_and(|w| w.text == "/dev/stdin" || w.text == "-")
            || matches!(p, "iex" | "invoke-expression" | "Invoke-Expression");
    }
    let mut i = 0;
    let args = cmd.args();
    while let Some(w) = args.get(i) {
        let t = w.text.as_str();
        if t == "-" || t == "-s" || t == "/dev/stdin" {
            return true;
        }
        if t == "-c"
            || t == "-e"
            || t == "-m"
            || t == "-r"
            || t == "-E"
            || t == "--eval"
            || (is_shell && t.starts_with('-') && !t.starts_with("--") && t.contains('c'))
        {
            return false;
        }
        if t.starts_with('-') || t.starts_with('+') {
            if is_shell && (t == "-o" || t == "+o") {
                i += 1;
            }
            i += 1;
            continue;
        }
        return false;
    }
    true
}

/// The downloader feeding `at` through pipes (through filters such as
/// `tee`, `gunzip`, `base64 -d`), if any; or a decoder whose input the line
/// does not show.
fn fed_by(ctx: &Ctx<'_>, at: usize) -> Option<String> {
    let mut cur = at;
    for _ in 0..8 {
        let Stdin::Pipe(from) = ctx.cmd(cur).stdin else {
            return None;
        };
        let src = ctx.cmd(from);
        let p = program(src);
        if DOWNLOADERS.contains(&p)
            || p == "python3"
                && inline_code(src)
                    .is_some_and(|c| c.contains("urlopen") || c.contains("requests.get"))
        {
            let url = src
                .args()
                .iter()
                .find(|w| {
                    w.text.contains("://") || w.text.contains('.') && !w.text.starts_with('-')
                })
                .map(|w| w.text.clone())
                .unwrap_or_default();
            if trusted(ctx, &url) {
                return None;
            }
            return Some(format!(
                "`{p} … | {}` runs code fetched from the network ({})",
                program(ctx.cmd(at)),
                if url.is_empty() {
                    "an unseen address".into()
                } else {
                    url
                }
            ));
        }
        if NETWORK_TOOLS.contains(&p) {
            return Some(format!(
                "`{p} … | {}` runs what arrives over the network",
                program(ctx.cmd(at))
            ));
        }
        let decoder = matches!(
            p,
            "base64" | "base32" | "xxd" | "openssl" | "uudecode" | "gpg"
        );
        if decoder && crate::wrappers::stdin_text(ctx.script, at, 0).is_none() {
            return Some(format!(
                "`{p} … | {}` runs decoded text the line does not show",
                program(ctx.cmd(at))
            ));
        }
        cur = from;
    }
    None
}

fn trusted(ctx: &Ctx<'_>, url: &str) -> bool {
    let host = url
        .split("://")
        .nth(1)
        .unwrap_or(url)
        .split(['/', ':', '?'])
        .next()
        .unwrap_or("");
    !host.is_empty() && ctx.options.trusted_installers.iter().any(|t| t == host)
}

fn download_exec(ctx: &Ctx<'_>, at: usize) -> Option<String> {
    let cmd = ctx.cmd(at);
    let p = program(cmd);
    if runs_stdin(cmd)
        && let Some(why) = fed_by(ctx, at)
    {
        return Some(why);
    }
    // `sh -c "$(curl …)"`, `eval "$(wget -O- …)"`, `bash <(curl …)`, `source <(…)`, `$(curl …)`.
    let executes =
        SHELLS.contains(&p) || INTERPRETERS.contains(&p) || matches!(p, "eval" | "source" | ".");
    let words: Vec<&Word> = if executes {
        cmd.words.iter().collect()
    } else {
        cmd.words.first().into_iter().collect()
    };
    for w in words {
        for i in ctx.substituted_programs(w) {
            let inner = ctx.cmd(i);
            if DOWNLOADERS.contains(&program(inner)) {
                let url = inner
                    .args()
                    .iter()
                    .find(|w| w.text.contains("://"))
                    .map(|w| w.text.clone())
                    .unwrap_or_default();
                if !trusted(ctx, &url) {
                    return Some(format!(
                        "`{p}` runs code fetched by `{}` from {}",
                        program(inner),
                        if url.is_empty() {
                            "the network".into()
                        } else {
                            url
                        }
                    ));
                }
            }
        }
    }
    // Inline code that fetches code and runs it: `python3 -c
    // "exec(urlopen(URL).read())"`, `pwsh -c "iwr URL | iex"`.
    if let Some(code) = inline_code(cmd) {
        let lower = code.to_ascii_lowercase();
        let words: Vec<&str> = lower
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
            .collect();
        const FETCHES: &[&str] = &[
            "urlopen",
            "urllib",
            "requests.get",
            "httpx.get",
            "fetch(",
            "http.get(",
            "https.get(",
            "downloadstring",
            "net.webclient",
            "open-uri",
            "net::http",
            "lwp::",
            "curl_exec",
            "file_get_contents(\"http",
            "file_get_contents('http",
        ];
        const FETCH_WORDS: &[&str] = &["iwr", "irm", "invoke-webrequest", "invoke-restmethod"];
        const RUNS: &[&str] = &[
            "exec(",
            "eval(",
            "new function(",
            "instance_eval",
            "compile(",
        ];
        const RUN_WORDS: &[&str] = &["iex", "invoke-expression"];
        let fetch = FETCHES
            .iter()
            .find(|f| lower.contains(**f))
            .or_else(|| FETCH_WORDS.iter().find(|f| words.contains(f)));
        let run = RUNS
            .iter()
            .find(|r| lower.contains(**r))
            .or_else(|| RUN_WORDS.iter().find(|r| words.contains(r)));
        if let (Some(fetch), Some(run)) = (fetch, run) {
            let url = crate::egress::urls_in(&code).first().copied();
            if !url.is_some_and(|u| trusted(ctx, u)) {
                return Some(format!(
                    "`{p}`'s code fetches code (`{}`) and runs it (`{}`)",
                    fetch.trim_end_matches(['(', '"', '\'']),
                    run.trim_end_matches('(')
                ));
            }
        }
    }
    // `curl -o x.sh URL && sh x.sh`: a file downloaded and run in one line.
    if DOWNLOADERS.contains(&p) {
        let out = output_file(cmd)?;
        let name = out.rsplit('/').next().unwrap_or(&out).to_owned();
        let url = cmd
            .args()
            .iter()
            .find(|w| w.text.contains("://"))
            .map(|w| w.text.clone())
            .unwrap_or_default();
        if trusted(ctx, &url) {
            return None;
        }
        for later in ctx.script.commands.iter().skip(at + 1) {
            // `dpkg -i x.deb`, `rpm -i x.rpm`, `apt install ./x.deb`: a
            // package's scripts run as root when it is installed.
            let installs = matches!(
                program(later),
                "dpkg" | "rpm" | "apt" | "apt-get" | "yum" | "dnf" | "zypper" | "installer" | "pkg"
            ) && later
                .args()
                .iter()
                .any(|w| w.text.rsplit('/').next() == Some(name.as_str()));
            if installs {
                return Some(format!(
                    "`{p}` downloads `{out}` and the same line installs it with `{}`",
                    program(later)
                ));
            }
            let runs_it = later.program() == Some(name.as_str())
                || (SHELLS.contains(&program(later))
                    || INTERPRETERS.contains(&program(later))
                    || matches!(program(later), "source" | "."))
                    && later
                        .args()
                        .iter()
                        .any(|w| w.text.rsplit('/').next() == Some(name.as_str()));
            if runs_it {
                return Some(format!("`{p}` downloads `{out}` and the same line runs it"));
            }
        }
    }
    None
}

/// In a downloader's cluster of short options (`fsSLo`), what follows its
/// output letter (`""`: the next word is the file), if the cluster has it
/// before any other letter that takes a value (which would take the rest).
fn short_value<'a>(p: &str, cluster: &'a str) -> Option<&'a str> {
    let (output, valued): (char, &str) = match p {
        "curl" => ('o', "AbcCdDeEFHKmrTuUwxXyYz"),
        "wget" => ('O', "aBeiotTwPQU"),
        _ => return None,
    };
    for (at, c) in cluster.char_indices() {
        if c == output {
            return Some(&cluster[at + 1..]);
        }
        if valued.contains(c) {
            return None;
        }
    }
    None
}

fn output_file(cmd: &Command) -> Option<String> {
    let args = cmd.args();
    for (i, w) in args.iter().enumerate() {
        let t = w.text.as_str();
        if matches!(t, "-o" | "-O" | "--output" | "--output-document") {
            let f = args.get(i + 1)?.text.clone();
            if f != "-" {
                return Some(f);
            }
        }
        if let Some(f) = t
            .strip_prefix("--output-document=")
            .or_else(|| t.strip_prefix("--output="))
        {
            return Some(f.to_owned());
        }
        // A cluster of short options, `-fsSLo FILE` or `-qOFILE`: the
        // output letter takes the rest of the word, or the next word.
        if let Some(cluster) = t.strip_prefix('-').filter(|c| !c.starts_with('-'))
            && let Some(rest) = short_value(program(cmd), cluster)
        {
            let f = if rest.is_empty() {
                args.get(i + 1)?.text.clone()
            } else {
                rest.to_owned()
            };
            if f != "-" {
                return Some(f);
            }
        }
    }
    if program(cmd) == "wget"
        && !args
            .iter()
            .any(|w| w.text == "-O" || w.text == "-qO-" || w.text == "-O-")
    {
        let url = args.iter().find(|w| w.text.contains("://"))?;
        return url
            .text
            .rsplit('/')
            .next()
            .filter(|s| !s.is_empty())
            .map(str::to_owned);
    }
    if program(cmd) == "curl" && (has_short(cmd, 'O') || has_long(cmd, "--remote-name")) {
        let url = args.iter().find(|w| w.text.contains("://"))?;
        return url
            .text
            .rsplit('/')
            .next()
            .filter(|s| !s.is_empty())
            .map(str::to_owned);
    }
    cmd.redirects
        .iter()
        .find(|r| r.writes())
        .map(|r| r.target.text.clone())
}

fn reverse_shell(ctx: &Ctx<'_>, at: usize) -> Option<String> {
    // `ssh -R PORT:localhost:22 host`: a port on another machine that
    // leads back into this one.
    {
        let cmd = ctx.cmd(at);
        if matches!(program(cmd), "ssh" | "autossh")
            && cmd
                .args()
                .iter()
                .any(|w| w.text == "-R" || w.text.starts_with("-R") && w.text.len() > 2)
        {
            return Some(format!(
                "`{} -R` opens a port on another machine that leads back into this one",
                program(cmd)
            ));
        }
    }
    let cmd = ctx.cmd(at);
    let p = program(cmd);
    for r in &cmd.redirects {
        let t = r.target.text.as_str();
        if t.starts_with("/dev/tcp/") || t.starts_with("/dev/udp/") {
            return Some(format!("connects a shell's descriptors to `{t}`"));
        }
    }
    if matches!(
        p,
        "nc" | "ncat" | "netcat" | "nc.traditional" | "nc.openbsd"
    ) && cmd.args().iter().any(|w| {
        matches!(
            w.text.as_str(),
            "-e" | "-c" | "--exec" | "--sh-exec" | "--lua-exec"
        ) || w.text.starts_with("-e") && w.text.len() > 2
    }) {
        return Some(format!("`{p}` hands a program to a network connection"));
    }
    if p == "socat" {
        let lower: Vec<String> = cmd
            .args()
            .iter()
            .map(|w| w.text.to_ascii_lowercase())
            .collect();
        if lower
            .iter()
            .any(|a| a.starts_with("exec:") || a.starts_with("system:"))
            && lower
                .iter()
                .any(|a| a.contains("tcp") || a.contains("udp") || a.contains("ssl"))
        {
            return Some("`socat` connects a program to the network".into());
        }
    }
    if (SHELLS.contains(&p)) && runs_stdin(cmd) {
        let from_net =
            matches!(cmd.stdin, Stdin::Pipe(f) if NETWORK_TOOLS.contains(&program(ctx.cmd(f))));
        let to_net = ctx
            .readers(at)
            .any(|r| NETWORK_TOOLS.contains(&program(ctx.cmd(r))));
        if from_net || to_net {
            return Some(format!(
                "`{p}` reads from and writes to a network connection"
            ));
        }
    }
    if p == "ztcp" {
        return Some("`ztcp` opens a connection the line hands to a shell".into());
    }
    if let Some(code) = inline_code(cmd) {
        let lower = code.to_ascii_lowercase();
        if matches!(p, "awk" | "gawk") && lower.contains("/inet/") {
            return Some(format!("`{p}` opens a network connection (`/inet/`)"));
        }
        let net = [
            "socket",
            "fsockopen",
            "tcpsocket",
            "net.connect",
            "net.socket",
            "io::socket",
            "new-object system.net.sockets",
        ]
        .iter()
        .any(|k| lower.contains(k));
        let shell = [
            "subprocess",
            "pty.spawn",
            "dup2",
            "/bin/sh",
            "/bin/bash",
            "cmd.exe",
            "exec(",
            "system(",
            "spawn(",
            "popen",
            "child_process",
            "iex",
        ]
        .iter()
        .any(|k| lower.contains(k));
        if net && shell {
            return Some(format!(
                "`{p}` code opens a socket and runs a shell over it"
            ));
        }
    }
    if p == "xterm" && cmd.args().iter().any(|w| w.text == "-display") {
        return Some("`xterm -display` opens a terminal on another machine".into());
    }
    None
}

fn system_damage(ctx: &Ctx<'_>, at: usize) -> Option<String> {
    let cmd = ctx.cmd(at);
    let p = program(cmd);
    let args: Vec<&str> = cmd.args().iter().map(|w| w.text.as_str()).collect();
    let found = match p {
        "shutdown" | "reboot" | "halt" | "poweroff" | "killall5" => {
            Some(format!("`{p}` stops the machine or every process"))
        }
        "init" | "telinit"
            if args
                .first()
                .is_some_and(|a| matches!(*a, "0" | "6" | "1" | "S")) =>
        {
            Some(format!("`{p} {}` changes the machine's run level", args[0]))
        }
        "systemctl"
            if args.iter().any(|a| {
                matches!(
                    a.trim_end_matches(".target"),
                    "poweroff"
                        | "reboot"
                        | "halt"
                        | "kexec"
                        | "rescue"
                        | "emergency"
                        | "suspend"
                        | "hibernate"
                )
            }) =>
        {
            Some("`systemctl` stops or suspends the machine".into())
        }
        "kill" | "pkill" if args.contains(&"-1") && !args.contains(&"-l") => {
            Some("`kill -1` signals every process the user can reach".into())
        }
        // `kill -9 1`: PID 1 is init; killing it brings the machine down.
        "kill"
            if args.iter().enumerate().any(|(k, a)| {
                *a == "1"
                    && !k
                        .checked_sub(1)
                        .is_some_and(|b| matches!(args[b], "-s" | "-n" | "--signal"))
            }) =>
        {
            Some("`kill 1` signals init (PID 1), which takes the machine down".into())
        }
        // `passwd -d root`: the account opens with no password at all.
        "passwd" if args.iter().any(|a| matches!(*a, "-d" | "--delete")) => {
            Some("`passwd -d` deletes a password: the account opens without one".into())
        }
        "userdel" | "deluser" | "dscl" if p != "dscl" || args.contains(&"-delete") => {
            Some(format!("`{p}` deletes a user account"))
        }
        "crontab" if args.contains(&"-r") => {
            Some("`crontab -r` deletes every scheduled job".into())
        }
        "iptables" | "ip6tables" | "nft"
            if args
                .iter()
                .any(|a| matches!(*a, "-F" | "--flush" | "flush")) =>
        {
            Some(format!("`{p}` flushes the firewall"))
        }
        _ => None,
    };
    if found.is_some() {
        return found;
    }
    // Removing or moving one is changing it: `rm /etc/passwd`, `mv /bin x`.
    let removed = match p {
        "rm" | "unlink" | "shred" | "mv" | "rmdir" => operands(cmd),
        _ => Vec::new(),
    };
    let targets = written_files(cmd)
        .into_iter()
        .chain(removed.iter().map(|w| w.text.clone()));
    for target in targets {
        if target.starts_with('$') {
            continue;
        }
        let resolved = ctx.path(&target);
        if resolved == "/proc/sysrq-trigger" || resolved.starts_with("/proc/sys/") {
            return Some(format!(
                "writes to `{resolved}`, the running kernel's settings"
            ));
        }
        if resolved.starts_with("/dev/") || resolved.starts_with("/proc/") {
            continue;
        }
        if critical_system_file(&resolved) && !ctx.in_workspace(&resolved) {
            return Some(format!(
                "`{}` changes `{resolved}`, a system file",
                if p.is_empty() { "a redirection" } else { p }
            ));
        }
    }
    None
}

/// The files whose change takes over or breaks the machine: accounts,
/// sudo, name resolution, mounts, boot, the system's programs and
/// libraries, root's SSH keys. (Configuring a service under `/etc` is
/// routine administration, and is not among them.)
fn critical_system_file(path: &str) -> bool {
    const FILES: &[&str] = &[
        "/etc/passwd",
        "/etc/shadow",
        "/etc/group",
        "/etc/gshadow",
        "/etc/sudoers",
        "/etc/hosts",
        "/etc/resolv.conf",
        "/etc/fstab",
        "/etc/crontab",
        "/etc/ld.so.preload",
        "/etc/profile",
        "/etc/environment",
        "/etc/bash.bashrc",
        "/etc/inittab",
        "/etc/rc.local",
    ];
    const TREES: &[&str] = &[
        "/etc/sudoers.d",
        "/etc/ssh",
        "/etc/pam.d",
        "/etc/systemd",
        "/etc/cron.d",
        "/etc/profile.d",
        "/etc/init.d",
        "/boot",
        "/bin",
        "/sbin",
        "/usr/bin",
        "/usr/sbin",
        "/lib",
        "/lib64",
        "/usr/lib",
        "/usr/lib64",
        "/root/.ssh",
        "/lib/systemd",
        "/usr/libexec",
        "/System",
    ];
    FILES.contains(&path) || TREES.iter().any(|t| beneath(path, t))
}

/// The files a command writes, as far as the line shows: redirections,
/// `tee`, `cp`/`mv`/`install`/`ln` destinations, `sed -i`, `truncate`, `dd of=`.
pub(crate) fn written_files(cmd: &Command) -> Vec<String> {
    let mut out: Vec<String> = cmd
        .redirects
        .iter()
        .filter(|r| r.writes())
        .map(|r| r.target.text.clone())
        .collect();
    let ops = operands(cmd);
    match program(cmd) {
        "tee" | "truncate" | "touch" => out.extend(ops.iter().map(|w| w.text.clone())),
        "cp" | "mv" | "install" | "ln" | "rsync" | "scp" => {
            if let Some(pos) = cmd
                .args()
                .iter()
                .position(|w| w.text == "-t" || w.text == "--target-directory")
            {
                out.extend(cmd.args().get(pos + 1).map(|w| w.text.clone()));
            } else if let Some(last) = ops.last() {
                out.push(last.text.clone());
            }
        }
        "sed" | "perl" if has_short(cmd, 'i') || has_long(cmd, "--in-place") => {
            out.extend(ops.iter().skip(1).map(|w| w.text.clone()));
        }
        "dd" => out.extend(
            cmd.args()
                .iter()
                .filter_map(|w| w.text.strip_prefix("of=").map(str::to_owned)),
        ),
        _ => {}
    }
    out
}

/// The files a command changes or removes (written ones, and `rm`/`mv` sources, `chmod` targets).
pub(crate) fn changed_files(cmd: &Command) -> Vec<String> {
    let mut out = written_files(cmd);
    match program(cmd) {
        "rm" | "unlink" | "rmdir" | "shred" | "mv" | "chmod" | "chown" | "chattr" => {
            out.extend(operands(cmd).iter().map(|w| w.text.clone()))
        }
        _ => {}
    }
    out
}

fn disable_guard(ctx: &Ctx<'_>, at: usize) -> Option<String> {
    let cmd = ctx.cmd(at);
    let p = program(cmd);
    let args: Vec<&str> = cmd.args().iter().map(|w| w.text.as_str()).collect();
    for file in changed_files(cmd) {
        if let Some(what) = guard_config(&ctx.path(&file)) {
            return Some(format!(
                "`{}` changes `{file}`, {what}",
                if p.is_empty() { "a redirection" } else { p }
            ));
        }
    }
    let bypass = match p {
        "claude" => args.iter().any(|a| {
            *a == "--dangerously-skip-permissions"
                || *a == "bypassPermissions"
                || a.ends_with("=bypassPermissions")
        }),
        "codex" => args.iter().any(|a| {
            *a == "--dangerously-bypass-approvals-and-sandbox"
                || *a == "--yolo"
                || *a == "danger-full-access"
                || a.ends_with("=danger-full-access")
        }),
        "gemini" | "qwen" => args
            .iter()
            .any(|a| matches!(*a, "--yolo" | "-y" | "yolo" | "--approval-mode=yolo")),
        "copilot" => args.iter().any(|a| {
            matches!(
                *a,
                "--allow-all-tools" | "--allow-all" | "--yolo" | "--allow-all-paths"
            )
        }),
        "cursor-agent" => args.iter().any(|a| matches!(*a, "--force" | "-f")),
        "toolgate" => {
            args.first()
                .is_some_and(|a| matches!(*a, "uninstall" | "trust"))
                || args.contains(&"--remove")
        }
        "pkill" | "killall" => args.iter().any(|a| a.contains("toolgate")),
        "kill" => {
            args.iter().any(|a| a.contains("toolgate"))
                || cmd.args().iter().any(|w| {
                    ctx.substituted_programs(w).iter().any(|&i| {
                        ctx.cmd(i)
                            .args()
                            .iter()
                            .any(|a| a.text.contains("toolgate"))
                    })
                })
        }
        "systemctl" => {
            args.iter()
                .any(|a| matches!(*a, "stop" | "disable" | "mask" | "kill"))
                && args.iter().any(|a| a.contains("toolgate"))
        }
        _ => false,
    };
    if bypass {
        return Some(format!(
            "`{p} {}` turns off the agent's guard or sandbox",
            args.join(" ")
        ));
    }
    let env_override = cmd.assigns.iter().map(|(n, _)| n.as_str()).chain(
        args.iter()
            .filter(|_| p == "export" || p == "unset")
            .map(|a| a.split('=').next().unwrap_or(a)),
    );
    for name in env_override {
        if name.starts_with("TOOLGATE_") {
            return Some(format!(
                "sets `{name}`, which points toolgate at another configuration"
            ));
        }
    }
    None
}

fn credential_dump(ctx: &Ctx<'_>, at: usize) -> Option<String> {
    let cmd = ctx.cmd(at);
    let p = program(cmd);
    let args: Vec<&str> = cmd.args().iter().map(|w| w.text.as_str()).collect();
    let tool = match p {
        "security" => args.iter().any(|a| {
            matches!(
                *a,
                "find-generic-password" | "find-internet-password" | "dump-keychain" | "export"
            )
        }),
        "secret-tool" => args
            .first()
            .is_some_and(|a| matches!(*a, "lookup" | "search")),
        "gpg" | "gpg2" => args.iter().any(|a| a.starts_with("--export-secret")),
        "gcloud" => args.windows(2).any(|w| {
            w[0] == "auth"
                && matches!(
                    w[1],
                    "print-access-token" | "print-identity-token" | "application-default"
                )
        }),
        "aws" => {
            args.windows(2)
                .any(|w| w[0] == "configure" && matches!(w[1], "export-credentials" | "get"))
                || args
                    .windows(2)
                    .any(|w| w[0] == "sts" && w[1] == "get-session-token")
                || args
                    .windows(2)
                    .any(|w| w[0] == "secretsmanager" && w[1] == "get-secret-value")
        }
        "gh" => args.windows(2).any(|w| w[0] == "auth" && w[1] == "token"),
        "az" => args
            .windows(2)
            .any(|w| w[0] == "account" && w[1] == "get-access-token"),
        "kubectl" => {
            args.contains(&"--raw") && args.contains(&"view")
                || args
                    .windows(2)
                    .any(|w| w[0] == "get" && w[1].starts_with("secret"))
                    && args
                        .iter()
                        .any(|a| a.contains("yaml") || a.contains("json") || a.contains("jsonpath"))
        }
        "git" => args
            .windows(2)
            .any(|w| w[0] == "credential" && w[1] == "fill"),
        "vault" => {
            args.first().is_some_and(|a| *a == "read" || *a == "kv")
                || args.windows(2).any(|w| w[0] == "token" && w[1] == "lookup")
        }
        "op" => {
            args.first().is_some_and(|a| *a == "read")
                || args.windows(2).any(|w| w[0] == "item" && w[1] == "get")
        }
        "mimikatz" | "mimikatz.exe" | "lazagne" | "laZagne" | "secretsdump.py" | "pypykatz" => true,
        _ => false,
    };
    if tool {
        return Some(format!(
            "`{p} {}` prints stored credentials",
            args.join(" ")
        ));
    }
    // `find / -name '*.pem' | xargs cat`, `find ~ -name .env -exec cat {} +`:
    // files picked out by a secret's name, and printed.
    if p == "find"
        && let Some((pattern, kind)) = secret_pattern(ctx, cmd)
    {
        let exec_prints = args.windows(2).any(|w| {
            matches!(w[0], "-exec" | "-execdir") && PRINTERS.contains(&program_name(w[1]))
        });
        let piped = ctx
            .readers(at)
            .find(|&r| PRINTERS.contains(&program(ctx.cmd(r))))
            .map(|r| program(ctx.cmd(r)));
        if exec_prints || piped.is_some() {
            return Some(format!(
                "`find -name {pattern}` picks out {kind} and `{}` prints them",
                piped.unwrap_or("-exec")
            ));
        }
    }
    // `cat $(find ~ -name id_rsa)`: the files a substitution's `find`
    // picks out by a secret's name, printed.
    if PRINTERS.contains(&p) {
        for w in cmd.args() {
            for i in ctx.substituted_programs(w) {
                let inner = ctx.cmd(i);
                if program(inner) == "find"
                    && let Some((pattern, kind)) = secret_pattern(ctx, inner)
                {
                    return Some(format!(
                        "`{p}` prints what `find -name {pattern}` picks out: {kind}"
                    ));
                }
            }
        }
    }
    // `grep -r password ~/.config/`: a search through every file of a
    // folder that holds the user's credentials prints what matches in them.
    let searches = matches!(p, "rg" | "ag" | "ack")
        || matches!(p, "grep" | "egrep" | "fgrep")
            && (has_short(cmd, 'r') || has_short(cmd, 'R') || has_long(cmd, "--recursive"));
    if searches {
        for w in operands(cmd) {
            let resolved = ctx.path(&w.text);
            let folder = resolved.trim_end_matches('/');
            if folder == "~"
                || is_a_home(folder)
                || matches!(folder, "~/.config" | "~/.local/share" | "~/Library")
            {
                return Some(format!(
                    "`{p}` searches every file beneath `{}`, where the user's credentials are",
                    w.text
                ));
            }
        }
    }
    // The environment, searched for its secrets: `printenv | grep -i token`.
    let dumps_env = matches!(
        p,
        "printenv" | "env" | "set" | "declare" | "typeset" | "export"
    ) && args.iter().all(|a| a.starts_with('-'));
    if dumps_env {
        for r in ctx.readers(at) {
            let reader = ctx.cmd(r);
            if matches!(
                program(reader),
                "grep" | "egrep" | "rg" | "ag" | "awk" | "sed"
            ) && reader.args().iter().any(|w| {
                let lower = w.text.to_ascii_lowercase();
                ["key", "token", "secret", "pass", "cred", "auth"]
                    .iter()
                    .any(|s| lower.contains(s))
            }) {
                return Some(format!(
                    "`{p}` prints the environment and `{}` picks out its secrets",
                    program(reader)
                ));
            }
        }
    }
    // A secret variable printed: `printenv OPENAI_API_KEY`, `echo $GITHUB_TOKEN`.
    if matches!(p, "printenv" | "echo" | "printf") {
        for w in cmd.args() {
            let name = if p == "printenv" {
                Some(w.text.as_str())
            } else {
                w.text
                    .strip_prefix("${")
                    .and_then(|n| n.strip_suffix('}'))
                    .or_else(|| w.text.strip_prefix('$'))
            };
            if let Some(name) = name
                && crate::shell::is_name(name)
                && crate::secrets::secret_name(name)
            {
                return Some(format!(
                    "`{p}` prints `{name}`, a secret the environment holds"
                ));
            }
        }
    }
    let reads = read_files(cmd);
    for file in reads {
        if file.starts_with('$') || file.contains("://") || !crate::paths::may_be_secret(&file) {
            continue;
        }
        if let Some(kind) = secret_kind(&ctx.path(&file)) {
            return Some(format!(
                "`{}` reads `{file}`, {kind}",
                if p.is_empty() { "a redirection" } else { p }
            ));
        }
    }
    None
}

/// Programs that print what they read.
const PRINTERS: &[&str] = &[
    "cat", "head", "tail", "less", "more", "base64", "xxd", "strings", "od", "hexdump", "tac",
    "nl", "bat",
];

/// A program word's name without its directory.
fn program_name(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// A `find` name pattern that picks out secrets (`-name '*.pem'`,
/// `-iname .env`), with what kind, read by trying it on a sample name.
fn secret_pattern<'a>(ctx: &Ctx<'_>, cmd: &'a Command) -> Option<(&'a str, &'static str)> {
    let args = cmd.args();
    args.windows(2).find_map(|w| {
        if !matches!(w[0].text.as_str(), "-name" | "-iname" | "-path" | "-ipath") {
            return None;
        }
        let pattern = w[1].text.as_str();
        let sample = pattern.replace(['*', '?'], "x");
        secret_kind(&ctx.path(&sample)).map(|kind| (pattern, kind))
    })
}

/// The files a command reads, as far as the line shows: `<` redirections,
/// `cp`/`scp`/`rsync` sources, and the arguments of any program not known to
/// leave its arguments' contents alone (`ls`, `chmod`, `ssh`…), `curl -d @file` included.
pub(crate) fn read_files(cmd: &Command) -> Vec<String> {
    let p = program(cmd);
    const HARMLESS: &[&str] = &[
        "ls",
        "stat",
        "test",
        "[",
        "[[",
        "file",
        "chmod",
        "chown",
        "chgrp",
        "touch",
        "mkdir",
        "ssh",
        "ssh-add",
        "ssh-keygen",
        "du",
        "wc",
        "realpath",
        "readlink",
        "dirname",
        "basename",
        "lsattr",
        "getfacl",
        "md5sum",
        "sha1sum",
        "sha256sum",
        "shasum",
        "rm",
        "mv",
        "git",
        "echo",
        "printf",
        "cd",
        "pushd",
        "code",
        "vim",
        "vi",
        "nano",
        "ssh-copy-id",
        "docker",
        "gpg",
        "source",
        ".",
        "export",
        "find",
        "locate",
        "stow",
        "direnv",
        "dotenv",
        "env",
        "npx",
        "terraform",
        "kubectl",
        "helm",
        "aws",
        "gcloud",
        "az",
    ];

    let mut r: Vec<String> = cmd
        .redirects
        .iter()
        .filter(|r| r.op == "<")
        .map(|r| r.target.text.clone())
        .collect();
    let copies = matches!(p, "cp" | "scp" | "rsync" | "install");
    if copies {
        let ops = operands(cmd);
        r.extend(
            ops.iter()
                .take(ops.len().saturating_sub(1))
                .map(|w| w.text.clone()),
        );
    } else if !HARMLESS.contains(&p) && !p.is_empty() {
        // The values of options a program writes to are not read
        // (`openssl req -keyout key.pem -out cert.pem` makes a key), nor
        // those of a key it signs with and never prints (`openssl req -key
        // server.key`); `openssl rsa -in key.pem`, which prints it, reads.
        let unread: &[&str] = match p {
            "openssl" => &["-out", "-keyout", "-key", "-inkey", "-signkey", "-CAkey"],
            _ => &[],
        };
        let args = cmd.args();
        r.extend(
            args.iter()
                .enumerate()
                .filter(|(i, _)| {
                    !i.checked_sub(1)
                        .and_then(|b| args.get(b))
                        .is_some_and(|flag| unread.contains(&flag.text.as_str()))
                })
                .map(|(_, w)| w)
                .filter(|w| !w.text.starts_with('-') || w.text.contains('@'))
                .map(|w| w.text.trim_start_matches('@').to_owned()),
        );
        // `curl -d @file`, `--data-binary @file`, `-F x=@file`, `-T file`.
        r.extend(
            cmd.args()
                .iter()
                .filter_map(|w| w.text.split_once("=@").map(|(_, f)| f.to_owned())),
        );
    }
    r
}

/// A git command's subcommand and its arguments, after git's own options.
pub(crate) fn git_sub(cmd: &Command) -> Option<(&str, Vec<&Word>)> {
    if program(cmd) != "git" {
        return None;
    }
    let args = cmd.args();
    let mut i = 0;
    while let Some(w) = args.get(i) {
        let t = w.text.as_str();
        if matches!(
            t,
            "-C" | "-c" | "--git-dir" | "--work-tree" | "--namespace" | "--exec-path"
        ) {
            i += 2;
        } else if t.starts_with('-') {
            i += 1;
        } else {
            return Some((t, args[i + 1..].iter().collect()));
        }
    }
    None
}

fn protected(ctx: &Ctx<'_>, branch: &str) -> bool {
    let branch = branch.trim_start_matches("refs/heads/");
    ctx.options
        .protected_branches
        .iter()
        .any(|p| match p.strip_suffix('*') {
            Some(prefix) => branch.starts_with(prefix),
            None => branch == p,
        })
}

fn history_rewrite(ctx: &Ctx<'_>, at: usize) -> Option<String> {
    let cmd = ctx.cmd(at);
    let (sub, args) = git_sub(cmd)?;
    let flag_words: Vec<&str> = args
        .iter()
        .map(|w| w.text.as_str())
        .filter(|t| t.starts_with('-'))
        .collect();
    let positional: Vec<&str> = args
        .iter()
        .map(|w| w.text.as_str())
        .filter(|t| !t.starts_with('-'))
        .collect();
    match sub {
        "push" => {
            let force = flag_words.iter().any(|f| {
                *f == "--force"
                    || f.starts_with("--force-with-lease")
                    || *f == "--force-if-includes"
                    || *f == "--mirror"
                    || !f.starts_with("--") && f.contains('f')
            });
            let delete = flag_words.iter().any(|f| *f == "--delete" || *f == "-d");
            let refspecs: Vec<&str> = positional.iter().skip(1).copied().collect();
            for spec in &refspecs {
                let (plus, spec) = match spec.strip_prefix('+') {
                    Some(s) => (true, s),
                    None => (false, *spec),
                };
                let dst = spec.rsplit(':').next().unwrap_or(spec);
                let deletes = spec.starts_with(':') || delete;
                if (force || plus || deletes) && protected(ctx, dst) {
                    return Some(format!(
                        "`git push` {} the protected branch `{dst}`",
                        if deletes { "deletes" } else { "force-rewrites" }
                    ));
                }
            }
            if force && refspecs.is_empty() {
                return Some("`git push --force` without a branch rewrites whatever branch is checked out, which may be protected: name the branch".into());
            }
            if args.iter().any(|w| w.text == "--mirror") {
                return Some("`git push --mirror` overwrites every branch of the remote".into());
            }
            None
        }
        "filter-branch" | "filter-repo" => Some(format!(
            "`git {sub}` rewrites the repository's whole history"
        )),
        "branch"
            if flag_words
                .iter()
                .any(|f| matches!(*f, "-D" | "-d" | "--delete" | "-f" | "--force"))
                && flag_words
                    .iter()
                    .any(|f| matches!(*f, "-D" | "-d" | "--delete")) =>
        {
            positional
                .iter()
                .find(|b| protected(ctx, b))
                .map(|b| format!("`git branch -D` deletes the protected branch `{b}`"))
        }
        "branch" if flag_words.iter().any(|f| matches!(*f, "-f" | "--force")) => positional
            .first()
            .filter(|b| protected(ctx, b))
            .map(|b| format!("`git branch -f` moves the protected branch `{b}`")),
        // `git update-ref refs/heads/main X` moves it; `-d` deletes it.
        "update-ref" => positional
            .first()
            .map(|r| r.strip_prefix("refs/heads/").unwrap_or(r))
            .filter(|b| protected(ctx, b))
            .map(|b| {
                format!(
                    "`git update-ref` {} the protected branch `{b}`",
                    if flag_words.contains(&"-d") {
                        "deletes"
                    } else {
                        "moves"
                    }
                )
            }),
        _ => None,
    }
}

fn discard_work(ctx: &Ctx<'_>, at: usize) -> Option<String> {
    let cmd = ctx.cmd(at);
    let (sub, args) = git_sub(cmd)?;
    let t: Vec<&str> = args.iter().map(|w| w.text.as_str()).collect();
    let short = |c: char| {
        t.iter()
            .any(|f| f.starts_with('-') && !f.starts_with("--") && f.contains(c))
    };
    let found = match sub {
        "clean"
            if (short('f') || t.contains(&"--force"))
                && !short('n')
                && !t.contains(&"--dry-run")
                && !short('i') =>
        {
            Some(format!(
                "`git clean {}` deletes untracked files for good",
                t.join(" ")
            ))
        }
        "reset" if t.contains(&"--hard") => {
            Some("`git reset --hard` throws away uncommitted changes".into())
        }
        "checkout"
            if t.iter().any(|a| matches!(*a, "." | ":/" | "*"))
                || short('f')
                || t.contains(&"--force") =>
        {
            Some("`git checkout` over the working tree throws away uncommitted changes".into())
        }
        "restore" if !t.contains(&"--staged") || t.contains(&"--worktree") => t
            .iter()
            .any(|a| matches!(*a, "." | ":/" | "*"))
            .then(|| "`git restore .` throws away uncommitted changes".into()),
        "switch" if t.contains(&"--discard-changes") || short('f') || t.contains(&"--force") => {
            Some("`git switch --discard-changes` throws away uncommitted changes".into())
        }
        "stash" if t.first().is_some_and(|a| matches!(*a, "drop" | "clear")) => {
            Some(format!("`git stash {}` deletes stashed work", t[0]))
        }
        _ => None,
    };
    found.map(|f| format!("{f} (set `allow_classes: [\"discard-work\"]` if this workspace may)"))
}
