//! Components from an OCI registry: `"wasm": "oci://host[:port]/repo[:tag][@sha256:<hex>]"`.
//!
//! # Why a registry, and why toolgate checks the digests itself
//!
//! A platform group publishes a guard once and every machine must run
//! exactly that build. WebAssembly components already travel as OCI
//! artifacts (the layout wkg and wasmCloud use: config
//! `application/vnd.wasm.config.v0+json`, one `application/wasm` layer), so
//! any registry a team runs can host them, and the maintained `oci-client`
//! crate speaks the protocol. What is run is named by a manifest digest; the
//! digests are verified here — the manifest's bytes against the ref, each
//! layer's bytes against the manifest — never taken from the client or the
//! registry's word, so a registry (or whoever sits in front of it) can refuse
//! to serve but cannot serve something else.
//!
//! # Nothing on the call path waits on the network
//!
//! A pulled component is stored content-addressed under the component cache
//! directory, `oci/sha256/<manifest hex>/component.wasm` (and
//! `component.wasm.minisig` when the artifact carries a signature layer, and
//! `manifest.json`, the manifest as pulled), with the same ownership checks
//! as the compile cache (`cache.rs`): the directories and files are the
//! user's own and private. The user can still change them, which is theirs
//! to do for their own hooks but not for the managed layer's, which binds
//! the user: a managed component's stored bytes are checked against the
//! stored manifest, and it against the pinned digest, on every load
//! (`stored_layer_digest`). A ref with a digest
//! whose entry is there is run with no network at all — not even the tag is
//! resolved. A tag without a digest is followed where a load is not on a
//! tool call's path (`toolgate hooks`, each load of `toolgate serve`, a
//! long-lived embedder: one bounded request), falling back to the digest it
//! last resolved, with a warning in the hook's load record, when the
//! registry cannot be reached. A process per tool call (`toolgate check`,
//! the agent commands: `OciOptions::follow_tags` off) runs the digest the
//! tag last resolved to on this machine without any request; only a tag
//! never resolved here is asked (the first pull).
//! Anything not in the cache and not pullable fails the hook's load: the
//! call is blocked (fail closed), and the error names the registry.
//!
//! # Who may name a tag
//!
//! A tag is mutable: whoever can push to the registry decides what it means
//! tomorrow. A workspace config is data someone else wrote, so it must pin a
//! digest (a tag is refused, saying why); the operator's own (global) config
//! may follow a tag, and `toolgate hooks` shows the digest it resolved to.
//!
//! # Bounds and the threat each answers
//!
//! | bound | value | answers |
//! |---|---|---|
//! | connect timeout | 5 s | a black-holed registry address |
//! | total pull time | 60 s | a registry that trickles bytes |
//! | manifest size | [`MAX_MANIFEST_BYTES`] (checked before reading: `Content-Length`, then while streaming) | a hostile endpoint sending an endless manifest |
//! | component layer | `safe_fs::MAX_COMPONENT_BYTES`, from the manifest's declared size, before the blob is asked for | a huge layer |
//! | signature layer | [`MAX_SIGNATURE_BYTES`] | same |
//! | layers read | never more than their declared size | a registry sending more than it declared |
//!
//! Pulling needs the `oci` feature (the command-line tool turns it on). Without it, a component
//! already in the cache still runs and anything else is refused with an
//! error saying this build cannot pull.

use crate::contract::Source;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[cfg(feature = "oci")]
mod pull;
#[cfg(feature = "oci")]
pub use pull::{PushError, Pushed, push};

/// The largest manifest read (a wasm artifact's is under 1 KiB).
pub const MAX_MANIFEST_BYTES: u64 = 64 << 10;
/// The largest signature layer read (a minisign signature is under 1 KiB).
pub const MAX_SIGNATURE_BYTES: u64 = 64 << 10;
/// The manifest media type toolgate reads and writes.
pub const MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
/// The wasm OCI artifact's config media type.
pub const CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
/// The component layer's media type.
pub const WASM_MEDIA_TYPE: &str = "application/wasm";
/// The signature layer's media type (a minisign signature of the component).
pub const SIGNATURE_MEDIA_TYPE: &str = "application/vnd.toolgate.minisign.signature";
/// The scheme a `wasm` value starts with to name a registry artifact.
pub const SCHEME: &str = "oci://";

