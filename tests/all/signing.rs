//! Signed components (README "Signed components", crates/toolgate-seam/src/signing.rs): real
//! minisign keys and signatures made by Debian's `minisign` (test.sh installs
//! it), over the suite's WAT-built guests. Each refusal says what failed, and
//! happens before anything is compiled.

use crate::guests;
use crate::serve_http::claude_pre;
use crate::support::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use toolgate::{BindingSpec, Decision, Request};

/// Two unencrypted key pairs, made once per run: `a` is pinned, `b` is not.
pub(crate) struct Keys {
    dir: tempfile::TempDir,
    pub(crate) a: Key,
    pub(crate) b: Key,
}

pub(crate) struct Key {
    /// The base64 line of the `.pub`, as pinned in hooks.json.
    pub(crate) public: String,
    /// The key id minisign prints.
    pub(crate) id: String,
    secret: PathBuf,
}

pub(crate) fn keys() -> &'static Keys {
    static KEYS: OnceLock<Keys> = OnceLock::new();
    KEYS.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let make = |name: &str| {
            let (public, secret) = (
                dir.path().join(format!("{name}.pub")),
                dir.path().join(format!("{name}.sec")),
            );
            succeeded(
                Command::new("minisign")
                    .args(["-G", "-W", "-p"])
                    .arg(&public)
                    .arg("-s")
                    .arg(&secret),
            );
            let text = std::fs::read_to_string(&public).unwrap();
            let mut lines = text.lines();
            let id = lines
                .next()
                .and_then(|l| l.rsplit(' ').next())
                .expect("minisign names the key id")
                .to_owned();
            Key {
                public: lines.next().expect("the key line").to_owned(),
                id,
                secret,
            }
        };
        let (a, b) = (make("a"), make("b"));
        Keys { dir, a, b }
    })
}

/// Signs `file` with `key`, the trusted comment `comment`.
pub(crate) fn sign(key: &Key, file: &Path, comment: &str) {
    succeeded(
        Command::new("minisign")
            .arg("-S")
            .arg("-s")
            .arg(&key.secret)
            .arg("-m")
            .arg(file)
            .args(["-t", comment]),
    );
}

/// The deny guest copied to `dir/guard.wasm`: when it runs, the call is
/// denied with its own reason.
fn component(dir: &Path) -> PathBuf {
    let path = dir.join("guard.wasm");
    std::fs::copy(guests::path("deny"), &path).unwrap();
    path
}

const GUEST_REASON: &str = "no force-pushing from a sandbox";

/// The global config: `signing` with key `a` pinned, and `hooks`.
fn global(fx: &Fixture, required: bool, hooks: Value) {
    let text = json!({
        "schema": 1,
        "signing": {"keys": [keys().a.public], "required": required},
        "hooks": hooks,
    });
    std::fs::write(fx.global().join("hooks.json"), text.to_string()).unwrap();
}

fn guard(extra: Value) -> Value {
    let mut hook = json!({"name": "guard", "wasm": "guard.wasm"});
    if let (Value::Object(h), Value::Object(e)) = (&mut hook, extra) {
        h.extend(e);
    }
    hook
}

fn load(fx: &Fixture) -> Result<toolgate::Config, toolgate::ConfigError> {
    loader(&fx.workspace()).global_dir(fx.global()).load()
}

/// The one problem loading reports: a load failure naming the hook.
fn refusal(fx: &Fixture) -> String {
    let err = load(fx).expect_err("the component is refused");
    let text = err.to_string();
    assert!(
        text.contains("(\"guard\"): field `wasm`") && text.contains("signature refused"),
        "{text}"
    );
    text
}

/// A guard signed with key `a` as `name=guard version=3`, required.
fn signed(fx: &Fixture, extra: Value) -> PathBuf {
    let wasm = component(&fx.global());
    sign(&keys().a, &wasm, "name=guard version=3");
    global(fx, true, json!([guard(extra)]));
    wasm
}

