//! The network half of `oci`: one pull, bounded, verified, stored.
//!
//! Config loading is synchronous and may run inside a tokio runtime (`toolgate
//! serve` reloads on its own), where blocking on another runtime panics; so a
//! pull runs on a thread of its own with a current-thread runtime, bounded by
//! the total timeout. The manifest is fetched with reqwest directly (with
//! oci-client's token when the registry asks for one) because the client
//! reads a manifest whole and unbounded; the layers come through oci-client's
//! blob stream, read no further than their declared size.

use super::{
    MANIFEST_MEDIA_TYPE, MAX_MANIFEST_BYTES, MAX_SIGNATURE_BYTES, OciError, OciOptions, OciRef,
    SIGNATURE_MEDIA_TYPE, WASM_MEDIA_TYPE,
};
use futures_util::StreamExt;
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference, RegistryOperation};
use sha2::Digest;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The manifest fields toolgate reads (the rest is ignored).
#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Manifest {
    schema_version: u32,
    media_type: Option<String>,
    config: Descriptor,
    layers: Vec<Descriptor>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Descriptor {
    media_type: String,
    digest: String,
    size: u64,
}

/// Builds the client for `reference`: HTTPS, except plain HTTP to a
/// loopback registry; the ring provider (see Cargo.toml).
pub(crate) fn client(reference: &OciRef, options: &OciOptions) -> Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    Client::new(ClientConfig {
        protocol: if reference.is_loopback() {
            ClientProtocol::HttpsExcept(vec![reference.registry.clone()])
        } else {
            ClientProtocol::Https
        },
        connect_timeout: Some(options.connect_timeout),
        read_timeout: Some(options.total_timeout),
        platform_resolver: None,
        ..ClientConfig::default()
    })
}

/// The client's own form of `reference`.
pub(crate) fn client_ref(reference: &OciRef) -> Reference {
    match (&reference.tag, &reference.digest) {
        (Some(tag), Some(hex)) => Reference::with_tag_and_digest(
            reference.registry.clone(),
            reference.repository.clone(),
            tag.clone(),
            format!("sha256:{hex}"),
        ),
        (None, Some(hex)) => Reference::with_digest(
            reference.registry.clone(),
            reference.repository.clone(),
            format!("sha256:{hex}"),
        ),
        (tag, None) => Reference::with_tag(
            reference.registry.clone(),
            reference.repository.clone(),
            tag.clone().unwrap_or_default(),
        ),
    }
}

/// Pulls `reference` (pinned to `hex` when given) into `blobs`; returns the
/// manifest digest's hex and the stored component.
pub(super) fn pull(
    reference: &OciRef,
    blobs: &Path,
    options: &OciOptions,
    hex: Option<&str>,
) -> Result<(String, PathBuf), OciError> {
    pull_with(reference, blobs, options, hex, |_| Ok(None))
}

/// [`pull`], asking `cached` first once the manifest's digest is known (a
/// tag whose digest is already in the cache reads no layer).
pub(super) fn pull_with(
    reference: &OciRef,
    blobs: &Path,
    options: &OciOptions,
    hex: Option<&str>,
    cached: impl FnOnce(&str) -> Result<Option<PathBuf>, OciError>,
) -> Result<(String, PathBuf), OciError> {
    let total = options.total_timeout;
    let (reference_, options_, hex_) = (reference.clone(), options.clone(), hex.map(str::to_owned));
    // The manifest on a thread of its own (see the module docs).
    let fetched = on_thread(total, move || async move {
        fetch_manifest(&reference_, &options_, hex_.as_deref()).await
    });
    let (manifest_hex, manifest, raw) = match fetched {
        Ok(Ok(got)) => got?,
        Ok(Err(reason)) | Err(reason) => return Err(unreachable(reference, reason)),
    };
    if let Some(path) = cached(&manifest_hex)? {
        return Ok((manifest_hex, path));
    }
    let (reference_, options_) = (reference.clone(), options.clone());
    let layers = on_thread(total, move || async move {
        fetch_layers(&reference_, &options_, &manifest).await
    });
    let (component, signature) = match layers {
        Ok(Ok(got)) => got?,
        Ok(Err(reason)) | Err(reason) => return Err(unreachable(reference, reason)),
    };
    let path = store(
        blobs,
        &manifest_hex,
        (&raw, &component, signature.as_deref()),
    )
    .map_err(|source| OciError::Store {
        reference: reference.to_string(),
        source,
    })?;
    Ok((manifest_hex, path))
}

