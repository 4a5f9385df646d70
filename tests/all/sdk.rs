//! The guest SDKs' generated parts stay what their generators make of
//! `wit/hook.wit`: the C SDK commits wit-bindgen's C output (so a C author
//! needs only clang and wasi-libc), and this regenerates it and compares.

use std::path::Path;

/// wit-bindgen 0.61.1's C bindings for the `hook` world, as (file, text).
/// No type object file: the build embeds the world with `wasm-tools
/// component embed` instead.
fn generate_c_bindings() -> Vec<(String, Vec<u8>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut resolve = wit_bindgen_core::wit_parser::Resolve::default();
    let (package, _) = resolve.push_path(root.join("wit")).unwrap();
    let world = resolve.select_world(&[package], Some("hook")).unwrap();
    let mut files = wit_bindgen_core::Files::default();
    let opts = wit_bindgen_c::Opts {
        no_object_file: true,
        ..Default::default()
    };
    opts.build()
        .generate(&mut resolve, world, &mut files)
        .unwrap();
    files
        .iter()
        .map(|(name, bytes)| (name.to_string(), bytes.to_vec()))
        .collect()
}

#[test]
fn c_sdk_bindings_are_wit_bindgens_output_for_the_world() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("sdk/c");
    let bless = std::env::var_os("TOOLGATE_BLESS").is_some();
    let generated = generate_c_bindings();
    let names: Vec<&str> = generated.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["hook.c", "hook.h"]);
    for (name, bytes) in generated {
        let path = dir.join(&name);
        if bless {
            std::fs::write(&path, &bytes).unwrap();
        }
        let committed = std::fs::read(&path).unwrap_or_default();
        assert!(
            committed == bytes,
            "sdk/c/{name} is not wit-bindgen's output for wit/hook.wit: regenerate it with \
             `TOOLGATE_BLESS=1 cargo test c_sdk_bindings`"
        );
    }
}

/// The fields of the WIT's `request` record, in order.
fn wit_request_fields() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut resolve = wit_bindgen_core::wit_parser::Resolve::default();
    resolve.push_path(root.join("wit")).unwrap();
    let request = resolve
        .types
        .iter()
        .find(|(_, t)| t.name.as_deref() == Some("request"))
        .map(|(_, t)| t)
        .expect("the WIT has a `request` record");
    let wit_bindgen_core::wit_parser::TypeDefKind::Record(record) = &request.kind else {
        panic!("`request` is not a record")
    };
    record.fields.iter().map(|f| f.name.clone()).collect()
}

fn camel(field: &str, upper_first: bool, id: &str) -> String {
    let mut out = String::new();
    for (i, part) in field.split('-').enumerate() {
        let part = if part == "id" { id } else { part };
        if i == 0 && !upper_first {
            out.push_str(part);
        } else {
            let mut chars = part.chars();
            if let Some(c) = chars.next() {
                out.extend(c.to_uppercase());
                out.push_str(chars.as_str());
            }
        }
    }
    out
}

/// Each SDK spells a WIT field its language's way; `result` is carried as
/// the result's parts where an SDK flattens it.
#[test]
fn every_sdk_carries_every_field_of_the_wits_request() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("sdk");
    let read = |p: &str| std::fs::read_to_string(root.join(p)).unwrap();
    let (go, js, python, c) = (
        read("go/hook.go"),
        read("js/toolgate_hook.js"),
        read("python/toolgate_hook.py"),
        read("c/toolgate_hook.h"),
    );
    let fields = wit_request_fields();
    assert_eq!(fields.len(), 10, "{fields:?}");
    let mut missing = Vec::new();
    for field in &fields {
        let snake = field.replace('-', "_");
        let (go_name, js_name, py_name, c_name) = if field == "result" {
            (
                "Result".to_owned(),
                "resultOutput".to_owned(),
                "def result_output".to_owned(),
                "tg_str result_output".to_owned(),
            )
        } else {
            (
                camel(field, true, "ID"),
                format!("{}:", camel(field, false, "Id")),
                format!("self.{snake} ="),
                format!(" {snake};"),
            )
        };
        // Go: a field of `type Request struct`.
        let go_struct = go
            .split("type Request struct {")
            .nth(1)
            .and_then(|s| s.split('}').next());
        let go_first = go_name.split_whitespace().next().unwrap_or_default();
        if !go_struct.is_some_and(|s| {
            s.lines()
                .any(|l| l.split_whitespace().next() == Some(go_first))
        }) {
            missing.push(format!("go: {go_name}"));
        }
        let js_getter = format!("get {}()", js_name.trim_end_matches(':'));
        if !js.contains(&js_name) && !js.contains(&js_getter) {
            missing.push(format!("js: {js_name}"));
        }
        let py_name = if field == "input" {
            "self.input_text =".to_owned()
        } else if field == "config" {
            "def config".to_owned()
        } else {
            py_name
        };
        if !python.contains(&py_name) {
            missing.push(format!("python: {py_name}"));
        }
        let c_struct = c
            .split("typedef struct {")
            .find(|s| s.contains("} tg_request;"));
        if !c_struct.is_some_and(|s| {
            s.contains(&c_name)
                || s.contains(&format!("{snake},"))
                || s.contains(&format!(" {snake} "))
        }) {
            missing.push(format!("c: {c_name}"));
        }
    }
    // The Rust SDK re-exports the generated `Request`: every field by construction.
    assert!(read("rust/src/lib.rs").contains("Request"));
    assert!(
        missing.is_empty(),
        "SDKs lack fields of the WIT's request: {missing:?}"
    );
}

/// The usage example at the top of the C header, compiled as written.
#[test]
fn the_c_headers_own_example_compiles() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("sdk/c");
    let header = std::fs::read_to_string(dir.join("toolgate_hook.h")).unwrap();
    let example: String = header
        .lines()
        .skip_while(|l| !l.contains("#include \"toolgate_hook.h\""))
        .take_while(|l| !l.trim().is_empty() && l.trim() != "*")
        .map(|l| {
            l.trim_start()
                .trim_start_matches('*')
                .trim_start()
                .to_owned()
                + "\n"
        })
        .collect();
    assert!(example.contains("tg_decide"), "no example found: {example}");
    let mut cc = std::process::Command::new("cc")
        .args([
            "-std=c11",
            "-Wall",
            "-Werror",
            "-fsyntax-only",
            "-x",
            "c",
            "-I",
        ])
        .arg(&dir)
        .arg("-")
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("cc (the C compiler Rust links with) runs");
    use std::io::Write;
    cc.stdin
        .take()
        .unwrap()
        .write_all(example.as_bytes())
        .unwrap();
    let out = cc.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the example does not compile:\n{example}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
