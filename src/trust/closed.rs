//! What a workspace command runs, read closed-world: toolgate names every
//! workspace file the command will execute or load as code, or it refuses
//! the hook at review time and says what it could not see.
//!
//! # Why closed-world
//!
//! The first trust gate parsed argv to *guess* the script (skip options,
//! take the first word), and the repository controls what really runs: a
//! `-m` module, a value-taking option read as the script
//! (`python3 -uW ignore g.py` pinned `ignore`), a wrapper (`timeout 5 python3
//! g.py`, `env -S …`), a preload (`node -r ./pre.js`), an interpreter inside
//! the workspace (a virtualenv whose `site-packages/*.pth` runs on every
//! call). Each of those ran code the user never reviewed. So the reading
//! here accepts only what it understands completely and refuses the rest:
//!
//! - the program is an **interpreter toolgate knows** (Python 3, bash, sh,
//!   Node.js, Perl — the ones on the machines it is tested on), found
//!   outside the workspace, given only **options from its table** (which
//!   take a value, which cluster, which end the options), and then a
//!   **script inside the workspace**; or
//! - the program is a **file inside the workspace**: a native (ELF) binary,
//!   or a script whose `#!` line names a known interpreter outside the
//!   workspace (directly, or as `/usr/bin/env NAME`), which toolgate then
//!   starts itself, so no `PATH` lookup happens at run time; or
//!
//! Anything else — an unknown program or wrapper, an option not in the
//! table, `-m`, a preload, a shebang that cannot be followed, a script
//! outside the workspace, an interpreter inside it, and **inline code**
//! (`sh -c '…'`, `python3 -c`, `node -e`, `perl -e`) — is refused with what
//! was not understood and how to write the hook so it can be. Inline code is
//! pinned as text, but what it runs is not visible without parsing a shell
//! (`sh -c ./hooks/x.sh` runs a workspace file from the workspace, not from
//! a pinned copy; Python's `-c` and Node's `-e` also import from the
//! working directory first): closed world means refusing it, not guessing.
//!
//! The option tables list only what a guard needs; an option missing from a
//! table is refused, never skipped. `tests` checks each entry against the
//! interpreter's own `--help` and runs the interpreter on the argv shapes
//! the tables accept to see that the file it runs is the one named here.

use std::path::{Path, PathBuf};

/// How a workspace command starts, once understood.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Launch {
    /// A native program inside the workspace (workspace-relative), run with
    /// the argv's other words.
    Program {
        /// Its path relative to the workspace root.
        rel: PathBuf,
        /// argv[1..].
        args: Vec<String>,
    },
    /// A known interpreter (outside the workspace) running a workspace
    /// script.
    Script {
        /// The interpreter, as found (absolute).
        interpreter: PathBuf,
        /// Its options before the script.
        options: Vec<String>,
        /// The script, relative to the workspace root.
        rel: PathBuf,
        /// The script's own arguments.
        args: Vec<String>,
    },
}

impl Launch {
    /// The program to exec and its arguments, with workspace files taken
    /// from `base` (the pinned snapshot, or the workspace itself).
    pub(crate) fn command(&self, base: &Path) -> (PathBuf, Vec<String>) {
        match self {
            Launch::Program { rel, args } => (base.join(rel), args.clone()),
            Launch::Script {
                interpreter,
                options,
                rel,
                args,
            } => {
                let mut all = options.clone();
                all.push(base.join(rel).to_string_lossy().into_owned());
                all.extend(args.iter().cloned());
                (interpreter.clone(), all)
            }
        }
    }

    /// The workspace file it runs (relative to the root).
    pub(crate) fn code_file(&self) -> &Path {
        match self {
            Launch::Program { rel, .. } | Launch::Script { rel, .. } => rel,
        }
    }
}