fn unreachable(reference: &OciRef, reason: String) -> OciError {
    OciError::Unreachable {
        registry: reference.registry.clone(),
        reference: reference.to_string(),
        reason,
    }
}

fn refused(reference: &OciRef, reason: impl Into<String>) -> OciError {
    OciError::Refused {
        registry: reference.registry.clone(),
        reference: reference.to_string(),
        reason: reason.into(),
    }
}

/// Runs `work` on a new thread's current-thread runtime, at most `total`.
pub(crate) fn on_thread<F, Fut, T>(total: std::time::Duration, work: F) -> Result<T, String>
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = T>,
    T: Send + 'static,
{
    let handle = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start a runtime: {e}"))?;
        runtime
            .block_on(async { tokio::time::timeout(total, work()).await })
            .map_err(|_| format!("no answer within {} s", total.as_secs()))
    });
    handle
        .join()
        .map_err(|_| "the pull's thread panicked".to_owned())?
}

/// An error from the network, as a reason: what failed, with its causes.
fn network(e: &(dyn std::error::Error + 'static)) -> String {
    crate::text::error_chain(e)
}

/// GETs the manifest, reading at most [`MAX_MANIFEST_BYTES`], and checks its
/// digest and layout.
async fn fetch_manifest(
    reference: &OciRef,
    options: &OciOptions,
    hex: Option<&str>,
) -> Result<Result<(String, Manifest, Vec<u8>), OciError>, String> {
    let client = client(reference, options);
    let image = client_ref(reference);
    // Anonymous: a registry that wants a token hands one out here.
    let token = client
        .auth(&image, &RegistryAuth::Anonymous, RegistryOperation::Pull)
        .await
        .map_err(|e| network(&e))?;
    let http = reqwest::Client::builder()
        .connect_timeout(options.connect_timeout)
        .timeout(options.total_timeout)
        .build()
        .map_err(|e| network(&e))?;
    let scheme = if reference.is_loopback() {
        "http"
    } else {
        "https"
    };
    let what = match hex {
        Some(hex) => format!("sha256:{hex}"),
        None => reference.tag.clone().unwrap_or_default(),
    };
    let url = format!(
        "{scheme}://{}/v2/{}/manifests/{what}",
        reference.registry, reference.repository
    );
    let mut request = http
        .get(&url)
        .header(reqwest::header::ACCEPT, MANIFEST_MEDIA_TYPE);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let mut response = request.send().await.map_err(|e| network(&e))?;
    let status = response.status();
    if !status.is_success() {
        // Pulls are anonymous on purpose (see the README): a workspace names
        // the registry, so credentials given to toolgate would go wherever a
        // repository pointed them.
        let anonymous = if matches!(status.as_u16(), 401 | 403) {
            " (toolgate pulls anonymously: the registry must allow anonymous pulls of this \
             repository)"
        } else {
            ""
        };
        return Ok(Err(refused(
            reference,
            format!("the registry answered {status} for the manifest{anonymous}"),
        )));
    }
    if response
        .content_length()
        .is_some_and(|n| n > MAX_MANIFEST_BYTES)
    {
        return Ok(Err(refused(
            reference,
            format!(
                "the manifest is larger than {} KiB (not read)",
                MAX_MANIFEST_BYTES >> 10
            ),
        )));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| network(&e))? {
        if (body.len() + chunk.len()) as u64 > MAX_MANIFEST_BYTES {
            return Ok(Err(refused(
                reference,
                format!(
                    "the manifest is larger than {} KiB (reading stopped there)",
                    MAX_MANIFEST_BYTES >> 10
                ),
            )));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(check_manifest(reference, hex, &body).map(|(hex, manifest)| (hex, manifest, body)))
}

/// The manifest's digest against the ref, then its layout and bounds.
fn check_manifest(
    reference: &OciRef,
    hex: Option<&str>,
    body: &[u8],
) -> Result<(String, Manifest), OciError> {
    let actual = sha256_hex(body);
    if let Some(expected) = hex
        && expected != actual
    {
        return Err(refused(
            reference,
            format!(
                "digest mismatch: the manifest served is sha256:{actual}, not the pinned sha256:{expected}"
            ),
        ));
    }
    let manifest: Manifest = serde_json::from_slice(body).map_err(|e| {
        refused(
            reference,
            format!(
                "malformed manifest (not an OCI image manifest: {} at line {} column {})",
                match e.classify() {
                    serde_json::error::Category::Data => "a field is missing or of the wrong type",
                    _ => "not JSON",
                },
                e.line(),
                e.column()
            ),
        )
    })?;
    let wrong = |why: String| Err(refused(reference, format!("malformed manifest: {why}")));
    if manifest.schema_version != 2 {
        return wrong(format!(
            "schemaVersion {}, expected 2",
            manifest.schema_version
        ));
    }
    if let Some(media_type) = &manifest.media_type
        && media_type != MANIFEST_MEDIA_TYPE
    {
        return wrong(format!(
            "media type {media_type:?}, expected {MANIFEST_MEDIA_TYPE} (an index or a \
             Docker image is not a component)"
        ));
    }
    if manifest.config.media_type != super::CONFIG_MEDIA_TYPE {
        return wrong(format!(
            "config media type {:?}, expected {} (the wasm OCI artifact layout)",
            manifest.config.media_type,
            super::CONFIG_MEDIA_TYPE
        ));
    }
    let wasm = manifest
        .layers
        .iter()
        .filter(|l| l.media_type == WASM_MEDIA_TYPE)
        .count();
    let signatures = manifest
        .layers
        .iter()
        .filter(|l| l.media_type == SIGNATURE_MEDIA_TYPE)
        .count();
    if wasm != 1 || signatures > 1 || wasm + signatures != manifest.layers.len() {
        return wrong(format!(
            "expected one {WASM_MEDIA_TYPE} layer and at most one {SIGNATURE_MEDIA_TYPE} \
             layer, found {} layer(s)",
            manifest.layers.len()
        ));
    }
    for layer in &manifest.layers {
        let limit = if layer.media_type == WASM_MEDIA_TYPE {
            crate::safe_fs::MAX_COMPONENT_BYTES
        } else {
            MAX_SIGNATURE_BYTES
        };
        if layer.size > limit {
            return wrong(format!(
                "the {} layer declares {} bytes, more than the {} MiB toolgate reads (not pulled)",
                layer.media_type,
                layer.size,
                limit as f64 / f64::from(1 << 20)
            ));
        }
        if digest_hex(&layer.digest).is_none() {
            return wrong(format!(
                "the {} layer's digest is not sha256:<64 hex digits>",
                layer.media_type
            ));
        }
    }
    Ok((actual, manifest))
}

fn digest_hex(digest: &str) -> Option<&str> {
    digest
        .strip_prefix("sha256:")
        .filter(|h| h.len() == 64 && h.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
}

pub(crate) fn hex_of(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The component layer and the signature layer (when there is one), each
/// read no further than its declared size and checked against its digest.
async fn fetch_layers(
    reference: &OciRef,
    options: &OciOptions,
    manifest: &Manifest,
) -> Result<Result<(Vec<u8>, Option<Vec<u8>>), OciError>, String> {
    let client = client(reference, options);
    let image = client_ref(reference);
    // The blob requests carry the same anonymous token as the manifest's:
    // a registry that hands out tokens (ghcr.io, Docker Hub, most hosted
    // ones) refuses a blob asked for without one. `auth` keeps the token in
    // this client for the blob stream.
    client
        .auth(&image, &RegistryAuth::Anonymous, RegistryOperation::Pull)
        .await
        .map_err(|e| network(&e))?;
    let mut component = None;
    let mut signature = None;
    for layer in &manifest.layers {
        let mut stream = client
            .pull_blob_stream(&image, layer.digest.as_str())
            .await
            .map_err(|e| network(&e))?;
        let mut bytes = Vec::with_capacity(usize::try_from(layer.size).unwrap_or(0));
        while let Some(chunk) = stream.stream.next().await {
            // oci-client checks a blob's digest as it streams, so a
            // substituted blob can end here: refused, not "unreachable"
            // (which a tag would fall back from).
            let chunk = match chunk {
                Ok(chunk) => chunk,
                Err(e) => {
                    return Ok(Err(refused(
                        reference,
                        format!(
                            "the {} layer could not be read whole: {}",
                            layer.media_type,
                            network(&e)
                        ),
                    )));
                }
            };
            if (bytes.len() + chunk.len()) as u64 > layer.size {
                return Ok(Err(refused(
                    reference,
                    format!(
                        "the {} layer is larger than the {} bytes the manifest declares",
                        layer.media_type, layer.size
                    ),
                )));
            }
            bytes.extend_from_slice(&chunk);
        }
        let actual = sha256_hex(&bytes);
        if Some(actual.as_str()) != digest_hex(&layer.digest) || bytes.len() as u64 != layer.size {
            return Ok(Err(refused(
                reference,
                format!(
                    "digest mismatch: the {} layer served is sha256:{actual} ({} bytes), not the \
                     manifest's {} ({} bytes)",
                    layer.media_type,
                    bytes.len(),
                    layer.digest,
                    layer.size
                ),
            )));
        }
        if layer.media_type == WASM_MEDIA_TYPE {
            component = Some(bytes);
        } else {
            signature = Some(bytes);
        }
    }
    match component {
        Some(component) => Ok(Ok((component, signature))),
        None => Ok(Err(refused(reference, "no component layer"))),
    }
}

/// Writes the entry into a private temporary directory, then renames it to
/// `blobs/<hex>`: a reader sees the whole entry or none.
fn store(
    blobs: &Path,
    hex: &str,
    (manifest, component, signature): (&[u8], &[u8], Option<&[u8]>),
) -> std::io::Result<PathBuf> {
    let tmp = tempfile::Builder::new()
        .prefix(".pull-")
        .tempdir_in(blobs)?;
    let write = |name: &str, bytes: &[u8]| -> std::io::Result<()> {
        let mut file = tempfile::NamedTempFile::new_in(tmp.path())?;
        file.write_all(bytes)?;
        file.as_file().sync_data()?;
        file.persist(tmp.path().join(name)).map_err(|e| e.error)?;
        Ok(())
    };
    write(MANIFEST_FILE, manifest)?;
    write("component.wasm", component)?;
    if let Some(signature) = signature {
        write("component.wasm.minisig", signature)?;
    }
    let dir = blobs.join(hex);
    let kept = tmp.keep();
    if let Err(e) = std::fs::rename(&kept, &dir) {
        let _ = std::fs::remove_dir_all(&kept);
        // Another process stored the same digest first: theirs is as good.
        if !dir.join("component.wasm").is_file() {
            return Err(e);
        }
    }
    Ok(dir.join("component.wasm"))
}

/// The manifest as pulled, beside the component it names: what a later
/// load checks the stored component against (see [`stored_layer_digest`]).
const MANIFEST_FILE: &str = "manifest.json";

/// The sha256 (hex) the stored component of manifest `hex` must have: the
/// manifest stored beside it is read (bounded), checked against `hex` and
/// for the layout, and its component layer's digest returned. The cache is
/// the user's to write, so for a hook the user must not be able to replace
/// (a managed one) this anchors the stored bytes to the digest the config
/// pinned, which only its writer chose.
pub(super) fn stored_layer_digest(
    reference: &OciRef,
    dir: &Path,
    hex: &str,
) -> Result<String, OciError> {
    use std::io::Read;
    let path = dir.join(MANIFEST_FILE);
    let unusable = |why: String| {
        refused(
            reference,
            format!(
                "the cached copy in {} cannot be checked: {why} (remove that directory to pull it \
                 again)",
                dir.display()
            ),
        )
    };
    if !super::super::cache::owned_file(&path).map_err(&unusable)? {
        return Err(unusable(format!("it has no {MANIFEST_FILE}")));
    }
    let mut body = Vec::new();
    std::fs::File::open(&path)
        .and_then(|f| f.take(MAX_MANIFEST_BYTES + 1).read_to_end(&mut body))
        .map_err(|e| unusable(format!("{MANIFEST_FILE}: {e}")))?;
    let (_, manifest) = check_manifest(reference, Some(hex), &body)?;
    manifest
        .layers
        .iter()
        .find(|l| l.media_type == WASM_MEDIA_TYPE)
        .and_then(|l| digest_hex(&l.digest))
        .map(str::to_owned)
        .ok_or_else(|| unusable("its manifest names no component layer".into()))
}

/// The sha256 of `bytes`, as hex.
pub(super) fn sha256_hex(bytes: &[u8]) -> String {
    hex_of(&sha2::Sha256::digest(bytes))
}

/// What `push` published.
#[derive(Clone, Debug, serde::Serialize)]
#[non_exhaustive]
pub struct Pushed {
    /// The manifest digest (`sha256:<hex>`).
    pub digest: String,
    /// The ref pinned to it: what to put in hooks.json.
    pub pinned: String,
    /// The manifest's size in bytes.
    pub manifest_bytes: u64,
    /// The config blob's size in bytes.
    pub config_bytes: u64,
    /// Each layer's media type and size in bytes.
    pub layers: Vec<(String, u64)>,
}

/// Why a component could not be pushed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PushError {
    /// The component file could not be read.
    #[error("{}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: crate::safe_fs::ReadFileError,
    },
    /// It is not a component.
    #[error("{} is not a WebAssembly component", path.display())]
    NotAComponent {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: super::super::NotAComponent,
    },
    /// wit-component could not decode it as a component.
    #[error("{} is not a valid WebAssembly component: {reason}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What wit-component said.
        reason: String,
    },
    /// The ref's digest is not the manifest's (a push names a tag).
    #[error(
        "the ref pins sha256:{pinned}, but the manifest built is sha256:{built}; push to a tag"
    )]
    DigestGiven {
        /// The ref's digest.
        pinned: String,
        /// The manifest's.
        built: String,
    },
    /// The registry refused or could not be reached.
    #[error("registry {registry}: {reason}")]
    Registry {
        /// `host[:port]`.
        registry: String,
        /// What failed.
        reason: String,
    },
}

