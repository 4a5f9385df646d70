//! `toolgate push`: publish a component to an OCI registry, for hooks.json's
//! `"wasm": "oci://…"`.
//!
//! The artifact is the wasm OCI layout wkg and wasmCloud use (config
//! `application/vnd.wasm.config.v0+json`, one `application/wasm` layer),
//! plus the component's minisign signature (`<component>.minisig`, when it
//! is there) as a second layer, so a machine that pulls it can verify it
//! offline. The config carries no timestamp: pushing the same component
//! again gives the same digest. Credentials come from the environment
//! (`TOOLGATE_REGISTRY_USER`, `TOOLGATE_REGISTRY_PASSWORD`), never a flag
//! (a flag is visible to every user in `ps`); without them the push is
//! anonymous.

use anyhow::Context;
use std::path::PathBuf;
use std::process::ExitCode;
use toolgate::wasm::oci::{OciOptions, OciRef, push};

/// Publish a component to an OCI registry.
///
/// Checks the file is a WebAssembly component, pushes it (and
/// `<component>.minisig` as its signature layer, when present), and prints
/// the manifest digest and the pinned ref to put in hooks.json. Plain HTTP
/// is used only for a registry named by a loopback address (127.0.0.1:5000).
#[derive(clap::Args)]
#[command(after_help = "Examples:\n  \
    toolgate push guard.wasm oci://registry.example.com/team/guard:v1\n  \
    toolgate push guard.wasm oci://127.0.0.1:5000/guard:v1 --json\n\n\
    Credentials: TOOLGATE_REGISTRY_USER and TOOLGATE_REGISTRY_PASSWORD\n\
    (anonymous when unset).")]
pub(crate) struct Args {
    /// The component (.wasm).
    component: PathBuf,
    /// Where: oci://host[:port]/repository:tag.
    reference: String,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let reference = OciRef::parse(&args.reference)
        .with_context(|| format!("{:?} is not an oci:// reference", args.reference))?;
    let pushed = push(
        &args.component,
        &reference,
        super::env::registry_credentials(),
        &OciOptions::default(),
    )?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&pushed)?);
    } else {
        outln!("pushed {} to {}", args.component.display(), reference);
        outln!("digest: {}", pushed.digest);
        outln!(
            "sizes: manifest {} B, config {} B, {}",
            pushed.manifest_bytes,
            pushed.config_bytes,
            pushed
                .layers
                .iter()
                .map(|(t, n)| format!("{t} {n} B"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        outln!("in hooks.json: \"wasm\": \"{}\"", pushed.pinned);
    }
    Ok(ExitCode::SUCCESS)
}