/// A parsed `oci://` reference.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct OciRef {
    /// `host[:port]`.
    pub registry: String,
    /// The repository path (`team/guard`).
    pub repository: String,
    /// The tag, when given.
    pub tag: Option<String>,
    /// The manifest digest's 64 lowercase hex digits (sha256), when given.
    pub digest: Option<String>,
}

/// Why an `oci://` reference is not one toolgate accepts; names the part.
#[derive(Debug, thiserror::Error)]
#[error("{field}: {message}")]
pub struct OciRefError {
    field: &'static str,
    message: String,
}

fn bad(field: &'static str, message: impl Into<String>) -> OciRefError {
    OciRefError {
        field,
        message: message.into(),
    }
}

impl OciRef {
    /// Parses `oci://host[:port]/repo/path[:tag][@sha256:<64 hex>]`, strictly:
    /// lowercase repository components as the distribution spec gives them,
    /// a tag of at most 128 characters, a sha256 digest of 64 lowercase hex
    /// digits, and at least one of tag and digest (there is no implicit
    /// `latest`).
    pub fn parse(text: &str) -> Result<OciRef, OciRefError> {
        let rest = text
            .strip_prefix(SCHEME)
            .ok_or_else(|| bad("scheme", "an OCI reference starts with oci://"))?;
        let (rest, digest) = match rest.split_once('@') {
            Some((r, d)) => {
                let hex = d
                    .strip_prefix("sha256:")
                    .ok_or_else(|| bad("digest", "expected sha256:<64 hex digits> after @"))?;
                if hex.len() != 64 || !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
                    return Err(bad(
                        "digest",
                        "expected sha256: followed by 64 lowercase hex digits",
                    ));
                }
                (r, Some(hex.to_owned()))
            }
            None => (rest, None),
        };
        let (registry, path) = rest
            .split_once('/')
            .ok_or_else(|| bad("repository", "expected oci://host[:port]/repository"))?;
        check_registry_name(registry)?;
        let (repository, tag) = match path.rsplit_once(':') {
            Some((repo, tag)) => (repo, Some(tag)),
            None => (path, None),
        };
        if repository.is_empty() {
            return Err(bad("repository", "empty"));
        }
        for part in repository.split('/') {
            if !repository_component(part) {
                return Err(bad(
                    "repository",
                    format!(
                        "{part:?} is not a repository path component (lowercase letters and \
                         digits, separated by one of . _ __ -)"
                    ),
                ));
            }
        }
        if let Some(tag) = tag {
            let ok = (1..=128).contains(&tag.len())
                && tag
                    .bytes()
                    .next()
                    .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_')
                && tag
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
            if !ok {
                return Err(bad(
                    "tag",
                    "expected 1 to 128 of A-Z a-z 0-9 _ . -, not starting with . or -",
                ));
            }
        }
        if tag.is_none() && digest.is_none() {
            return Err(bad(
                "tag",
                "give a tag or @sha256:<digest> (there is no implicit latest)",
            ));
        }
        Ok(OciRef {
            registry: registry.to_owned(),
            repository: repository.to_owned(),
            tag: tag.map(str::to_owned),
            digest,
        })
    }

    /// The registry's host, without the port.
    pub fn host(&self) -> &str {
        self.registry.split(':').next().unwrap_or_default()
    }

    /// Whether the registry is this machine, named by a loopback IPv4
    /// literal (plain HTTP is allowed only there; a name such as
    /// `localhost` is whatever the resolver says, so it gets HTTPS).
    pub fn is_loopback(&self) -> bool {
        self.host()
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|ip| ip.is_loopback())
    }

    /// The same ref pinned to `digest` (hex).
    pub fn pinned(&self, digest: &str) -> OciRef {
        OciRef {
            digest: Some(digest.to_owned()),
            ..self.clone()
        }
    }
}

impl fmt::Display for OciRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{SCHEME}{}/{}", self.registry, self.repository)?;
        if let Some(tag) = &self.tag {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@sha256:{digest}")?;
        }
        Ok(())
    }
}

