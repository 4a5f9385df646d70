//! `toolgate new --lang <rust|go|js|python|c|subprocess> <dir>`: a hook
//! project that builds and passes its own tests with no edits.
//!
//! `subprocess` is the one template that is not a component: a script with
//! a `#!` line speaking wire v1 on stdin and stdout, for an author who wants
//! any language, the filesystem or the network, and accepts what that costs
//! (a process per call, and in a workspace the user's `toolgate trust`
//! before it runs). It shares the test cases and `test.sh` with the others.
//!
//! Why the SDK is copied into the project (as `toolgate/`) rather than
//! referenced: a scaffold must build wherever it is created, with no checkout
//! of this repository beside it and no package published anywhere (Go and
//! Rust SDKs are not on a registry). The files are embedded in the binary at
//! build time from `sdk/`, so a project gets exactly the SDK, WIT world and
//! build functions this toolgate was built with; the bundled examples build
//! through the very same `guest-build.sh`, so the two cannot drift apart.

use anyhow::bail;
use std::path::PathBuf;
use std::process::ExitCode;

/// Create a new hook project: source, SDK, build script, README and sample tests.
#[derive(clap::Args)]
#[command(after_help = "Example:\n  \
    toolgate new --lang go no-sudo\n  \
    # build out/no-sudo.wasm, then run tests/*.json through `toolgate test`:\n  \
    cd no-sudo && ./test.sh")]
pub(crate) struct Args {
    /// The language the hook is written in (`subprocess`: a plain wire v1
    /// script with a `#!` line, not a component).
    #[arg(long, value_enum)]
    lang: Lang,
    /// The project folder to create; its name (lowercase letters, digits and
    /// `-`) names the hook, the component and the package.
    dir: PathBuf,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Lang {
    Rust,
    Go,
    Js,
    Python,
    C,
    // A script run as a subprocess (wire v1), not a component.
    Subprocess,
}

/// (path in the project, contents, executable)
type File = (&'static str, &'static str, bool);

macro_rules! sdk {
    ($path:literal) => {
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/sdk/", $path))
    };
}

const COMMON: &[File] = &[
    ("build.sh", sdk!("templates/common/build.sh"), true),
    ("test.sh", sdk!("templates/common/test.sh"), true),
    (".gitignore", sdk!("templates/common/gitignore"), false),
    ("README.md", sdk!("templates/common/README.md"), false),
    (
        ".toolgate/hooks.json",
        sdk!("templates/common/hooks.json"),
        false,
    ),
    (
        "tests/allow-ls.json",
        sdk!("templates/common/tests/allow-ls.json"),
        false,
    ),
    (
        "tests/deny-sudo.json",
        sdk!("templates/common/tests/deny-sudo.json"),
        false,
    ),
    ("toolgate/guest-build.sh", sdk!("guest-build.sh"), false),
    ("toolgate/wit/hook.wit", sdk!("wit/hook.wit"), false),
];

impl Lang {
    fn name(self) -> &'static str {
        match self {
            Lang::Rust => "Rust",
            Lang::Go => "Go",
            Lang::Js => "JavaScript",
            Lang::Python => "Python",
            Lang::C => "C",
            Lang::Subprocess => "subprocess",
        }
    }

    /// The build function in guest-build.sh is `build_<this>`: the same
    /// word as `--lang`.
    fn build_fn(self) -> String {
        use clap::ValueEnum;
        self.to_possible_value()
            .map(|v| v.get_name().to_owned())
            .unwrap_or_default()
    }