#[tokio::test]
async fn a_component_signed_by_a_pinned_key_runs() {
    let fx = Fixture::new();
    signed(&fx, json!({"signed": {"min_version": 3}}));
    let config = load(&fx).expect("a signed component loads");
    let BindingSpec::Wasm(spec) = &config.hooks()[0].binding else {
        panic!("a wasm hook")
    };
    let verified = spec.component.signature.as_ref().expect("it was verified");
    assert_eq!(verified.key_id.to_string(), keys().a.id);
    assert_eq!((verified.name.as_str(), verified.version), ("guard", 3));
    let outcome = toolgate::HookRunner::builder()
        .config(config)
        .build()
        .pre_tool_use(&Request::pre("shell", json!({})))
        .await;
    assert_eq!(
        outcome.decision,
        Decision::Deny {
            reason: GUEST_REASON.into()
        },
        "the guest itself decided"
    );
}

#[test]
fn an_unsigned_component_is_refused_when_signing_is_required() {
    let fx = Fixture::new();
    component(&fx.global());
    global(&fx, true, json!([guard(json!({}))]));
    let text = refusal(&fx);
    assert!(
        text.contains("no signature:") && text.contains("guard.wasm.minisig does not exist"),
        "{text}"
    );
}

#[test]
fn a_component_signed_by_a_key_not_pinned_is_refused_naming_both_key_ids() {
    let fx = Fixture::new();
    let wasm = component(&fx.global());
    sign(&keys().b, &wasm, "name=guard version=3");
    global(&fx, true, json!([guard(json!({}))]));
    let text = refusal(&fx);
    assert!(
        text.contains(&format!(
            "signed by key {}, which is not pinned (pinned: {})",
            keys().b.id,
            keys().a.id
        )),
        "{text}"
    );
}

#[test]
fn a_component_changed_after_signing_is_refused_as_tampered() {
    let fx = Fixture::new();
    let wasm = signed(&fx, json!({}));
    let mut bytes = std::fs::read(&wasm).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&wasm, bytes).unwrap();
    let text = refusal(&fx);
    assert!(
        text.contains(&format!(
            "the signature by key {} does not verify: the component",
            keys().a.id
        )),
        "{text}"
    );
}

#[test]
fn a_trusted_comment_changed_after_signing_is_refused_as_tampered() {
    let fx = Fixture::new();
    let wasm = signed(&fx, json!({"signed": {"min_version": 3}}));
    let sig = toolgate::signing::signature_path(&wasm);
    let text = std::fs::read_to_string(&sig).unwrap();
    std::fs::write(&sig, text.replace("version=3", "version=9")).unwrap();
    assert!(refusal(&fx).contains("does not verify"));
}

#[test]
fn a_version_below_min_version_is_refused_as_a_rollback_naming_both_numbers() {
    let fx = Fixture::new();
    let wasm = component(&fx.global());
    sign(&keys().a, &wasm, "name=guard version=2");
    global(
        &fx,
        true,
        json!([guard(json!({"signed": {"min_version": 3}}))]),
    );
    let text = refusal(&fx);
    assert!(
        text.contains("rollback refused: signed version 2 is below min_version 3"),
        "{text}"
    );
}

#[test]
fn a_component_signed_under_another_name_is_refused() {
    let fx = Fixture::new();
    signed(&fx, json!({"signed": {"name": "secrets-guard"}}));
    let text = refusal(&fx);
    assert!(
        text.contains("signed as \"guard\", but this hook expects \"secrets-guard\""),
        "{text}"
    );
}

#[test]
fn a_trusted_comment_without_name_or_version_is_refused() {
    let fx = Fixture::new();
    let wasm = component(&fx.global());
    sign(&keys().a, &wasm, "name=guard");
    global(&fx, true, json!([guard(json!({}))]));
    assert!(refusal(&fx).contains("the signed trusted comment has no version="));
    sign(&keys().a, &wasm, "timestamp:1700000000");
    assert!(refusal(&fx).contains("has no name= and no version="));
}

#[test]
fn a_malformed_signature_is_refused() {
    let fx = Fixture::new();
    let wasm = signed(&fx, json!({}));
    std::fs::write(
        toolgate::signing::signature_path(&wasm),
        "not a signature\n",
    )
    .unwrap();
    assert!(refusal(&fx).contains("malformed signature:"));
}