/// Publishes the component at `path` to `reference` in the wasm OCI artifact
/// layout, with `<path>.minisig` as the signature layer when it exists;
/// `credentials` is a user and password (else anonymous).
pub fn push(
    path: &Path,
    reference: &OciRef,
    credentials: Option<(String, String)>,
    options: &OciOptions,
) -> Result<Pushed, PushError> {
    let read = |p: &Path, limit| {
        crate::safe_fs::read_identified(p, limit)
            .map(|(bytes, _)| bytes)
            .map_err(|source| PushError::Read {
                path: p.to_owned(),
                source,
            })
    };
    let component = read(path, crate::safe_fs::MAX_COMPONENT_BYTES)?;
    super::super::check_component_header(&component).map_err(|source| {
        PushError::NotAComponent {
            path: path.to_owned(),
            source,
        }
    })?;
    wit_component::decode(&component).map_err(|e| PushError::Invalid {
        path: path.to_owned(),
        reason: format!("{e:#}"),
    })?;
    let mut signature_path = path.as_os_str().to_owned();
    signature_path.push(".minisig");
    let signature_path = PathBuf::from(signature_path);
    let signature = match read(&signature_path, MAX_SIGNATURE_BYTES) {
        Ok(bytes) => Some(bytes),
        Err(PushError::Read {
            source: crate::safe_fs::ReadFileError::NotFound,
            ..
        }) => None,
        Err(e) => return Err(e),
    };
    let digest = |bytes: &[u8]| format!("sha256:{}", sha256_hex(bytes));
    let descriptor = |media_type: &str, bytes: &[u8]| serde_json::json!({"mediaType": media_type, "digest": digest(bytes), "size": bytes.len()});
    let mut layers = vec![(WASM_MEDIA_TYPE, component)];
    if let Some(signature) = signature {
        layers.push((SIGNATURE_MEDIA_TYPE, signature));
    }
    // No timestamp: the same component pushes to the same digest.
    let config = serde_json::to_vec(&serde_json::json!({
        "architecture": "wasm",
        "os": "wasip2",
        "layerDigests": layers.iter().map(|(_, b)| digest(b)).collect::<Vec<_>>(),
    }))
    .unwrap_or_default();
    let manifest = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "mediaType": MANIFEST_MEDIA_TYPE,
        "config": descriptor(super::CONFIG_MEDIA_TYPE, &config),
        "layers": layers.iter().map(|(t, b)| descriptor(t, b)).collect::<Vec<_>>(),
    }))
    .unwrap_or_default();
    let built = sha256_hex(&manifest);
    if let Some(pinned) = &reference.digest
        && pinned != &built
    {
        return Err(PushError::DigestGiven {
            pinned: pinned.clone(),
            built,
        });
    }
    let pushed = Pushed {
        digest: format!("sha256:{built}"),
        pinned: reference.pinned(&built).to_string(),
        manifest_bytes: manifest.len() as u64,
        config_bytes: config.len() as u64,
        layers: layers
            .iter()
            .map(|(t, b)| ((*t).to_owned(), b.len() as u64))
            .collect(),
    };
    let (reference_, options_) = (reference.clone(), options.clone());
    let sent = on_thread(options.total_timeout, move || async move {
        let client = client(&reference_, &options_);
        let image = client_ref(&reference_);
        let anonymous = credentials.is_none();
        let auth = match credentials {
            Some((user, password)) => RegistryAuth::Basic(user, password),
            None => RegistryAuth::Anonymous,
        };
        let failed = |e: oci_client::errors::OciDistributionError| push_failed(&e, anonymous);
        client
            .auth(&image, &auth, RegistryOperation::Push)
            .await
            .map_err(failed)?;
        for bytes in std::iter::once(config).chain(layers.into_iter().map(|(_, b)| b)) {
            let d = digest(&bytes);
            client.push_blob(&image, bytes, &d).await.map_err(failed)?;
        }
        client
            .push_manifest_raw(
                &image,
                manifest,
                reqwest::header::HeaderValue::from_static(MANIFEST_MEDIA_TYPE),
            )
            .await
            .map_err(failed)?;
        Ok::<(), String>(())
    });
    match sent {
        Ok(Ok(())) => Ok(pushed),
        Ok(Err(reason)) | Err(reason) => Err(PushError::Registry {
            registry: reference.registry.clone(),
            reason,
        }),
    }
}