/// What a reading found: how the command starts, and the programs outside
/// the workspace it starts (pinned by path).
#[derive(Clone, Debug)]
pub(crate) struct Reading {
    pub(crate) launch: Launch,
    /// (as written, as found) for the interpreter, when there is one.
    pub(crate) interpreter: Option<(String, PathBuf)>,
    /// Whether the workspace code is argv[0] itself (a native binary or a
    /// `#!` script) rather than a script handed to an interpreter.
    pub(crate) code_is_program: bool,
}

/// The interpreter families toolgate can read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Family {
    Python,
    Bash,
    Sh,
    Node,
    Perl,
}

impl Family {
    /// The family of a program called `name` (`python3.11` is Python).
    pub(crate) fn of(name: &str) -> Option<Family> {
        let base = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
        match base {
            "python" | "python3" => Some(Family::Python),
            "bash" => Some(Family::Bash),
            "sh" | "dash" => Some(Family::Sh),
            "node" | "nodejs" => Some(Family::Node),
            "perl" => Some(Family::Perl),
            _ => None,
        }
    }

    /// How this family's options are read.
    fn table(self) -> &'static Table {
        match self {
            Family::Python => &PYTHON,
            Family::Bash => &BASH,
            Family::Sh => &SH,
            Family::Node => &NODE,
            Family::Perl => &PERL,
        }
    }
}

/// One interpreter's options, as far as a guard needs them. Anything not
/// listed is refused.
pub(crate) struct Table {
    /// Single-letter options that take no value (may cluster: `-uB`).
    pub(crate) flags: &'static str,
    /// Single-letter options that take a value (the rest of the cluster, or
    /// the next word: `-Wignore`, `-W ignore`, `-uW ignore`).
    pub(crate) valued: &'static str,
    /// Whether `+x` / `+o name` forms exist (shells).
    pub(crate) plus: bool,
    /// Whether single-letter options may cluster.
    pub(crate) cluster: bool,
    /// Long options that take no value.
    pub(crate) long_flags: &'static [&'static str],
    /// Long options that take a value (`--opt=value`, or `--opt value`
    /// when `long_split`).
    pub(crate) long_valued: &'static [&'static str],
    /// Whether a long option's value may be the next word.
    pub(crate) long_split: bool,
    /// Options refused, with why (the ones a hook author is likely to
    /// write, so the refusal can say more than "unknown").
    pub(crate) refused: &'static [(&'static str, &'static str)],
    /// Values accepted for a valued option (`-X` in Python), when limited.
    pub(crate) values: &'static [(char, &'static [&'static str])],
}

/// Why inline code is refused (shells, Perl).
const INLINE: &str = "runs inline code, which toolgate cannot see the files of; put the code \
                      in a script inside the workspace";

/// Python 3.11 (`python3 --help`).
pub(crate) const PYTHON: Table = Table {
    flags: "bBdEIOPqsSuvx",
    valued: "WX",
    plus: false,
    cluster: true,
    long_flags: &[],
    long_valued: &["--check-hash-based-pycs"],
    long_split: true,
    refused: &[
        (
            "-c",
            "runs inline code with the working directory (the workspace) first on its import path",
        ),
        (
            "-m",
            "runs a module found through the import path, which starts at the working directory (the workspace)",
        ),
        ("-i", "reads code from stdin after the script"),
        ("-", "reads the program from stdin"),
        ("-h", "prints help and runs no hook"),
        ("-V", "prints the version and runs no hook"),
    ],
    values: &[(
        'X',
        &[
            "dev",
            "utf8",
            "utf8=0",
            "utf8=1",
            "importtime",
            "faulthandler",
            "tracemalloc",
            "showrefcount",
            "warn_default_encoding",
            "no_debug_ranges",
            "frozen_modules=on",
            "frozen_modules=off",
        ],
    )],
};

