//! Hook components built from WebAssembly text at load time.
//!
//! # Why
//!
//! A small guard needs no toolchain: a `"wasm": "guard.wat"` hook is a core
//! module in WebAssembly text that implements the canonical ABI of `decide`
//! by hand, and toolgate embeds its own WIT and wraps it as a component when
//! it loads. The same path builds the reference guest that benchmarks and
//! self-checks use.
//!
//! A syntax error is reported by line and column only: the text may be a
//! file someone symlinked to a secret, and the error may reach the model.

/// Why WebAssembly text did not become a hook component.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildComponentError {
    /// The file is not UTF-8 text.
    #[error("the .wat file is not UTF-8 text (invalid byte at offset {offset})")]
    NotUtf8 {
        /// Where the first invalid byte is.
        offset: usize,
    },
    /// The text does not parse or encode as WebAssembly (only where: the
    /// message could quote the file).
    #[error(
        "cannot build a component from the WAT: not valid WebAssembly text at line {line}, \
         column {column} (`wasm-tools parse` on the file gives the full message)"
    )]
    Syntax {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
    },
    /// toolgate's own WIT could not be embedded (a bug in toolgate).
    #[error("cannot build a component from the WAT: embedding toolgate's WIT")]
    Embed(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The module is not a component once wrapped: an export or import
    /// does not match the hook world.
    #[error("cannot build a component from the WAT")]
    Encode(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// Builds a hook component from the bytes of a `.wat` file.
pub(crate) fn component_from_wat_bytes(bytes: &[u8]) -> Result<Vec<u8>, BuildComponentError> {
    let text = std::str::from_utf8(bytes).map_err(|e| BuildComponentError::NotUtf8 {
        offset: e.valid_up_to(),
    })?;
    component_from_wat(text)
}

/// Builds a hook component from a core module in WebAssembly text,
/// embedding toolgate's WIT.
pub fn component_from_wat(wat: &str) -> Result<Vec<u8>, BuildComponentError> {
    let mut module = wat_to_module(wat)?;
    let mut resolve = wit_parser::Resolve::default();
    let pkg = resolve
        .push_str("hook.wit", include_str!("../../../wit/hook.wit"))
        .map_err(embed)?;
    let world = resolve.select_world(&[pkg], Some("hook")).map_err(embed)?;
    wit_component::embed_component_metadata(
        &mut module,
        &resolve,
        world,
        wit_component::StringEncoding::UTF8,
    )
    .map_err(embed)?;
    wit_component::ComponentEncoder::default()
        .module(&module)
        .map_err(encode)?
        .validate(true)
        .encode()
        .map_err(encode)
}

/// For wit-parser's and wit-component's errors (anyhow's, which the library
/// does not name).
fn embed(e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> BuildComponentError {
    BuildComponentError::Embed(e.into())
}

fn encode(e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> BuildComponentError {
    BuildComponentError::Encode(e.into())
}

pub(crate) fn wat_to_module(text: &str) -> Result<Vec<u8>, BuildComponentError> {
    let at = |e: wast::Error| {
        let (line, col) = e.span().linecol_in(text);
        BuildComponentError::Syntax {
            line: line + 1,
            column: col + 1,
        }
    };
    let buf = wast::parser::ParseBuffer::new(text).map_err(at)?;
    let mut wat = wast::parser::parse::<wast::Wat<'_>>(&buf).map_err(at)?;
    wat.encode().map_err(at)
}

const REFERENCE_WAT: &str = r#"(module
  (memory (export "memory") 1)
  (global $bump (mut i32) (i32.const 1024))
  (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32)
    (local $at i32)
    (local.set $at (global.get $bump))
    (global.set $bump (i32.and (i32.add (i32.add (local.get $at) (local.get 3)) (i32.const 7)) (i32.const -8)))
    (local.get $at))
  (func (export "decide") (param i32) (result i32) (i32.const 512)))"#;

/// The smallest possible hook component: it answers `allow` without reading
/// its request. Built in-process from WAT with toolgate's WIT embedded, so
/// benchmarks and self-checks have a guest with no toolchain at all; what it
/// costs per call is the floor of what any wasm hook costs.
pub fn reference_guest() -> Vec<u8> {
    // The input is a constant of this crate: a failure here is a bug in
    // toolgate, caught by the test suite, not something a user controls.
    component_from_wat(REFERENCE_WAT)
        .unwrap_or_else(|e| panic!("toolgate's reference guest does not build: {e}"))
}
