//! Signed components: the operator pins public keys, and a component runs
//! only when a pinned key signed exactly its bytes, under the name and at
//! least the version the hook expects.
//!
//! # Why minisign
//!
//! A guard on the critical path of every tool call must not wait on the
//! network, so its signature must verify offline. minisign (Ed25519) does by
//! design: a public key is one line to pin in hooks.json, the verifier
//! (`minisign-verify`) is small and has no dependencies, and the signer is a
//! packaged tool (Debian's `minisign`). Its *trusted comment* is signed with
//! the file, so it carries the component's name and version, which is what
//! refuses a rollback to an older, validly signed build. The alternative,
//! cosign/sigstore keyless signing, checks certificates and a transparency
//! log online (Fulcio, Rekor), and its Rust client brings a large TLS and
//! crypto stack.
//!
//! # What is checked, in order, each failure its own error
//!
//! A component file `X` is signed by `X.minisig` beside it (read bounded, a
//! regular file, beneath the workspace for a workspace hook). The signature
//! must parse, name a pinned key, verify over the very bytes that are then
//! compiled (read once: nothing is read again between the check and the
//! compile, and the compile cache is looked up only after the check), and
//! its trusted comment must carry `name=<name> version=<unsigned integer>`
//! (whitespace-separated, each once), with the name the hook expects and a
//! version no lower than its `min_version`.
//!
//! # Who is bound
//!
//! Only components are signed. A command hook runs a program on the
//! machine: a global one is the operator's own file, and a workspace one runs
//! only after the user trusted it, pinned by digest (`trust`). Signing a
//! program toolgate merely spawns would not cover what that program loads
//! (its interpreter, its libraries), so it is not offered. Which keys bind
//! which layer is [`combine`]'s rule.

use crate::safe_fs::ReadFileError;
use base64::Engine as _;
use serde::Serialize;
use serde_json::Value;
use std::fmt;
use std::path::{Path, PathBuf};

/// The largest `.minisig` read: a minisign signature is four short lines.
pub const MAX_SIGNATURE_BYTES: u64 = 4 << 10;

/// The signature file of component `component`: `<component>.minisig`.
pub fn signature_path(component: &Path) -> PathBuf {
    let mut name = component.as_os_str().to_owned();
    name.push(".minisig");
    PathBuf::from(name)
}

/// A minisign key id, printed as minisign prints it (upper-case hex without
/// leading zeros, `%" PRIX64 "` in minisign's C source: what `minisign -G`,
/// the `.pub` file and the `.minisig`'s untrusted comment show; a test
/// caught `{:016X}` disagreeing with a key whose id starts with 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyId([u8; 8]);

impl fmt::Display for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // minisign reads the 8 bytes as a little-endian integer.
        write!(f, "{:X}", u64::from_le_bytes(self.0))
    }
}

impl Serialize for KeyId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// The key id in bytes 2..10 of a minisign blob (public key or signature
/// line), base64: `minisign-verify` keeps its own copy private.
fn key_id_of(base64_line: &str) -> Option<KeyId> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(base64_line.trim())
        .ok()?;
    Some(KeyId(bytes.get(2..10)?.try_into().ok()?))
}

/// A public key the operator pinned.
#[derive(Clone, Debug)]
pub struct PinnedKey {
    key: minisign_verify::PublicKey,
    id: KeyId,
}

impl PinnedKey {
    /// Its key id.
    pub fn id(&self) -> KeyId {
        self.id
    }
}

/// A config file's `"signing"`.
#[derive(Clone, Debug, Default)]
pub struct Signing {
    /// The keys it pins.
    pub keys: Vec<PinnedKey>,
    /// Whether every component it binds must be signed.
    pub required: bool,
}

