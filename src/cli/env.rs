//! What the environment says, read in one place: the library reads no
//! environment variable, so each is turned into an option here. What the
//! lean client reads too (the directories it names to a server, the
//! socket, the workspace, stdin) is `toolgate_hook::env`, re-exported
//! here; what only the full binary reads (the compile cache, the managed
//! layer, the loader) is below.

use std::path::{Path, PathBuf};
use toolgate::wasm::{Allocator, WasmOptions};
use toolgate::{Config, ConfigError};
pub(crate) use toolgate_hook::env::{
    MAX_STDIN, decision_log, dir, global_dir, read_stdin, search_path, socket_path, trust_dir,
    workspace,
};

/// The managed policy layer's directory as this build has it:
/// `/etc/toolgate`, unless the build set `TOOLGATE_MANAGED_DIR`.
pub(crate) const BUILT_MANAGED_DIR: &str = match option_env!("TOOLGATE_MANAGED_DIR") {
    Some(dir) => dir,
    None => "/etc/toolgate",
};

/// The managed policy layer's directory: [`BUILT_MANAGED_DIR`], or
/// `$TOOLGATE_MANAGED_DIR` when this process runs as root (real and
/// effective uid 0). Anyone else setting it is warned and ignored: the
/// layer binds every user, so no user's environment may move or remove it.
pub(crate) fn managed_dir() -> PathBuf {
    if let Some(dir) = dir("TOOLGATE_MANAGED_DIR") {
        if nix::unistd::getuid().is_root() && nix::unistd::geteuid().is_root() {
            return dir;
        }
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            format!(
                "toolgate: warning: TOOLGATE_MANAGED_DIR is ignored: only root may move the \
                 managed policy layer; using {BUILT_MANAGED_DIR}\n"
            )
            .as_bytes(),
        );
    }
    PathBuf::from(BUILT_MANAGED_DIR)
}

/// The compile cache: `$TOOLGATE_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/toolgate/wasm`, else `~/.cache/toolgate/wasm`.
pub(crate) fn cache_dir() -> Option<PathBuf> {
    dir("TOOLGATE_CACHE_DIR")
        .or_else(|| dir("XDG_CACHE_HOME").map(|d| d.join("toolgate").join("wasm")))
        .or_else(|| dir("HOME").map(|h| h.join(".cache").join("toolgate").join("wasm")))
}

/// How components are loaded. A one-shot command (one call per
/// process) uses on-demand allocation; `TOOLGATE_WASM_ALLOCATOR`
/// (`pooling` or `on-demand`) overrides either choice.
pub(crate) fn wasm(one_shot: bool) -> WasmOptions {
    let allocator = match std::env::var("TOOLGATE_WASM_ALLOCATOR").ok().as_deref() {
        Some("on-demand") => Allocator::OnDemand,
        Some("pooling") => Allocator::Pooling,
        _ if one_shot => Allocator::OneShot,
        _ => Allocator::Pooling,
    };
    let mut options = WasmOptions::new().allocator(allocator);
    // A first compile takes seconds to minutes: say so on a terminal,
    // stay quiet when stderr is a pipe (an agent reading it).
    if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        options = options.progress(|line| eprintln!("toolgate: {line}"));
    }
    #[cfg(debug_assertions)]
    if std::env::var_os(PAUSE_AFTER_READ).is_some() {
        options = options.after_read(pause_after_read);
    }
    match cache_dir() {
        Some(dir) => options.cache_dir(dir),
        None => options,
    }
}

/// Fault injection for the tests that swap a component while it loads;
/// compiled out of release builds. Names a directory: toolgate creates
/// `reached` in it once a component's bytes are read, then waits (at
/// most a minute) for `go` to appear before recording their identity.
#[cfg(debug_assertions)]
pub(crate) const PAUSE_AFTER_READ: &str = "TOOLGATE_DEBUG_PAUSE_AFTER_READ";