/// `host[:port]`: DNS labels or an IPv4 address, an optional port 1-65535.
fn check_registry_name(registry: &str) -> Result<(), OciRefError> {
    let (host, port) = match registry.rsplit_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (registry, None),
    };
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    if host.is_empty() || host.len() > 253 || !host.split('.').all(label_ok) {
        return Err(bad(
            "registry",
            format!("{host:?} is not a host name (letters, digits, - and .)"),
        ));
    }
    if let Some(port) = port
        && !(port.bytes().all(|b| b.is_ascii_digit()) && port.parse::<u16>().is_ok_and(|p| p > 0))
    {
        return Err(bad("registry", format!("port {port:?} is not 1-65535")));
    }
    Ok(())
}

/// `[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*`, the distribution spec's component.
fn repository_component(part: &str) -> bool {
    let bytes = part.as_bytes();
    let alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    if bytes.is_empty() || !alnum(&bytes[0]) || !bytes.last().is_some_and(alnum) {
        return false;
    }
    let mut i = 0;
    while i < bytes.len() {
        if alnum(&bytes[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && !alnum(&bytes[i]) {
            i += 1;
        }
        let sep = &part[start..i];
        if !(sep == "." || sep == "_" || sep == "__" || sep.bytes().all(|b| b == b'-')) {
            return false;
        }
    }
    true
}

/// Whether a config from `source` may name `reference`: a workspace must
/// pin a digest. An exhaustive match: a new source must decide.
pub(crate) fn check_source(source: Source, reference: &OciRef) -> Result<(), String> {
    match source {
        Source::Workspace if reference.digest.is_none() => Err(format!(
            "a workspace config must pin a digest ({reference}@sha256:…): a tag can be moved \
             by whoever can push to the registry, so it does not say what will run; only the \
             operator's global or managed config may follow a tag"
        )),
        // The operator's own files (root's, for the managed layer) and code.
        Source::Workspace | Source::Managed | Source::Global | Source::Host => Ok(()),
    }
}

/// Whether `reference`'s registry is in `allowed` (the managed layer's
/// `allowed_registries`; `None`: any registry).
pub(crate) fn check_registry(reference: &OciRef, allowed: Option<&[String]>) -> Result<(), String> {
    match allowed {
        Some(list) if !list.iter().any(|r| r == &reference.registry) => Err(format!(
            "registry {} is not in the managed config's allowed_registries ({})",
            reference.registry,
            if list.is_empty() {
                "empty: no registry is allowed".to_owned()
            } else {
                list.join(", ")
            }
        )),
        _ => Ok(()),
    }
}

/// How components are pulled: the embedding program's choice.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct OciOptions {
    /// How long connecting to the registry may take.
    pub connect_timeout: Duration,
    /// How long a whole pull (manifest and layers) may take.
    pub total_timeout: Duration,
    /// Whether a tag-only ref asks the registry what its tag means now
    /// (`true`, the default: a long-lived host, `toolgate hooks`,
    /// `toolgate serve` at each load) or runs the digest the tag last
    /// resolved to when that is cached, without any network (`false`: a
    /// process per tool call, which must not wait on the network; only a tag
    /// never resolved on this machine is asked, once).
    pub follow_tags: bool,
    /// Registries a ref may name (`host[:port]`); `None` allows any. The
    /// library's loader sets it from the managed layer's
    /// `allowed_registries` when that layer names some, over the embedder's.
    pub allowed_registries: Option<Vec<String>>,
}

impl Default for OciOptions {
    fn default() -> Self {
        OciOptions {
            connect_timeout: Duration::from_secs(5),
            total_timeout: Duration::from_secs(60),
            follow_tags: true,
            allowed_registries: None,
        }
    }
}

/// Where a resolved component came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OciOrigin {
    /// Already in the cache: no network used.
    Cached,
    /// Pulled from the registry now (or the tag asked and found cached).
    Registry,
    /// A tag the registry could not answer for: the digest it last resolved.
    Remembered,
}

/// A reference resolved to a verified component file in the cache.
#[derive(Clone, Debug, serde::Serialize)]
#[non_exhaustive]
pub struct OciComponent {
    /// The ref as written.
    pub reference: String,
    /// The manifest digest run (`sha256:<hex>`).
    pub digest: String,
    /// The ref pinned to that digest (what to paste into a workspace config).
    pub pinned: String,
    /// Where it came from.
    pub origin: OciOrigin,
    /// For the operator: a tag that could not be resolved now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
    /// The component file in the cache.
    #[serde(skip)]
    pub(crate) path: PathBuf,
}