/// GNU bash 5.2 (`bash --help`; the single-letter options are `set`'s).
pub(crate) const BASH: Table = Table {
    flags: "abefhkmnptuvxBCEHPTr",
    valued: "oO",
    plus: true,
    cluster: true,
    long_flags: &[
        "--noprofile",
        "--norc",
        "--posix",
        "--restricted",
        "--verbose",
        "--noediting",
    ],
    long_valued: &[],
    long_split: false,
    refused: &[
        ("-c", INLINE),
        ("-s", "reads commands from stdin (the request)"),
        ("-i", "is interactive: it reads the user's rc files"),
        ("-l", "is a login shell: it reads profile files"),
        ("--login", "is a login shell: it reads profile files"),
        ("--rcfile", "reads another rc file"),
        ("--init-file", "reads another rc file"),
        ("--debugger", "loads the debugger's profile"),
        ("-D", "prints strings and runs no hook"),
    ],
    values: &[],
};

/// dash, Debian's `/bin/sh` (dash(1): `-aCefnuvxIimqVEb`, `-o`, `-c`, `-s`).
pub(crate) const SH: Table = Table {
    flags: "aCefnuvx",
    valued: "o",
    plus: true,
    cluster: true,
    long_flags: &[],
    long_valued: &[],
    long_split: false,
    refused: &[
        ("-c", INLINE),
        ("-s", "reads commands from stdin (the request)"),
        ("-i", "is interactive: it reads $ENV"),
        ("-l", "is a login shell: it reads profile files"),
    ],
    values: &[],
};

/// Node.js 20 (`node --help`; `--max-old-space-size` and `--stack-size` are
/// V8's, `node --v8-options`). Only options that change no code loading.
pub(crate) const NODE: Table = Table {
    flags: "",
    valued: "",
    plus: false,
    cluster: false,
    long_flags: &[
        "--no-warnings",
        "--no-deprecation",
        "--throw-deprecation",
        "--trace-deprecation",
        "--trace-warnings",
        "--trace-uncaught",
        "--pending-deprecation",
        "--enable-source-maps",
        "--abort-on-uncaught-exception",
    ],
    long_valued: &[
        "--unhandled-rejections",
        "--max-old-space-size",
        "--stack-size",
    ],
    long_split: false,
    refused: &[
        (
            "-e",
            "runs inline code that resolves modules from the working directory (the workspace)",
        ),
        (
            "--eval",
            "runs inline code that resolves modules from the working directory (the workspace)",
        ),
        (
            "-p",
            "runs inline code that resolves modules from the working directory (the workspace)",
        ),
        (
            "--print",
            "runs inline code that resolves modules from the working directory (the workspace)",
        ),
        ("-r", "preloads a module"),
        ("--require", "preloads a module"),
        ("--import", "preloads a module"),
        ("--loader", "loads a module loader"),
        ("--experimental-loader", "loads a module loader"),
        (
            "--env-file",
            "reads environment (NODE_OPTIONS among it) from a file",
        ),
        ("-", "reads the program from stdin"),
    ],
    values: &[],
};

/// Perl 5.36 (`perl -h`): the switches that load nothing.
pub(crate) const PERL: Table = Table {
    flags: "wWXtTfs",
    valued: "",
    plus: false,
    cluster: false,
    long_flags: &[],
    long_valued: &[],
    long_split: false,
    refused: &[
        ("-e", INLINE),
        ("-I", "adds a directory to the module path"),
        ("-M", "loads a module"),
        ("-m", "loads a module"),
        ("-d", "loads a debugger module"),
        ("-x", "extracts the program from another file"),
        ("-S", "looks the script up on PATH"),
        ("-E", INLINE),
        ("-i", "edits files in place"),
    ],
    values: &[],
};

/// Where an option reading ended: at argv index `at`, the script, every
/// option before it understood.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Scan(pub(crate) usize);

