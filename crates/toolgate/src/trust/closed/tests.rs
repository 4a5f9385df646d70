//! The option tables checked against the interpreters' own `--help`, and
//! the readings of real argv shapes.

use super::tables::*;

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