/// Why a push failed; a refusal for want of credentials says which ones.
fn push_failed(e: &oci_client::errors::OciDistributionError, anonymous: bool) -> String {
    use oci_client::errors::OciDistributionError as E;
    let refused = match e {
        E::UnauthorizedError { .. } | E::AuthenticationFailure(_) => true,
        E::ServerError { code, .. } => matches!(code, 401 | 403),
        _ => false,
    };
    let hint = match (refused, anonymous) {
        (false, _) => "",
        (true, true) => {
            " (the push was anonymous: set TOOLGATE_REGISTRY_USER and TOOLGATE_REGISTRY_PASSWORD)"
        }
        (true, false) => {
            " (the registry refused TOOLGATE_REGISTRY_USER / TOOLGATE_REGISTRY_PASSWORD)"
        }
    };
    format!("{}{hint}", network(e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r() -> OciRef {
        OciRef::parse("oci://127.0.0.1:1/a:v1").unwrap()
    }

    #[test]
    fn a_manifest_not_in_the_wasm_artifact_layout_is_refused_saying_what_is_wrong() {
        let layer = |t: &str, size: u64| {
            serde_json::json!({"mediaType": t, "size": size,
                "digest": format!("sha256:{}", "a".repeat(64))})
        };
        let manifest = |config: &str, layers: Vec<serde_json::Value>| {
            serde_json::to_vec(&serde_json::json!({
                "schemaVersion": 2, "mediaType": MANIFEST_MEDIA_TYPE,
                "config": layer(config, 2), "layers": layers,
            }))
            .unwrap()
        };
        let ok = manifest(
            super::super::CONFIG_MEDIA_TYPE,
            vec![layer(WASM_MEDIA_TYPE, 10)],
        );
        check_manifest(&r(), None, &ok).unwrap();
        for (body, says) in [
            (
                manifest(
                    "application/vnd.oci.image.config.v1+json",
                    vec![layer(WASM_MEDIA_TYPE, 1)],
                ),
                "config media type",
            ),
            (
                manifest(super::super::CONFIG_MEDIA_TYPE, vec![]),
                "found 0 layer",
            ),
            (
                manifest(
                    super::super::CONFIG_MEDIA_TYPE,
                    vec![layer(WASM_MEDIA_TYPE, 1), layer(WASM_MEDIA_TYPE, 1)],
                ),
                "found 2 layer",
            ),
            (
                manifest(
                    super::super::CONFIG_MEDIA_TYPE,
                    vec![layer(WASM_MEDIA_TYPE, 1 << 40)],
                ),
                "not pulled",
            ),
            (b"{\"schemaVersion\": 2".to_vec(), "not JSON"),
            (b"{\"schemaVersion\": 2}".to_vec(), "missing"),
        ] {
            let e = check_manifest(&r(), None, &body).unwrap_err().to_string();
            assert!(e.contains(says), "{e}");
        }
        let e = check_manifest(&r(), Some(&"b".repeat(64)), &ok)
            .unwrap_err()
            .to_string();
        assert!(e.contains("digest mismatch"), "{e}");
    }
}