/// Reads `args` (the interpreter's arguments) with `table`: where the
/// script is, or why the options are not understood.
pub(crate) fn scan(table: &Table, args: &[String]) -> Result<Scan, String> {
    let refused = |opt: &str| -> Option<String> {
        table
            .refused
            .iter()
            .find(|(o, _)| *o == opt)
            .map(|(o, why)| format!("option {o} {why}"))
    };
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        if arg == "--" {
            return if i + 1 < args.len() {
                Ok(Scan(i + 1))
            } else {
                Err("no script follows `--`".into())
            };
        }
        if let Some(why) = refused(arg) {
            return Err(why);
        }
        if let Some(long) = arg.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((n, v)) => (format!("--{n}"), Some(v)),
                None => (arg.clone(), None),
            };
            if let Some(why) = refused(&name) {
                return Err(why);
            }
            if table.long_flags.contains(&name.as_str()) && value.is_none() {
                i += 1;
                continue;
            }
            if table.long_valued.contains(&name.as_str()) {
                match value {
                    Some(_) => i += 1,
                    None if table.long_split && i + 1 < args.len() => i += 2,
                    None => {
                        return Err(format!("option {name} needs a value (write {name}=VALUE)"));
                    }
                }
                continue;
            }
            return Err(format!("option {name} is not one toolgate knows"));
        }
        let plus = table.plus && arg.starts_with('+');
        if (arg.starts_with('-') || plus) && arg.len() > 1 {
            let letters: Vec<char> = arg[1..].chars().collect();
            if let Some(why) = letters
                .first()
                .and_then(|c| refused(&format!("{}{c}", &arg[..1])))
            {
                return Err(why);
            }
            if !table.cluster && letters.len() > 1 && !table.valued.contains(letters[0]) {
                return Err(format!(
                    "option {arg} is not one toolgate knows (write each option as its own word)"
                ));
            }
            let mut j = 0;
            let mut next = i + 1;
            while j < letters.len() {
                let c = letters[j];
                let one = format!("{}{c}", &arg[..1]);
                if let Some(why) = refused(&one) {
                    return Err(why);
                }
                if table.flags.contains(c) {
                    j += 1;
                    continue;
                }
                if table.valued.contains(c) {
                    let rest: String = letters[j + 1..].iter().collect();
                    let value = if !rest.is_empty() {
                        rest
                    } else if next < args.len() {
                        next += 1;
                        args[next - 1].clone()
                    } else {
                        return Err(format!("option {one} needs a value"));
                    };
                    if let Some((_, allowed)) = table.values.iter().find(|(v, _)| *v == c)
                        && !allowed.contains(&value.as_str())
                    {
                        return Err(format!(
                            "option {one} {value} is not one toolgate knows (it reads {})",
                            allowed.join(", ")
                        ));
                    }
                    break;
                }
                return Err(format!("option {one} (in {arg}) is not one toolgate knows"));
            }
            i = next;
            continue;
        }
        return Ok(Scan(i));
    }
    Err("no script is named".into())
}

/// What to say after a refusal: how to write the hook so it can be read.
pub(crate) const HOW: &str = "name a script inside the workspace directly (\"command\": \
     [\"python3\", \"hooks/guard.py\"] or [\"hooks/guard.sh\"] with a #! line), with only \
     the interpreter options toolgate knows, and list other files it loads in `trust_files`";