/// Parses `"signing": {"keys": [...], "required": bool}`; each problem is
/// (field, message), the field spelt as `signing.keys[1]`.
pub fn parse(value: &Value) -> Result<Signing, Vec<(String, String)>> {
    let mut problems = Vec::new();
    let Value::Object(obj) = value else {
        return Err(vec![(
            "signing".into(),
            "expected {\"keys\": [\"RW…\"], \"required\": true}".into(),
        )]);
    };
    for key in obj
        .keys()
        .filter(|k| !["keys", "required"].contains(&k.as_str()))
    {
        problems.push((
            format!("signing.{key}"),
            "unknown field; known fields: keys, required".into(),
        ));
    }
    let required = match obj.get("required") {
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            problems.push(("signing.required".into(), "expected true or false".into()));
            false
        }
        None => {
            problems.push((
                "signing.required".into(),
                "missing; write true (every component must be signed) or false (only hooks \
                 that give `signed`)"
                    .into(),
            ));
            false
        }
    };
    let mut keys = Vec::new();
    match obj.get("keys") {
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                match item.as_str().and_then(pinned_key) {
                    Some(key) => keys.push(key),
                    // The value is not quoted: it may be anything pasted.
                    None => problems.push((
                        format!("signing.keys[{i}]"),
                        "not a minisign public key: give the base64 line of the .pub file \
                         (it starts with \"RW\"), not the file's path or comment"
                            .into(),
                    )),
                }
            }
            if items.is_empty() && required {
                problems.push((
                    "signing.keys".into(),
                    "no keys: with required true every component would be refused".into(),
                ));
            }
        }
        Some(_) => problems.push((
            "signing.keys".into(),
            "expected an array of minisign public keys (\"RW…\")".into(),
        )),
        None => problems.push((
            "signing.keys".into(),
            "missing; give the minisign public keys that may sign components".into(),
        )),
    }
    if problems.is_empty() {
        Ok(Signing { keys, required })
    } else {
        Err(problems)
    }
}

/// A pinned key from its base64 line (`RW…`, 56 characters).
fn pinned_key(line: &str) -> Option<PinnedKey> {
    if !line.starts_with("RW") || line.len() != 56 {
        return None;
    }
    let key = minisign_verify::PublicKey::from_base64(line).ok()?;
    Some(PinnedKey {
        key,
        id: key_id_of(line)?,
    })
}

/// What one layer's components are held to.
#[derive(Clone, Debug, Default)]
pub struct Rule {
    /// Every component must be signed.
    pub required: bool,
    /// Who set `required` (for listings): "the managed config" or "the
    /// global config".
    pub required_by: Option<&'static str>,
    /// The keys whose signatures count.
    pub keys: Vec<PinnedKey>,
}

/// The rules for each layer's components.
#[derive(Clone, Debug, Default)]
pub struct Rules {
    /// For the managed layer's own components.
    pub managed: Rule,
    /// For the global and workspace components.
    pub below: Rule,
}

/// Which keys bind which layer, from the managed and the global `signing`:
///
/// - managed `required`: every layer's components must be signed, and only
///   the managed keys count (a user's own key cannot sign its way past the
///   platform group's);
/// - else global `required`: global and workspace components must be signed
///   by a global or a managed key; the managed layer's own components are
///   not bound by the user's setting (the layer below cannot bind the one
///   above);
/// - else nothing is required; a hook that gives `signed` is checked
///   against the keys its layer could be bound by (the managed keys for a
///   managed hook, global ∪ managed below).
pub fn combine(managed: Option<&Signing>, global: Option<&Signing>) -> Rules {
    let keys = |s: Option<&Signing>| s.map(|s| s.keys.clone()).unwrap_or_default();
    let managed_keys = keys(managed);
    let mut both = keys(global);
    both.extend(managed_keys.iter().cloned());
    let managed_rule = |required| Rule {
        required,
        required_by: required.then_some("the managed config"),
        keys: managed_keys.clone(),
    };
    if managed.is_some_and(|s| s.required) {
        return Rules {
            managed: managed_rule(true),
            below: managed_rule(true),
        };
    }
    let global_required = global.is_some_and(|s| s.required);
    Rules {
        managed: managed_rule(false),
        below: Rule {
            required: global_required,
            required_by: global_required.then_some("the global config"),
            keys: both,
        },
    }
}

/// The `signing` settings of each layer read so far, as the loader goes.
#[derive(Clone, Debug, Default)]
pub struct Layers {
    /// The managed config's `signing`.
    pub managed: Option<Signing>,
    /// The global config's `signing`.
    pub global: Option<Signing>,
}

impl Layers {
    /// The rules now in force.
    pub fn rules(&self) -> Rules {
        combine(self.managed.as_ref(), self.global.as_ref())
    }
}

/// The signing rule a file's components are loaded under: the loader sets
/// it in the binding options of each file it parses (not the embedder: the
/// type is the crate's own), and the wasm binding reads it.
#[derive(Clone, Debug, Default)]
pub struct InForce(pub Rule);

