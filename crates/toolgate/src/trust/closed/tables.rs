//! The interpreters a workspace command may name, and how each one's
//! options are read: one table per interpreter, kept apart from the
//! reading in `closed` because the tables are data checked against each
//! interpreter's own `--help` (see `tests`), and they grow as interpreters
//! do.

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
    pub(crate) fn table(self) -> &'static Table {
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

/// Why an interpreter's options are not understood.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ScanError {
    #[error("no script follows `--`")]
    NothingAfterDashes,
    #[error("option {option} {why}")]
    Refused {
        option: &'static str,
        why: &'static str,
    },
    #[error("option {0} needs a value (write {0}=VALUE)")]
    LongNeedsValue(String),
    #[error("option {0} is not one toolgate knows")]
    Unknown(String),
    #[error("option {0} is not one toolgate knows (write each option as its own word)")]
    Clustered(String),
    #[error("option {0} needs a value")]
    NeedsValue(String),
    #[error("option {option} {value} is not one toolgate knows (it reads {})", allowed.join(", "))]
    UnknownValue {
        option: String,
        value: String,
        allowed: &'static [&'static str],
    },
    #[error("option {option} (in {cluster}) is not one toolgate knows")]
    UnknownInCluster { option: String, cluster: String },
    #[error("no script is named")]
    NoScript,
}

/// Reads `args` (the interpreter's arguments) with `table`: where the
/// script is, or why the options are not understood.
pub(crate) fn scan(table: &Table, args: &[String]) -> Result<Scan, ScanError> {
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        if arg == "--" {
            return if i + 1 < args.len() {
                Ok(Scan(i + 1))
            } else {
                Err(ScanError::NothingAfterDashes)
            };
        }
        if let Some(why) = table.refusal(arg) {
            return Err(why);
        }
        if let Some(long) = arg.strip_prefix("--") {
            i = table.long_option(args, i, long)?;
            continue;
        }
        let plus = table.plus && arg.starts_with('+');
        if (arg.starts_with('-') || plus) && arg.len() > 1 {
            i = table.short_options(args, i)?;
            continue;
        }
        return Ok(Scan(i));
    }
    Err(ScanError::NoScript)
}

impl Table {
    /// Why `option` is refused, if the table refuses it by name.
    fn refusal(&self, option: &str) -> Option<ScanError> {
        self.refused
            .iter()
            .find(|(o, _)| *o == option)
            .map(|&(option, why)| ScanError::Refused { option, why })
    }

    /// Reads the long option `args[i]` (`--long`, maybe `=value`): where
    /// the next word to read is.
    fn long_option(&self, args: &[String], i: usize, long: &str) -> Result<usize, ScanError> {
        let (name, value) = match long.split_once('=') {
            Some((n, v)) => (format!("--{n}"), Some(v)),
            None => (args[i].clone(), None),
        };
        if let Some(why) = self.refusal(&name) {
            return Err(why);
        }
        if self.long_flags.contains(&name.as_str()) && value.is_none() {
            return Ok(i + 1);
        }
        if self.long_valued.contains(&name.as_str()) {
            return match value {
                Some(_) => Ok(i + 1),
                None if self.long_split && i + 1 < args.len() => Ok(i + 2),
                None => Err(ScanError::LongNeedsValue(name)),
            };
        }
        Err(ScanError::Unknown(name))
    }

    /// Reads the single-letter options in `args[i]` (`-uW ignore`,
    /// `+o name`), each flag, or one that takes a value and ends the
    /// cluster: where the next word to read is.
    fn short_options(&self, args: &[String], i: usize) -> Result<usize, ScanError> {
        let arg = &args[i];
        let letters: Vec<char> = arg[1..].chars().collect();
        if let Some(why) = letters
            .first()
            .and_then(|c| self.refusal(&format!("{}{c}", &arg[..1])))
        {
            return Err(why);
        }
        if !self.cluster && letters.len() > 1 && !self.valued.contains(letters[0]) {
            return Err(ScanError::Clustered(arg.clone()));
        }
        let mut next = i + 1;
        for (j, &c) in letters.iter().enumerate() {
            let one = format!("{}{c}", &arg[..1]);
            if let Some(why) = self.refusal(&one) {
                return Err(why);
            }
            if self.flags.contains(c) {
                continue;
            }
            if !self.valued.contains(c) {
                return Err(ScanError::UnknownInCluster {
                    option: one,
                    cluster: arg.clone(),
                });
            }
            let rest: String = letters[j + 1..].iter().collect();
            let value = if !rest.is_empty() {
                rest
            } else if next < args.len() {
                next += 1;
                args[next - 1].clone()
            } else {
                return Err(ScanError::NeedsValue(one));
            };
            if let Some((_, allowed)) = self.values.iter().find(|(v, _)| *v == c)
                && !allowed.contains(&value.as_str())
            {
                return Err(ScanError::UnknownValue {
                    option: one,
                    value,
                    allowed,
                });
            }
            break;
        }
        Ok(next)
    }
}