/// Reads one command: `program` as the loader resolved it (`root`-joined
/// when written as a path), `search` the search path for bare names and
/// `#!/usr/bin/env NAME`.
pub(crate) fn read(
    argv: &[String],
    program: &Path,
    root: &Path,
    search: &dyn Fn(&str) -> Option<PathBuf>,
) -> Result<Reading, String> {
    let written = argv.first().map(String::as_str).unwrap_or_default();
    let rest = &argv[1.min(argv.len())..];
    let found = if written.contains('/') {
        let joined = root.join(program);
        if !joined.exists() {
            return Err(format!("program {written:?} does not exist"));
        }
        joined
    } else {
        search(written).ok_or_else(|| {
            format!("program {written:?} is not on the search path (outside the workspace)")
        })?
    };
    let inside_as_written = std::path::absolute(&found)
        .map(|p| p.starts_with(root))
        .unwrap_or(false);
    let canonical = found
        .canonicalize()
        .map_err(|e| format!("program {written:?}: {e}"))?;
    let inside = canonical.starts_with(root);
    if inside_as_written && !inside {
        return Err(format!(
            "program {written:?} is a link inside the workspace to {} outside it (a virtualenv's \
             interpreter reads the workspace's site-packages); name the interpreter outside the \
             workspace",
            canonical.display()
        ));
    }
    if inside {
        let name = file_name(&canonical);
        if Family::of(&name).is_some() || Family::of(&file_name(Path::new(written))).is_some() {
            return Err(format!(
                "program {written:?} is an interpreter inside the workspace (a virtualenv?); \
                 move it out of the workspace or name the system interpreter"
            ));
        }
        let rel = canonical
            .strip_prefix(root)
            .map(Path::to_owned)
            .unwrap_or_default();
        return read_workspace_program(written, &canonical, rel, rest, root, search);
    }
    crate::safe_fs::writable_only_by_owner(&canonical).map_err(|why| {
        format!(
            "program {written:?} is outside the workspace and could be changed by others: {why}"
        )
    })?;
    let family = Family::of(&file_name(Path::new(written)))
        .or_else(|| Family::of(&file_name(&canonical)))
        .ok_or_else(|| {
            format!(
                "program {written:?} is outside the workspace and is not an interpreter toolgate \
                 knows (python3, bash, sh, node, perl), so toolgate cannot see what it runs{}",
                if WRAPPERS.contains(&file_name(Path::new(written)).as_str()) {
                    " (a wrapper: it starts another program)"
                } else {
                    ""
                }
            )
        })?;
    let interpreter = std::path::absolute(&found).unwrap_or(found);
    let Scan(at) = scan(family.table(), rest).map_err(|why| format!("{written}: {why}"))?;
    let launch = Launch::Script {
        interpreter: interpreter.clone(),
        options: rest[..at].to_vec(),
        rel: workspace_script(&rest[at], root)?,
        args: rest[at + 1..].to_vec(),
    };
    Ok(Reading {
        launch,
        interpreter: Some((written.to_owned(), interpreter)),
        code_is_program: false,
    })
}

/// Programs that start another program from their arguments: refused with
/// a word that says so.
const WRAPPERS: &[&str] = &[
    "env",
    "timeout",
    "nice",
    "nohup",
    "stdbuf",
    "xargs",
    "sudo",
    "doas",
    "setsid",
    "ionice",
    "taskset",
    "chrt",
    "time",
    "flock",
    "busybox",
    "exec",
    "strace",
    "ltrace",
    "unshare",
    "nsenter",
    "chroot",
    "runuser",
    "su",
    "script",
    "watch",
    "parallel",
    "firejail",
    "bwrap",
    "systemd-run",
    "prlimit",
    "setpriv",
    "caffeinate",
    "uv",
    "poetry",
    "pipenv",
    "npx",
    "pnpm",
    "yarn",
    "npm",
    "make",
    "direnv",
];

/// A script named on an interpreter's command line: must be a regular file
/// inside the workspace. Returns it relative to the root.
fn workspace_script(written: &str, root: &Path) -> Result<PathBuf, String> {
    let joined = root.join(written);
    let canonical = joined
        .canonicalize()
        .map_err(|e| format!("script {written:?}: {e}"))?;
    let rel = canonical.strip_prefix(root).map_err(|_| {
        format!(
            "script {written:?} resolves to {}, outside the workspace, where toolgate cannot pin \
             it; keep the hook's code inside the workspace",
            canonical.display()
        )
    })?;
    crate::safe_fs::regular_file(&canonical)
        .map_err(|e| format!("script {written:?} {}", crate::text::error_chain(&e)))?;
    Ok(rel.to_owned())
}