/// `options` with the rule `source`'s components load under: the layers
/// read before, with the file's own `signing` (`own`) in its layer.
pub fn with_rule(
    options: &crate::parse::BindingOptions,
    source: crate::contract::Source,
    layers: &Layers,
    own: Option<&Signing>,
) -> crate::parse::BindingOptions {
    use crate::contract::Source;
    let mut layers = layers.clone();
    match (source, own) {
        (Source::Managed, Some(own)) => layers.managed = Some(own.clone()),
        (Source::Global, Some(own)) => layers.global = Some(own.clone()),
        _ => {}
    }
    let rule = match source {
        Source::Managed => layers.rules().managed,
        Source::Global | Source::Workspace => layers.rules().below,
        // Hooks built in code are the embedder's own program.
        Source::Host => Rule::default(),
    };
    let mut options = options.clone();
    options.set(InForce(rule));
    options
}

/// Reads `<component>.minisig` (regular, bounded; beneath `root` after
/// symlinks when given, as a workspace's files are): its text, its resolved
/// path and the identity of the bytes read.
pub fn read_signature(
    component: &Path,
    root: Option<&Path>,
) -> Result<(Vec<u8>, PathBuf, crate::safe_fs::FileIdentity), VerifySignatureError> {
    let path = signature_path(component);
    let refused = |source: ReadFileError| match source {
        ReadFileError::NotFound => VerifySignatureError::Missing { path: path.clone() },
        source => VerifySignatureError::Read {
            path: path.clone(),
            source,
        },
    };
    let resolved = match root {
        Some(root) => crate::safe_fs::beneath(&path, root).map_err(refused)?,
        None => path.clone(),
    };
    let (bytes, identity) =
        crate::safe_fs::read_identified(&resolved, MAX_SIGNATURE_BYTES).map_err(refused)?;
    Ok((bytes, resolved, identity))
}

/// What a hook expects of its component's signature: `"signed": {"name",
/// "min_version"}` (the name defaults to the hook's, the version to 0).
#[derive(Clone, Debug, Serialize)]
pub struct Expect {
    /// The name the trusted comment must carry.
    pub name: String,
    /// The lowest version accepted.
    pub min_version: u64,
}

/// A signature that verified.
#[derive(Clone, Debug, Serialize)]
pub struct Verified {
    /// The pinned key that signed it.
    pub key_id: KeyId,
    /// The signed name.
    pub name: String,
    /// The signed version.
    pub version: u64,
}

impl fmt::Display for Verified {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "signed by key {}, name={} version={}",
            self.key_id, self.name, self.version
        )
    }
}

/// Why a component's signature was refused. Nothing is quoted from the
/// signature but what a pinned key signed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VerifySignatureError {
    /// No `<component>.minisig`.
    #[error(
        "no signature: {} does not exist (sign the component with `minisign -S -s <secret key> \
         -m <component> -t \"name=<name> version=<n>\"`)",
        .path.display()
    )]
    Missing {
        /// Where it was looked for.
        path: PathBuf,
    },
    /// The signature file could not be read (not a regular file, too large,
    /// outside the workspace).
    #[error("the signature {} could not be read", .path.display())]
    Read {
        /// Its path.
        path: PathBuf,
        /// Why.
        #[source]
        source: ReadFileError,
    },
    /// Not a minisign signature.
    #[error("malformed signature: {} is not a minisign signature", .path.display())]
    Malformed {
        /// Its path.
        path: PathBuf,
    },
    /// A legacy (not pre-hashed) signature, which this check does not take.
    #[error(
        "a legacy minisign signature (signed without pre-hashing); sign again with a current \
         minisign"
    )]
    Legacy,
    /// Signed by a key that is not pinned.
    #[error("signed by key {signed_by}, which is not pinned (pinned: {})", list(.pinned))]
    KeyNotPinned {
        /// The key id the signature names.
        signed_by: KeyId,
        /// The pinned keys' ids.
        pinned: Vec<KeyId>,
    },
    /// The signature does not verify: the component or the trusted comment
    /// changed after signing.
    #[error(
        "the signature by key {key_id} does not verify: the component (or the signature's \
         trusted comment) was changed after it was signed"
    )]
    Tampered {
        /// The pinned key it claims.
        key_id: KeyId,
    },
    /// The trusted comment lacks `name=` or `version=<unsigned integer>`,
    /// or gives one twice.
    #[error(
        "the signed trusted comment {problem}; sign with -t \"name=<name> version=<unsigned \
         integer>\""
    )]
    Claims {
        /// What is wrong with it.
        problem: &'static str,
    },
    /// Signed for another component.
    #[error(
        "signed as {signed:?}, but this hook expects {expected:?} (`signed.name`, else the hook's name)"
    )]
    WrongName {
        /// The signed name.
        signed: String,
        /// The name expected.
        expected: String,
    },
    /// An older build than the hook accepts: a rollback.
    #[error("rollback refused: signed version {version} is below min_version {min_version}")]
    Rollback {
        /// The signed version.
        version: u64,
        /// The hook's `signed.min_version`.
        min_version: u64,
    },
}