/// The check runs on the bytes read, before the compile cache is looked up
/// or written: a refused component leaves no compiled entry behind, and the
/// same component, once signed, does.
#[test]
fn a_refused_component_is_never_compiled() {
    let fx = Fixture::new();
    let cache = tempfile::tempdir().unwrap();
    let compiled = || {
        std::fs::read_dir(cache.path())
            .unwrap()
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "cwasm"))
            .count()
    };
    let wasm = component(&fx.global());
    global(&fx, true, json!([guard(json!({}))]));
    let with_cache = || {
        loader(&fx.workspace())
            .global_dir(fx.global())
            .wasm(toolgate::wasm::WasmOptions::new().cache_dir(cache.path()))
            .load()
    };
    assert!(with_cache().is_err());
    assert_eq!(
        compiled(),
        0,
        "nothing was compiled for a refused component"
    );
    sign(&keys().a, &wasm, "name=guard version=1");
    with_cache().expect("signed, it loads");
    assert_eq!(compiled(), 1, "the control: a loaded component is cached");
    // Cached now, and tampered: refused all the same (the cache is looked
    // up only after the check).
    sign(&keys().b, &wasm, "name=guard version=1");
    assert!(with_cache().is_err());
}

#[test]
fn without_required_an_unsigned_component_runs_unless_its_hook_asks_for_a_signature() {
    let fx = Fixture::new();
    component(&fx.global());
    global(&fx, false, json!([guard(json!({}))]));
    let config = load(&fx).expect("not required: loads unsigned");
    let BindingSpec::Wasm(spec) = &config.hooks()[0].binding else {
        panic!("a wasm hook")
    };
    assert!(spec.component.signature.is_none());
    // A hook that gives `signed` is checked with the pinned keys anyway.
    global(&fx, false, json!([guard(json!({"signed": {}}))]));
    assert!(refusal(&fx).contains("no signature:"));
}

#[test]
fn a_workspace_cannot_set_signing() {
    let fx = Fixture::new();
    fx.workspace_raw(
        &json!({"schema": 1, "signing": {"keys": [keys().a.public], "required": false}, "hooks": []})
            .to_string(),
    );
    let text = load(&fx).expect_err("refused").to_string();
    assert!(
        text.contains("field `signing`: only the operator (the managed or global config) decides which keys sign"),
        "{text}"
    );
}

#[test]
fn a_workspace_component_is_bound_by_the_global_requirement() {
    let fx = Fixture::new();
    global(&fx, true, json!([]));
    let wasm = component(&fx.workspace());
    let hooks = json!({"schema": 1, "hooks": [guard(json!({}))]}).to_string();
    fx.workspace_raw(&hooks);
    assert!(refusal(&fx).contains("no signature:"));
    sign(&keys().a, &wasm, "name=guard version=1");
    load(&fx).expect("signed by a pinned key, it loads");
}

#[test]
fn a_pinned_key_that_is_not_the_base64_line_is_refused_naming_its_index() {
    let fx = Fixture::new();
    let pub_file = keys().dir.path().join("a.pub");
    let text =
        json!({"schema": 1, "signing": {"keys": [keys().a.public, pub_file], "required": true}});
    std::fs::write(fx.global().join("hooks.json"), text.to_string()).unwrap();
    let err = load(&fx).expect_err("refused").to_string();
    assert!(
        err.contains("field `signing.keys[1]`: not a minisign public key"),
        "{err}"
    );
}

#[test]
fn a_command_hook_cannot_ask_for_a_signature() {
    let fx = Fixture::new();
    let script = fx.global_script("g.sh", "#!/bin/sh\necho '{\"decision\":\"allow\"}'\n");
    global(
        &fx,
        false,
        json!([{"name": "cmd", "command": [script], "signed": {}}]),
    );
    let err = load(&fx).expect_err("refused").to_string();
    assert!(
        err.contains("field `signed`: only for `wasm` hooks; this is a `command` hook"),
        "{err}"
    );
}