    fn files(self) -> &'static [File] {
        match self {
            Lang::Rust => &[
                ("Cargo.toml", sdk!("templates/rust/Cargo.toml"), false),
                // Reproducible builds: the versions the examples are built and tested with.
                ("Cargo.lock", sdk!("templates/rust/Cargo.lock"), false),
                ("src/lib.rs", sdk!("templates/rust/src/lib.rs"), false),
                ("toolgate/rust/Cargo.toml", sdk!("rust/Cargo.toml"), false),
                ("toolgate/rust/src/lib.rs", sdk!("rust/src/lib.rs"), false),
            ],
            Lang::Go => &[
                ("src/go.mod", sdk!("templates/go/src/go.mod"), false),
                ("src/main.go", sdk!("templates/go/src/main.go"), false),
                ("toolgate/go/go.mod", sdk!("go/go.mod"), false),
                ("toolgate/go/hook.go", sdk!("go/hook.go"), false),
                ("toolgate/go/abi.go", sdk!("go/abi.go"), false),
                (
                    "toolgate/go/wasi_snapshot_preview1.stub.wat",
                    sdk!("go/wasi_snapshot_preview1.stub.wat"),
                    false,
                ),
            ],
            Lang::Js => &[
                ("src/app.js", sdk!("templates/js/src/app.js"), false),
                (
                    "toolgate/js/toolgate_hook.js",
                    sdk!("js/toolgate_hook.js"),
                    false,
                ),
            ],
            Lang::Python => &[
                ("src/app.py", sdk!("templates/python/src/app.py"), false),
                (
                    "toolgate/python/toolgate_hook.py",
                    sdk!("python/toolgate_hook.py"),
                    false,
                ),
            ],
            Lang::C => &[
                ("src/policy.c", sdk!("templates/c/src/policy.c"), false),
                (
                    "toolgate/c/toolgate_hook.h",
                    sdk!("c/toolgate_hook.h"),
                    false,
                ),
                ("toolgate/c/hook.h", sdk!("c/hook.h"), false),
                ("toolgate/c/hook.c", sdk!("c/hook.c"), false),
            ],
            // Its own build.sh, README and hooks.json take the place of the
            // component's (see `common`).
            Lang::Subprocess => &[
                ("build.sh", sdk!("templates/subprocess/build.sh"), true),
                ("README.md", sdk!("templates/subprocess/README.md"), false),
                (
                    ".toolgate/hooks.json",
                    sdk!("templates/subprocess/hooks.json"),
                    false,
                ),
                (
                    "hooks/{{name}}.py",
                    sdk!("templates/subprocess/hooks/hook.py"),
                    true,
                ),
            ],
        }
    }

    /// The files of [`COMMON`] this language keeps: not one it writes its
    /// own of, and no component SDK for a script.
    fn common(self) -> impl Iterator<Item = &'static File> {
        let script = matches!(self, Lang::Subprocess);
        COMMON.iter().filter(move |(path, ..)| {
            let own = self.files().iter().any(|(own, ..)| own == path);
            let sdk = script && path.starts_with("toolgate/");
            !own && !sdk
        })
    }

    /// The file a user edits, for the README.
    fn source(self) -> &'static str {
        match self {
            Lang::Rust => "`src/lib.rs`",
            Lang::Go => "`src/main.go`",
            Lang::Js => "`src/app.js`",
            Lang::Python => "`src/app.py`",
            Lang::C => "`src/policy.c`",
            Lang::Subprocess => "`hooks/<name>.py`",
        }
    }
}

/// A hook name must be a crate name, a Go module path element, a file name
/// and a hooks.json name all at once.
fn valid_name(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.ends_with('-')
}

pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let name = args
        .dir
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_owned();
    if !valid_name(&name) {
        bail!(
            "{}: the folder's name names the hook, so it must be lowercase letters, digits \
             and `-`, starting with a letter (e.g. `no-sudo`)",
            args.dir.display()
        );
    }
    if args.dir.exists()
        && std::fs::read_dir(&args.dir)
            .map(|mut d| d.next().is_some())
            .unwrap_or(true)
    {
        bail!(
            "{} exists and is not empty; choose a new folder",
            args.dir.display()
        );
    }
    let lang = args.lang;
    let fill = |text: &str| {
        text.replace("{{name}}", &name)
            .replace("{{lang}}", &lang.build_fn())
            .replace("{{language}}", lang.name())
            .replace("{{source}}", lang.source())
    };
    for &(path, text, executable) in lang.common().chain(lang.files()) {
        super::write_file(&args.dir.join(fill(path)), &fill(text), executable)?;
    }
    let dir = args.dir.display();
    match lang {
        Lang::Subprocess => eprintln!(
            "created {dir} (subprocess hook `{name}`: hooks/{name}.py, wire v1). Next:\n  \
             cd {dir} && ./test.sh    # run the fixtures in tests/ through toolgate test\n\
             As a workspace hook it runs only once you trust it (toolgate trust), and again \
             after each edit (README.md: or iterate in your global config, which needs no trust)."
        ),
        _ => eprintln!(
            "created {dir} ({} hook `{name}`). Next:\n  cd {dir} && ./test.sh    \
             # build, then run the fixtures in tests/ through toolgate test",
            lang.name(),
        ),
    }
    Ok(ExitCode::SUCCESS)
}