/// A program inside the workspace: a native binary, or a script whose `#!`
/// names a known interpreter outside the workspace.
fn read_workspace_program(
    written: &str,
    path: &Path,
    rel: PathBuf,
    rest: &[String],
    root: &Path,
    search: &dyn Fn(&str) -> Option<PathBuf>,
) -> Result<Reading, String> {
    use std::io::Read;
    crate::safe_fs::regular_file(path)
        .map_err(|e| format!("program {written:?} {}", crate::text::error_chain(&e)))?;
    let mut head = [0u8; 256];
    let n = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut head))
        .map_err(|e| format!("program {written:?}: {e}"))?;
    let head = &head[..n];
    if head.starts_with(b"\x7fELF") {
        return Ok(Reading {
            launch: Launch::Program {
                rel,
                args: rest.to_vec(),
            },
            interpreter: None,
            code_is_program: true,
        });
    }
    let Some(line) = head.strip_prefix(b"#!") else {
        return Err(format!(
            "program {written:?} is neither a native binary nor a script with a #! line, so \
             toolgate cannot tell what runs it"
        ));
    };
    let end = line.iter().position(|&b| b == b'\n').ok_or_else(|| {
        format!("program {written:?}: its #! line is longer than toolgate reads (255 bytes)")
    })?;
    let line = std::str::from_utf8(&line[..end])
        .map_err(|_| format!("program {written:?}: its #! line is not UTF-8"))?
        .trim();
    // The kernel splits a #! line into the interpreter and at most one
    // argument (the rest of the line, spaces included).
    let (interp, arg) = match line.split_once([' ', '\t']) {
        Some((i, a)) => (i, Some(a.trim())),
        None => (line, None),
    };
    let shebang = |why: &str| format!("program {written:?}: its #! line `#!{line}` {why}");
    if !interp.starts_with('/') {
        return Err(shebang("does not name an absolute interpreter"));
    }
    let (name, found, options) = if file_name(Path::new(interp)) == "env" {
        let name = arg.ok_or_else(|| shebang("names env without a program"))?;
        if name.starts_with('-') || name.contains([' ', '\t', '=']) {
            return Err(shebang(
                "passes options or settings to env, which toolgate does not read; name the \
                 interpreter and nothing else",
            ));
        }
        let found = search(name).ok_or_else(|| {
            shebang(&format!(
                "names {name}, which is not on the search path outside the workspace"
            ))
        })?;
        (name.to_owned(), found, Vec::new())
    } else {
        let found = PathBuf::from(interp);
        (
            file_name(&found),
            found,
            arg.map(|a| vec![a.to_owned()]).unwrap_or_default(),
        )
    };
    let canonical = found
        .canonicalize()
        .map_err(|e| shebang(&format!("names an interpreter that cannot be found: {e}")))?;
    if canonical.starts_with(root) {
        return Err(shebang(
            "names an interpreter inside the workspace; name one installed outside it",
        ));
    }
    crate::safe_fs::writable_only_by_owner(&canonical)
        .map_err(|why| shebang(&format!("names an interpreter others could change: {why}")))?;
    let family = Family::of(&name).ok_or_else(|| {
        shebang("names an interpreter toolgate does not know (python3, bash, sh, node, perl)")
    })?;
    // The #! argument is an option (the script follows it): it must be one
    // the table knows. `scan` sees it followed by a stand-in script.
    if !options.is_empty() {
        let probe: Vec<String> = options.iter().cloned().chain(["script".into()]).collect();
        match scan(family.table(), &probe) {
            Ok(Scan(at)) if at == options.len() => {}
            Ok(_) => return Err(shebang("passes an argument toolgate does not read")),
            Err(why) => return Err(shebang(&why)),
        }
    }
    Ok(Reading {
        launch: Launch::Script {
            interpreter: found.clone(),
            options,
            rel,
            args: rest.to_vec(),
        },
        interpreter: Some((format!("#!{line}"), found)),
        code_is_program: true,
    })
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn options_are_read_as_the_interpreter_reads_them() {
        let cases: &[(&Table, &[&str], Result<Scan, ()>)] = &[
            (&PYTHON, &["hooks/a.py", "x"], Ok(Scan(0))),
            (&PYTHON, &["-u", "-W", "ignore", "a.py"], Ok(Scan(3))),
            (&PYTHON, &["-uW", "ignore", "g.py"], Ok(Scan(2))),
            (&PYTHON, &["-uWignore", "g.py"], Ok(Scan(1))),
            (&PYTHON, &["-X", "dev", "g.py"], Ok(Scan(2))),
            (
                &PYTHON,
                &["--check-hash-based-pycs", "default", "g.py"],
                Ok(Scan(2)),
            ),
            (
                &PYTHON,
                &["--check-hash-based-pycs=never", "g.py"],
                Ok(Scan(1)),
            ),
            (&PYTHON, &["-X", "pycache_prefix=hooks", "g.py"], Err(())),
            (&PYTHON, &["-c", "print(1)"], Err(())),
            (&PYTHON, &["-m", "hooks.guard"], Err(())),
            (&PYTHON, &["-Im", "hooks.guard"], Err(())),
            (&PYTHON, &["-uc", "1"], Err(())),
            (&PYTHON, &["--", "-odd.py"], Ok(Scan(1))),
            (&PYTHON, &["-Q", "new", "g.py"], Err(())),
            (&BASH, &["-e", "-o", "pipefail", "x.sh"], Ok(Scan(3))),
            (&BASH, &["-eo", "pipefail", "x.sh"], Ok(Scan(2))),
            (&BASH, &["+o", "posix", "x.sh"], Ok(Scan(2))),
            (&BASH, &["--norc", "-c", "echo"], Err(())),
            (&BASH, &["-ec", "echo"], Err(())),
            (&BASH, &["--rcfile", "x", "y.sh"], Err(())),
            (&BASH, &["-s"], Err(())),
            (&SH, &["-c", "echo"], Err(())),
            (&SH, &["-eu", "x.sh"], Ok(Scan(1))),
            (&NODE, &["--require", "r.js", "main.js"], Err(())),
            (&NODE, &["-r", "./pre.js", "main.js"], Err(())),
            (&NODE, &["-e", "1"], Err(())),
            (&NODE, &["--no-warnings", "main.js"], Ok(Scan(1))),
            (&NODE, &["--stack-size=2000", "main.js"], Ok(Scan(1))),
            (&NODE, &["--stack-size", "2000", "main.js"], Err(())),
            (&NODE, &["--inspect", "main.js"], Err(())),
            (&PERL, &["-w", "g.pl"], Ok(Scan(1))),
            (&PERL, &["-e", "print 1"], Err(())),
            (&PERL, &["-Ihooks", "g.pl"], Err(())),
            (&PERL, &["-MFoo", "g.pl"], Err(())),
            (&PERL, &["-wT", "g.pl"], Err(())),
        ];
        for (table, args, want) in cases {
            let got = scan(table, &argv(args));
            match (want, &got) {
                (Ok(w), Ok(g)) => assert_eq!(w, g, "{args:?}"),
                (Err(()), Err(_)) => {}
                _ => panic!("{args:?}: got {got:?}"),
            }
        }
    }

    /// Every option a table accepts is one the interpreter on this machine
    /// lists in its own help, with a value exactly when the help shows one.
    #[test]
    fn the_tables_agree_with_each_interpreters_own_help() {
        let help = |program: &str, args: &[&str]| -> Option<String> {
            let out = std::process::Command::new(program)
                .args(args)
                .output()
                .ok()?;
            Some(format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ))
        };
        let python = help("python3", &["--help"]).expect("python3 is installed");
        for c in PYTHON.flags.chars() {
            let line = format!("\n-{c} ");
            assert!(
                python.contains(&line),
                "python3 --help lists -{c} as a flag"
            );
        }
        for c in PYTHON.valued.chars() {
            assert!(
                python.contains(&format!("\n-{c} arg")) || python.contains(&format!("\n-{c} opt")),
                "python3 --help lists -{c} with a value"
            );
        }
        for opt in PYTHON.long_valued {
            assert!(
                python.contains(&format!("\n{opt} ")),
                "python3 --help lists {opt} with a value"
            );
        }
        let xoptions = help("python3", &["--help-xoptions"]).expect("python3");
        for (_, values) in PYTHON.values {
            for v in *values {
                let name = v.split('=').next().unwrap_or(v);
                assert!(
                    xoptions.contains(&format!("-X {name}")),
                    "python3 knows -X {name}"
                );
            }
        }
        let bash = help("bash", &["--help"]).expect("bash is installed");
        for opt in BASH.long_flags {
            assert!(
                bash.contains(&format!("\t{opt}\n")),
                "bash --help lists {opt}"
            );
        }
        let set = help("bash", &["-c", "help set"]).expect("bash");
        for c in BASH.flags.chars().filter(|c| *c != 'r') {
            assert!(set.contains(&format!("-{c}  ")), "bash's set lists -{c}");
        }
        assert!(bash.contains("-ilrsD or -c command or -O shopt_option"));
        assert!(set.contains("-o option-name"));
        let node = help("node", &["--help"]).expect("node is installed");
        let v8 = help("node", &["--v8-options"]).expect("node");
        for opt in NODE.long_flags {
            assert!(
                node.contains(&format!("  {opt} ")) || node.contains(&format!("  {opt}\n")),
                "node --help lists {opt}"
            );
        }
        assert!(node.contains("--unhandled-rejections=..."));
        for opt in ["--max-old-space-size", "--stack-size"] {
            let v8name = opt.replace('-', "_").trim_start_matches('_').to_owned();
            assert!(
                v8.contains(&format!("  {opt} ")) || v8.contains(&v8name) || v8.contains(opt),
                "node --v8-options lists {opt}"
            );
        }
        let perl = help("perl", &["-h"]).expect("perl is installed");
        for c in PERL.flags.chars() {
            assert!(
                perl.contains(&format!("\n  -{c} ")) || perl.contains(&format!("\n  -{c}[")),
                "perl -h lists -{c}"
            );
        }
    }

    /// The interpreters on this machine run the file the reading names:
    /// each accepted argv shape is run for real with a script that prints
    /// its own path.
    #[test]
    fn each_accepted_shape_runs_the_script_the_reading_names() {
        let dir = tempfile::tempdir().expect("tempdir");
        let write = |name: &str, body: &str| {
            std::fs::write(dir.path().join(name), body).expect("write");
        };
        write("p.py", "import sys; print('RAN', sys.argv[0])\n");
        write("ignore", "import sys; print('WRONG')\n");
        write("s.sh", "echo RAN \"$0\"\n");
        write("pipefail", "echo WRONG\n");
        write("n.js", "console.log('RAN', process.argv[1])\n");
        write("g.pl", "print \"RAN $0\\n\";\n");
        let shapes: &[(&str, &Table, &[&str])] = &[
            ("python3", &PYTHON, &["-uW", "ignore", "p.py"]),
            ("python3", &PYTHON, &["-u", "-W", "ignore", "p.py"]),
            ("python3", &PYTHON, &["-X", "dev", "p.py"]),
            (
                "python3",
                &PYTHON,
                &["--check-hash-based-pycs", "default", "p.py"],
            ),
            ("python3", &PYTHON, &["-BsE", "p.py"]),
            ("bash", &BASH, &["-eo", "pipefail", "s.sh"]),
            ("bash", &BASH, &["--norc", "-e", "s.sh"]),
            ("bash", &BASH, &["+o", "posix", "s.sh"]),
            ("sh", &SH, &["-eu", "s.sh"]),
            ("sh", &SH, &["-o", "nounset", "s.sh"]),
            (
                "node",
                &NODE,
                &["--no-warnings", "--stack-size=2000", "n.js"],
            ),
            ("perl", &PERL, &["-w", "g.pl"]),
        ];
        for (program, table, args) in shapes {
            let args = argv(args);
            let Ok(Scan(at)) = scan(table, &args) else {
                panic!("{program} {args:?} is read");
            };
            let out = std::process::Command::new(program)
                .args(&args)
                .current_dir(dir.path())
                .output()
                .expect("the interpreter runs");
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                text.starts_with("RAN ") && text.trim_end().ends_with(&args[at]),
                "{program} {args:?}: the reading names {:?}, the interpreter ran: {text}{}",
                args[at],
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}