/// Through the binary: the refused hook blocks the agent's call (Claude
/// Code's exit 2), `toolgate hooks --check` names it, and once signed
/// `toolgate hooks` shows the key, name and version that verified.
#[test]
fn the_binary_blocks_on_a_refused_component_and_lists_what_verified() {
    let fx = Fixture::new();
    let wasm = component(&fx.global());
    global(&fx, true, json!([guard(json!({}))]));
    let run = |args: &[&str], stdin: &str| {
        run_with_stdin(
            toolgate()
                .args(args)
                .arg("--workspace")
                .arg(fx.workspace())
                .env("TOOLGATE_CONFIG_DIR", fx.global()),
            stdin,
        )
    };
    let call = claude_pre(&fx.workspace(), "ls");
    let out = run(&["claude-code"], &call);
    assert_eq!(out.status.code(), Some(2), "blocked: {}", stderr(&out));
    assert!(stderr(&out).contains("no signature"), "{}", stderr(&out));
    let out = run(&["hooks", "--check"], "");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("(\"guard\"): field `wasm`") && stderr(&out).contains("no signature"),
        "{}",
        stderr(&out)
    );

    sign(&keys().a, &wasm, "name=guard version=7");
    let out = run(&["claude-code"], &call);
    // Claude Code's structured deny (exit 0, permissionDecision "deny"),
    // with the guest's own reason: the guest ran.
    let answer = stdout_json(&out);
    assert_eq!(
        answer["hookSpecificOutput"]["permissionDecision"], "deny",
        "{answer}"
    );
    assert!(answer.to_string().contains(GUEST_REASON), "{answer}");
    let out = succeeded(
        toolgate()
            .args(["hooks", "--workspace"])
            .arg(fx.workspace())
            .env("TOOLGATE_CONFIG_DIR", fx.global())
            .env("COLUMNS", "400"),
    );
    let listing = String::from_utf8_lossy(&out.stdout);
    assert!(
        listing.contains(&format!(
            "signed by key {}, name=guard version=7",
            keys().a.id
        )),
        "{listing}"
    );
    assert!(
        listing.contains("signing: required by the global config"),
        "{listing}"
    );
}

/// A root-owned managed directory (whose ancestors only root may write: the
/// loader checks each) holding `hooks.json` = `config`.
pub(crate) fn managed_dir(config: Value) -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let base = crate::support::root_only_dir();
    let file = base.path().join("hooks.json");
    std::fs::write(&file, config.to_string()).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    base
}

#[test]
fn a_managed_signing_requirement_binds_the_global_config_and_only_managed_keys_count() {
    // The managed layer pins key `a` and requires signatures; the user's
    // global config pins its own key `b` and says signing is not required.
    // Neither loosens the managed rule: a global component signed by `b`
    // is refused, one signed by `a` runs.
    let managed = managed_dir(json!({
        "schema": 1,
        "signing": {"keys": [keys().a.public], "required": true},
    }));
    let fx = Fixture::new();
    let wasm = component(&fx.global());
    sign(&keys().b, &wasm, "name=guard version=3");
    let text = json!({
        "schema": 1,
        "signing": {"keys": [keys().b.public], "required": false},
        "hooks": [guard(json!({}))],
    });
    std::fs::write(fx.global().join("hooks.json"), text.to_string()).unwrap();
    let load = || {
        loader(&fx.workspace())
            .managed_dir(managed.path())
            .global_dir(fx.global())
            .load()
    };
    let err = load().expect_err("a key the managed layer did not pin does not count");
    let text = err.to_string();
    assert!(
        text.contains("signature refused") && text.contains(&keys().b.id),
        "{text}"
    );
    sign(&keys().a, &wasm, "name=guard version=3");
    let config = load().expect("signed by the managed key, it loads");
    let BindingSpec::Wasm(spec) = &config.hooks()[0].binding else {
        panic!("a wasm hook")
    };
    let verified = spec.component.signature.as_ref().expect("it was verified");
    assert_eq!(verified.key_id.to_string(), keys().a.id);
}
