//! Compiling a component: in memory, or to a cache artifact; and telling
//! a person, since a language runtime takes seconds to minutes.

use wasmtime::Engine;
use wasmtime::component::Component;

/// Who to tell about a compile, and what to call the component.
pub(crate) type Progress<'a> = Option<(fn(&str), &'a str)>;

/// Compiles `bytes`, telling `progress` (when given) before and after: a
/// language runtime takes seconds to minutes on a small machine, and a
/// person should not watch a silent terminal meanwhile.
pub(crate) fn compile_component(
    engine: &Engine,
    bytes: &[u8],
    progress: Progress<'_>,
) -> wasmtime::Result<Component> {
    let started = std::time::Instant::now();
    if let Some((say, label)) = progress {
        say(&compiling(label, bytes.len()));
    }
    let component = Component::new(engine, bytes)?;
    if let Some((say, label)) = progress {
        say(&format!(
            "compiled {label} in {:.1} s",
            started.elapsed().as_secs_f64()
        ));
    }
    Ok(component)
}

/// `bytes` compiled to a cache artifact, telling `progress` as
/// [`compile_component`] does.
pub(crate) fn precompile(
    engine: &Engine,
    bytes: &[u8],
    progress: Progress<'_>,
) -> wasmtime::Result<Vec<u8>> {
    let started = std::time::Instant::now();
    if let Some((say, label)) = progress {
        say(&compiling(label, bytes.len()));
    }
    let artifact = engine.precompile_component(bytes)?;
    if let Some((say, label)) = progress {
        say(&format!(
            "compiled {label} in {:.1} s",
            started.elapsed().as_secs_f64()
        ));
    }
    Ok(artifact)
}

/// What a person is told as a compile starts.
fn compiling(label: &str, len: usize) -> String {
    let size = if len >= 1 << 20 {
        format!("{:.1} MiB", len as f64 / (1 << 20) as f64)
    } else {
        format!("{} KiB", len.div_ceil(1024))
    };
    format!("compiling {label} ({size}; later loads come from the compile cache)…")
}
