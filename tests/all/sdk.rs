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