fn list(ids: &[KeyId]) -> String {
    if ids.is_empty() {
        return "none".into();
    }
    ids.iter()
        .map(KeyId::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Verifies that `signature` (the text of `path`) is a pinned key's
/// signature over exactly `bytes`, with the claims `expect` asks for.
pub fn verify(
    bytes: &[u8],
    (signature, path): (&[u8], &Path),
    keys: &[PinnedKey],
    expect: &Expect,
) -> Result<Verified, VerifySignatureError> {
    let malformed = || VerifySignatureError::Malformed {
        path: path.to_owned(),
    };
    let text = std::str::from_utf8(signature).map_err(|_| malformed())?;
    let parsed = minisign_verify::Signature::decode(text).map_err(|_| malformed())?;
    let signed_by = text
        .lines()
        .nth(1)
        .and_then(key_id_of)
        .ok_or_else(malformed)?;
    let key = keys.iter().find(|k| k.id == signed_by).ok_or_else(|| {
        VerifySignatureError::KeyNotPinned {
            signed_by,
            pinned: keys.iter().map(|k| k.id).collect(),
        }
    })?;
    match key.key.verify(bytes, &parsed, false) {
        Ok(()) => {}
        Err(minisign_verify::Error::UnexpectedAlgorithm) => {
            return Err(VerifySignatureError::Legacy);
        }
        Err(_) => return Err(VerifySignatureError::Tampered { key_id: key.id }),
    }
    let (name, version) = claims(parsed.trusted_comment())?;
    if name != expect.name {
        return Err(VerifySignatureError::WrongName {
            signed: name,
            expected: expect.name.clone(),
        });
    }
    if version < expect.min_version {
        return Err(VerifySignatureError::Rollback {
            version,
            min_version: expect.min_version,
        });
    }
    Ok(Verified {
        key_id: key.id,
        name,
        version,
    })
}

/// `name=` and `version=` from a verified trusted comment.
fn claims(comment: &str) -> Result<(String, u64), VerifySignatureError> {
    let claims = |problem| VerifySignatureError::Claims { problem };
    let (mut name, mut version) = (None, None);
    for word in comment.split_whitespace() {
        if let Some(n) = word.strip_prefix("name=") {
            if name.replace(n).is_some() {
                return Err(claims("gives name= twice"));
            }
        } else if let Some(v) = word.strip_prefix("version=") {
            let parsed = v
                .parse::<u64>()
                .map_err(|_| claims("has a version= that is not an unsigned integer"))?;
            if version.replace(parsed).is_some() {
                return Err(claims("gives version= twice"));
            }
        }
    }
    match (name, version) {
        (Some(n), Some(v)) if !n.is_empty() => Ok((n.to_owned(), v)),
        (None | Some(""), None) => Err(claims("has no name= and no version=")),
        (Some(_), None) => Err(claims("has no version=")),
        _ => Err(claims("has no name=")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Keys made with `minisign -G -W` (unencrypted), kept for these tests only.
    const KEY_A: &str = "RWT2hU4E4+QL+umARvDKXyS25DbesuNjMuOcZYDEwitCjMZvcA3EavWZ";
    const KEY_B: &str = "RWTIzCXU+WyzLFq+XJm1VBca2oFwTkCE0bRceHAuaOU4dr7+BebidQzy";

    fn signing(keys: &[&str], required: bool) -> Signing {
        parse(&serde_json::json!({"keys": keys, "required": required})).expect("valid")
    }

    fn ids(rule: &Rule) -> Vec<String> {
        rule.keys.iter().map(|k| k.id.to_string()).collect()
    }

    #[test]
    fn managed_required_binds_every_layer_with_only_managed_keys() {
        let (m, g) = (signing(&[KEY_A], true), signing(&[KEY_B], false));
        let rules = combine(Some(&m), Some(&g));
        assert!(rules.managed.required && rules.below.required);
        assert_eq!(ids(&rules.below), ids(&rules.managed));
        assert_eq!(ids(&rules.below).len(), 1);
        // Even a global `required` cannot add its key to the managed rule.
        let rules = combine(Some(&m), Some(&signing(&[KEY_B], true)));
        assert_eq!(ids(&rules.below), ids(&rules.managed));
        assert_eq!(rules.below.required_by, Some("the managed config"));
    }

    #[test]
    fn global_required_binds_global_and_workspace_with_global_and_managed_keys() {
        let (m, g) = (signing(&[KEY_A], false), signing(&[KEY_B], true));
        let rules = combine(Some(&m), Some(&g));
        assert!(!rules.managed.required);
        assert!(rules.below.required);
        assert_eq!(ids(&rules.below).len(), 2);
        assert_eq!(rules.below.required_by, Some("the global config"));
    }

    #[test]
    fn nothing_required_without_a_required_layer() {
        let rules = combine(None, Some(&signing(&[KEY_B], false)));
        assert!(!rules.managed.required && !rules.below.required);
        assert_eq!(ids(&rules.below).len(), 1);
        let rules = combine(None, None);
        assert!(rules.below.keys.is_empty());
    }

    #[test]
    fn a_key_that_is_not_the_base64_line_is_refused_by_index() {
        let err = parse(&serde_json::json!({
            "keys": [KEY_A, "untrusted comment: minisign public key 1234", 7],
            "required": true,
        }))
        .expect_err("refused");
        let fields: Vec<&str> = err.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(fields, ["signing.keys[1]", "signing.keys[2]"]);
    }

    #[test]
    fn required_must_be_said() {
        let err = parse(&serde_json::json!({"keys": [KEY_A]})).expect_err("refused");
        assert_eq!(err[0].0, "signing.required");
    }

    /// `minisign -S -s a.sec -m f -t "name=x version=3"` over "hi\n" (key A).
    const SIGNED: &str = "untrusted comment: signature from minisign secret key
RUT2hU4E4+QL+vvDUNpkKFFGczSDVvhUohqo4uPXao2duD/G5ZP/udiws3+zgFUQhtZ0uQ/+DqKKLfoe+3/C53LyT4krOMV1qQA=
trusted comment: name=x version=3
E7DGyevJbQ2uHtl0IvhKNfoupDlRMtwvr/FwcTH6aWKdE+GvHGDY+jBjaDms8ExsSet8cZo6nxDbq3XF0X5+DA==
";

    fn check(
        bytes: &[u8],
        sig: &str,
        keys: &[&str],
        name: &str,
        min: u64,
    ) -> Result<Verified, VerifySignatureError> {
        let keys = signing(keys, false).keys;
        let expect = Expect {
            name: name.into(),
            min_version: min,
        };
        verify(
            bytes,
            (sig.as_bytes(), Path::new("f.minisig")),
            &keys,
            &expect,
        )
    }

    #[test]
    fn each_refusal_is_its_own_error() {
        let ok = check(b"hi\n", SIGNED, &[KEY_A], "x", 3).expect("verifies");
        assert_eq!(ok.key_id.to_string(), "FA0BE4E3044E85F6");
        assert_eq!((ok.name.as_str(), ok.version), ("x", 3));
        let not_pinned = check(b"hi\n", SIGNED, &[KEY_B], "x", 0).unwrap_err();
        assert_eq!(
            not_pinned.to_string(),
            "signed by key FA0BE4E3044E85F6, which is not pinned (pinned: 2CB36CF9D425CCC8)"
        );
        assert!(matches!(
            check(b"hI\n", SIGNED, &[KEY_A], "x", 0),
            Err(VerifySignatureError::Tampered { .. })
        ));
        let comment = SIGNED.replace("version=3", "version=9");
        assert!(matches!(
            check(b"hi\n", &comment, &[KEY_A], "x", 0),
            Err(VerifySignatureError::Tampered { .. })
        ));
        assert!(matches!(
            check(b"hi\n", SIGNED, &[KEY_A], "y", 0),
            Err(VerifySignatureError::WrongName { .. })
        ));
        assert!(matches!(
            check(b"hi\n", SIGNED, &[KEY_A], "x", 4),
            Err(VerifySignatureError::Rollback {
                version: 3,
                min_version: 4
            })
        ));
        assert!(matches!(
            check(b"hi\n", "garbage", &[KEY_A], "x", 0),
            Err(VerifySignatureError::Malformed { .. })
        ));
    }

    #[test]
    fn trusted_comment_claims_are_read_once_each() {
        assert_eq!(claims("name=x version=3").ok(), Some(("x".into(), 3)));
        assert_eq!(
            claims("timestamp:1 name=x  version=3 file:y").ok(),
            Some(("x".into(), 3))
        );
        for bad in [
            "version=3",
            "name=x",
            "",
            "name=x version=-1",
            "name=x name=y version=1",
        ] {
            assert!(claims(bad).is_err(), "{bad}");
        }
    }
}