#[cfg(debug_assertions)]
fn pause_after_read(_component: &Path) {
    let Some(dir) = dir(PAUSE_AFTER_READ) else {
        return;
    };
    let _ = std::fs::write(dir.join("reached"), b"");
    let started = std::time::Instant::now();
    while !dir.join("go").exists() && started.elapsed() < std::time::Duration::from_secs(60) {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// `toolgate push`'s registry credentials: `$TOOLGATE_REGISTRY_USER` and
/// `$TOOLGATE_REGISTRY_PASSWORD`, both set (else anonymous).
pub(crate) fn registry_credentials() -> Option<(String, String)> {
    let user = std::env::var("TOOLGATE_REGISTRY_USER")
        .ok()
        .filter(|v| !v.is_empty())?;
    let password = std::env::var("TOOLGATE_REGISTRY_PASSWORD").ok()?;
    Some((user, password))
}

/// Where a one-shot run keeps hooks' session state: files in
/// [`sessions_dir`](toolgate_hook::env::sessions_dir).
pub(crate) fn session_store() -> std::sync::Arc<dyn toolgate::sessions::SessionStore> {
    match toolgate_hook::env::sessions_dir() {
        Some(dir) => std::sync::Arc::new(toolgate::sessions::FileStore::new(dir)),
        None => std::sync::Arc::new(toolgate::sessions::NoStore(
            "neither XDG_STATE_HOME nor HOME is set".into(),
        )),
    }
}

/// The trust store at [`trust_dir`].
pub(crate) fn trust_store() -> Option<toolgate::trust::TrustStore> {
    trust_dir().map(toolgate::trust::TrustStore::new)
}

/// A loader for `workspace` (and the global config), as the
/// environment says.
pub(crate) fn loader(workspace: &Path, one_shot: bool) -> toolgate::config::Loader {
    let mut loader = bare_loader(one_shot).workspace(workspace);
    if let Some(global) = global_dir() {
        loader = loader.global_dir(global);
    }
    loader
}

/// A loader as the environment says, with no config chosen yet.
pub(crate) fn bare_loader(one_shot: bool) -> toolgate::config::Loader {
    let mut loader = Config::loader()
        .managed_dir(managed_dir())
        .wasm(wasm(one_shot));
    if let Some(store) = trust_store() {
        loader = loader.trust(store);
    }
    if let Some(path) = search_path() {
        loader = loader.search_path(path);
    }
    // The library probes the kernel itself, only when a hook needs it.
    if let Some(why) = no_landlock_fault() {
        loader = loader.without_landlock(why);
    }
    loader
}

/// Debug builds take `TOOLGATE_DEBUG_FAULT=no-landlock` as "this kernel
/// cannot confine" (the tests of that path run on a kernel that can).
fn no_landlock_fault() -> Option<String> {
    #[cfg(debug_assertions)]
    if std::env::var("TOOLGATE_DEBUG_FAULT").is_ok_and(|v| v == "no-landlock") {
        return Some("Landlock switched off by TOOLGATE_DEBUG_FAULT=no-landlock".into());
    }
    None
}

/// Whether this kernel can confine hooks (see [`no_landlock_fault`]).
pub(crate) fn confinement() -> anyhow::Result<()> {
    match no_landlock_fault() {
        Some(why) => Err(anyhow::Error::msg(why)),
        None => Ok(toolgate::trust::confinement_available()?),
    }
}

/// The global config and `workspace`'s, loaded as the environment says.
pub(crate) fn load(workspace: &Path, one_shot: bool) -> Result<Config, ConfigError> {
    loader(workspace, one_shot).load()
}

/// What a one-shot process evaluating `request` needs: the hooks that
/// apply to it.
pub(crate) fn load_for(
    workspace: &Path,
    request: &toolgate::Request,
) -> Result<Config, ConfigError> {
    // On a tool call's path: a tag-only `oci://` ref runs the digest it
    // last resolved to (`toolgate hooks` and `toolgate serve` follow tags).
    let mut oci = toolgate::wasm::oci::OciOptions::default();
    oci.follow_tags = false;
    loader(workspace, true)
        .wasm(wasm(true).oci(oci))
        .only_for(request.event, request.tool.clone())
        .load()
}