/// Why an `oci://` component could not be had.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OciError {
    /// No cache directory to hold it.
    #[error("an oci:// component needs the component cache directory, and there is none")]
    NoCache,
    /// The cache directory failed the ownership checks.
    #[error("component cache {path} not used: {reason}")]
    UntrustedCache {
        /// The directory.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// Not in the cache, and this build has no client to pull it.
    #[error(
        "{reference} is not in the component cache and this build of toolgate cannot pull \
         (built without the `oci` feature)"
    )]
    NotCached {
        /// The ref.
        reference: String,
    },
    /// The registry could not be reached (nothing cached to fall back on).
    #[error(
        "registry {registry} could not be reached ({reason}) and {reference} is not in the cache"
    )]
    Unreachable {
        /// `host[:port]`.
        registry: String,
        /// The ref.
        reference: String,
        /// What failed.
        reason: String,
    },
    /// The registry answered, but not with an acceptable artifact.
    #[error("{reference} from registry {registry}: {reason}")]
    Refused {
        /// `host[:port]`.
        registry: String,
        /// The ref.
        reference: String,
        /// What was wrong (a digest mismatch, a bound, a media type).
        reason: String,
    },
    /// The pulled component could not be written to the cache.
    #[error("cannot store {reference} in the component cache")]
    Store {
        /// The ref.
        reference: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// The cache's `oci/` area: `<cache>/oci/sha256` and `<cache>/oci/tags`,
/// each checked (and created private) like the cache directory itself.
struct Area {
    blobs: PathBuf,
    tags: PathBuf,
}

fn area(cache: &Path) -> Result<Area, OciError> {
    let oci = cache.join("oci");
    let blobs = oci.join("sha256");
    let tags = oci.join("tags");
    for dir in [cache, oci.as_path(), blobs.as_path(), tags.as_path()] {
        super::cache::trusted_dir(dir).map_err(|reason| OciError::UntrustedCache {
            path: dir.to_owned(),
            reason: reason.to_string(),
        })?;
    }
    Ok(Area { blobs, tags })
}

/// The entry for manifest `hex`, when it is there and trusted: its
/// directory is the user's own and private, and so are its files.
fn cached(area: &Area, hex: &str) -> Result<Option<PathBuf>, OciError> {
    let dir = area.blobs.join(hex);
    if std::fs::symlink_metadata(&dir).is_err() {
        return Ok(None);
    }
    let untrusted = |path: &Path, reason: String| OciError::UntrustedCache {
        path: path.to_owned(),
        reason,
    };
    super::cache::trusted_dir(&dir).map_err(|r| untrusted(&dir, r.to_string()))?;
    let component = dir.join("component.wasm");
    if !super::cache::owned_file(&component).map_err(|r| untrusted(&component, r))? {
        return Ok(None);
    }
    let signature = dir.join("component.wasm.minisig");
    super::cache::owned_file(&signature).map_err(|r| untrusted(&signature, r))?;
    Ok(Some(component))
}

fn tag_record(area: &Area, reference: &OciRef) -> PathBuf {
    let name = format!(
        "{}/{}:{}",
        reference.registry,
        reference.repository,
        reference.tag.as_deref().unwrap_or("")
    );
    area.tags
        .join(&blake3::hash(name.as_bytes()).to_hex()[..32])
}

/// The digest last resolved for `reference`'s tag, when recorded.
fn remembered(area: &Area, reference: &OciRef) -> Option<String> {
    let path = tag_record(area, reference);
    if !super::cache::owned_file(&path).ok()? {
        return None;
    }
    let text = std::fs::read_to_string(&path).ok()?;
    let (name, hex) = text.trim_end().rsplit_once('@')?;
    let expected = OciRef {
        digest: None,
        ..reference.clone()
    };
    (name == expected.to_string() && hex.len() == 64).then(|| hex.to_owned())
}

fn remember(area: &Area, reference: &OciRef, hex: &str) {
    use std::io::Write;
    let record = || -> std::io::Result<()> {
        let mut tmp = tempfile::NamedTempFile::new_in(&area.tags)?;
        let name = OciRef {
            digest: None,
            ..reference.clone()
        };
        writeln!(tmp, "{name}@{hex}")?;
        tmp.persist(tag_record(area, reference))
            .map_err(|e| e.error)?;
        Ok(())
    };
    if let Err(e) = record() {
        tracing::debug!("could not record the digest of {reference}: {e}");
    }
}

/// Resolves `reference` to a verified component in the cache under
/// `cache`, pulling it when needed (see the module docs for when the
/// network is used).
pub(crate) fn resolve(
    reference: &OciRef,
    cache: Option<&Path>,
    options: &OciOptions,
) -> Result<OciComponent, OciError> {
    let cache = cache.ok_or(OciError::NoCache)?;
    let area = area(cache)?;
    let found = |hex: &str, origin: OciOrigin, warning: Option<String>| OciComponent {
        reference: reference.to_string(),
        digest: format!("sha256:{hex}"),
        pinned: reference.pinned(hex).to_string(),
        origin,
        warning,
        path: PathBuf::new(),
    };
    if let Some(hex) = &reference.digest {
        if let Some(path) = cached(&area, hex)? {
            return Ok(OciComponent {
                path,
                ..found(hex.as_str(), OciOrigin::Cached, None)
            });
        }
        let path = fetch(reference, &area, options, hex)?;
        return Ok(OciComponent {
            path,
            ..found(hex.as_str(), OciOrigin::Registry, None)
        });
    }
    // A tag, for a process that must not wait on the network: what it last
    // resolved to, when that is cached.
    if !options.follow_tags
        && let Some(hex) = remembered(&area, reference)
        && let Some(path) = cached(&area, &hex)?
    {
        return Ok(OciComponent {
            path,
            ..found(hex.as_str(), OciOrigin::Cached, None)
        });
    }
    // A tag: ask the registry, else fall back on what it last said.
    match ask_tag(reference, &area, options) {
        Ok((hex, path)) => {
            remember(&area, reference, &hex);
            Ok(OciComponent {
                path,
                ..found(hex.as_str(), OciOrigin::Registry, None)
            })
        }
        Err(unreachable @ OciError::Unreachable { .. })
        | Err(unreachable @ OciError::NotCached { .. }) => {
            let Some(hex) = remembered(&area, reference) else {
                return Err(unreachable);
            };
            let Some(path) = cached(&area, &hex)? else {
                return Err(unreachable);
            };
            let why = match &unreachable {
                OciError::Unreachable {
                    registry, reason, ..
                } => format!("registry {registry} could not be reached ({reason})"),
                _ => "this build of toolgate cannot pull (built without the `oci` feature)".into(),
            };
            let warning = format!(
                "{why}; ran sha256:{hex}, the digest tag {} last resolved to",
                reference.tag.as_deref().unwrap_or("")
            );
            Ok(OciComponent {
                path,
                ..found(hex.as_str(), OciOrigin::Remembered, Some(warning))
            })
        }
        Err(other) => Err(other),
    }
}

/// The sha256 (hex) the stored bytes of `resolved` must have, read from the
/// manifest stored beside them and checked against the manifest digest
/// `resolved` runs (see `pull::stored_layer_digest`).
#[cfg(feature = "oci")]
pub(crate) fn stored_layer_digest(
    reference: &OciRef,
    resolved: &OciComponent,
) -> Result<String, OciError> {
    let hex = resolved.digest.trim_start_matches("sha256:");
    let dir = resolved.path.parent().unwrap_or(Path::new("/"));
    pull::stored_layer_digest(reference, dir, hex)
}

#[cfg(not(feature = "oci"))]
pub(crate) fn stored_layer_digest(
    reference: &OciRef,
    _: &OciComponent,
) -> Result<String, OciError> {
    Err(OciError::NotCached {
        reference: reference.to_string(),
    })
}

/// The sha256 (hex) of `bytes`; `None` in a build without the `oci` feature.
#[cfg(feature = "oci")]
pub(crate) fn sha256_hex(bytes: &[u8]) -> Option<String> {
    Some(pull::sha256_hex(bytes))
}

#[cfg(not(feature = "oci"))]
pub(crate) fn sha256_hex(_: &[u8]) -> Option<String> {
    None
}

#[cfg(feature = "oci")]
fn fetch(
    reference: &OciRef,
    area: &Area,
    options: &OciOptions,
    hex: &str,
) -> Result<PathBuf, OciError> {
    pull::pull(reference, &area.blobs, options, Some(hex)).map(|(_, path)| path)
}

#[cfg(not(feature = "oci"))]
fn fetch(reference: &OciRef, _: &Area, _: &OciOptions, _: &str) -> Result<PathBuf, OciError> {
    Err(OciError::NotCached {
        reference: reference.to_string(),
    })
}

#[cfg(feature = "oci")]
fn ask_tag(
    reference: &OciRef,
    area: &Area,
    options: &OciOptions,
) -> Result<(String, PathBuf), OciError> {
    pull::pull_with(reference, &area.blobs, options, None, |hex| {
        cached(area, hex)
    })
}

#[cfg(not(feature = "oci"))]
fn ask_tag(reference: &OciRef, _: &Area, _: &OciOptions) -> Result<(String, PathBuf), OciError> {
    Err(OciError::NotCached {
        reference: reference.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEX: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn a_ref_parses_into_its_parts_and_prints_back() {
        let text = format!("oci://127.0.0.1:5000/team/guard:v1@sha256:{HEX}");
        let r = OciRef::parse(&text).unwrap();
        assert_eq!(r.registry, "127.0.0.1:5000");
        assert_eq!(r.repository, "team/guard");
        assert_eq!(r.tag.as_deref(), Some("v1"));
        assert_eq!(r.digest.as_deref(), Some(HEX));
        assert_eq!(r.to_string(), text);
        assert!(r.is_loopback());
        let r = OciRef::parse(&format!("oci://ghcr.io/a/b@sha256:{HEX}")).unwrap();
        assert_eq!(r.tag, None);
        assert!(!r.is_loopback());
    }

    #[test]
    fn a_malformed_ref_is_refused_naming_the_part() {
        for (text, field) in [
            ("https://x/y:1", "scheme"),
            ("oci://x", "repository"),
            ("oci://x/Upper:1", "repository"),
            ("oci://x/a//b:1", "repository"),
            ("oci://x/a", "tag"),
            ("oci://x/a:", "tag"),
            ("oci://x/a:.bad", "tag"),
            ("oci://x/a@sha256:abc", "digest"),
            ("oci://x/a@md5:abc", "digest"),
            (
                &format!("oci://x/a@sha256:{}", HEX.to_uppercase()),
                "digest",
            ),
            ("oci://x:0/a:1", "registry"),
            ("oci://x:99999/a:1", "registry"),
            ("oci://x y/a:1", "registry"),
            ("oci:///a:1", "registry"),
        ] {
            let e = OciRef::parse(text).unwrap_err();
            assert_eq!(e.field, field, "{text}: {e}");
        }
    }

    #[test]
    fn a_workspace_must_pin_a_digest_and_the_global_config_may_follow_a_tag() {
        let tag = OciRef::parse("oci://r.example/a:v1").unwrap();
        let e = check_source(Source::Workspace, &tag).unwrap_err();
        assert!(e.contains("must pin a digest"), "{e}");
        check_source(Source::Global, &tag).unwrap();
        check_source(Source::Workspace, &tag.pinned(HEX)).unwrap();
    }

    #[test]
    fn a_registry_not_in_allowed_registries_is_refused_naming_the_list() {
        let r = OciRef::parse("oci://evil.example:443/a:v1").unwrap();
        let allowed = vec!["registry.corp:5000".to_owned(), "ghcr.io".to_owned()];
        let e = check_registry(&r, Some(allowed.as_slice())).unwrap_err();
        assert!(e.contains("evil.example:443"), "{e}");
        assert!(e.contains("registry.corp:5000, ghcr.io"), "{e}");
        check_registry(&r, None).unwrap();
        let ok = OciRef::parse("oci://ghcr.io/a:v1").unwrap();
        check_registry(&ok, Some(allowed.as_slice())).unwrap();
        assert!(
            check_registry(&ok, Some(&[][..]))
                .unwrap_err()
                .contains("no registry")
        );
    }
}
