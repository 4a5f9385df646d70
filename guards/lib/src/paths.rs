//! Paths as a guard can see them: resolved lexically against the agent's
//! working directory (`..` and `.` folded, `~` kept as the home), never
//! against the file system, which a guard cannot open. What that cannot
//! see (a symlink inside the workspace that points out of it, a variable
//! set outside the line) is said in the book, not guessed at here.

/// `path` made absolute against `cwd` (when it is relative and a `cwd` is
/// known) and folded: `a/./b/../c` → `a/c`. A leading `~` stays.
pub fn resolve(path: &str, cwd: Option<&str>) -> String {
    let joined = if path.starts_with('/') || path.starts_with('~') {
        path.to_owned()
    } else {
        match cwd {
            Some(cwd) if !cwd.is_empty() => format!("{}/{}", cwd.trim_end_matches('/'), path),
            _ => format!("./{path}"),
        }
    };
    let (prefix, rest) = if let Some(rest) = joined.strip_prefix('~') {
        ("~", rest)
    } else if let Some(rest) = joined.strip_prefix('/') {
        ("/", rest)
    } else {
        ("", joined.as_str())
    };
    let mut parts: Vec<&str> = Vec::new();
    for part in rest.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|p| *p != "..") {
                    parts.pop();
                } else if prefix.is_empty() || prefix == "~" {
                    parts.push("..");
                }
            }
            p => parts.push(p),
        }
    }
    // `~/..` is the folder holding the home: not the home any more.
    if prefix == "~" && parts.first() == Some(&"..") {
        return format!("/home/{}", parts[1..].join("/"))
            .trim_end_matches('/')
            .to_owned();
    }
    match prefix {
        "/" => format!("/{}", parts.join("/")),
        "~" if parts.is_empty() => "~".to_owned(),
        "~" => format!("~/{}", parts.join("/")),
        _ => parts.join("/"),
    }
}

/// Whether `path` (resolved) is `root` or beneath it.
pub fn beneath(path: &str, root: &str) -> bool {
    let root = root.trim_end_matches('/');
    if root.is_empty() {
        return path.starts_with('/');
    }
    path == root
        || path
            .strip_prefix(root)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// A user's home folder as an absolute path: `/home/NAME`, `/Users/NAME`, `/root`.
pub fn is_a_home(path: &str) -> bool {
    let parts: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    matches!(parts.as_slice(), ["", "home" | "Users", _] | ["", "root"])
}

/// The system's own folders: deleting, rewriting or re-permissioning them
/// breaks the machine.
pub const SYSTEM_DIRS: &[&str] = &[
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/opt",
    "/proc",
    "/root",
    "/sbin",
    "/srv",
    "/sys",
    "/usr",
    "/var",
    "/home",
    "/Users",
    "/System",
    "/Library",
    "/Applications",
    "/private",
    "/snap",
    "/mnt",
    "/media",
    "/run",
];

/// Whether `path` is `/`, a system folder or beneath one (`/var/tmp` aside).
pub fn is_system(path: &str) -> bool {
    path == "/" || SYSTEM_DIRS.iter().any(|d| beneath(path, d))
}

/// Folders where throwaway files live: deleting beneath them is routine.
pub const TEMP_DIRS: &[&str] = &["/tmp", "/var/tmp", "/private/tmp", "/dev/shm"];

/// Devices that are not disks: writing to them loses nothing.
pub fn harmless_device(path: &str) -> bool {
    let Some(dev) = path.strip_prefix("/dev/") else {
        return true;
    };
    matches!(
        dev,
        "null"
            | "zero"
            | "stdout"
            | "stderr"
            | "stdin"
            | "tty"
            | "random"
            | "urandom"
            | "full"
            | "ptmx"
            | "console"
    ) || dev.starts_with("fd/")
        || dev.starts_with("pts/")
        || dev.starts_with("shm/")
        || dev.starts_with("tcp/")
        || dev.starts_with("udp/")
}

/// Whether `word` could name a secret at all: a cheap test before
/// [`secret_kind`] (which resolves and lowercases), for the many words a
/// command line has that are no path (`test` in `cargo test`). Every
/// secret [`secret_kind`] knows has a `/`, a `.` or `~` in its path, or is
/// one of the bare names below.
pub fn may_be_secret(word: &str) -> bool {
    word.contains(['/', '.', '~'])
        || word.starts_with("id_")
        || matches!(
            word.to_ascii_lowercase().as_str(),
            "credentials"
                | "kubeconfig"
                | "cookies"
                | "_netrc"
                | "kwallet"
                | "login data"
                | "web data"
                | "local state"
        )
}

/// What kind of secret a path holds, if it looks like one: SSH and cloud
/// credentials, `.env` files, keychains, browser profiles, the agents' own
/// auth files, toolgate's own state. `path` is resolved (see [`resolve`]).
pub fn secret_kind(path: &str) -> Option<&'static str> {
    let lower = path.to_ascii_lowercase();
    let name = lower.rsplit('/').next().unwrap_or(&lower);
    let has = |part: &str| lower.contains(part);
    if has("/.ssh/") || lower.ends_with("/.ssh") || lower == "~/.ssh" {
        let public = name.ends_with(".pub")
            || name == "known_hosts"
            || name == "config"
            || name == "authorized_keys";
        return (!public).then_some("SSH keys");
    }
    if name.starts_with("id_rsa")
        || name.starts_with("id_ed25519")
        || name.starts_with("id_ecdsa")
        || name.starts_with("id_dsa")
    {
        return (!name.ends_with(".pub")).then_some("an SSH private key");
    }
    if name.ends_with(".pem")
        && !name.contains("cert")
        && !name.contains("chain")
        && !name.contains("ca-")
        || name.ends_with(".key")
        || name.ends_with(".p12")
        || name.ends_with(".pfx")
        || name.ends_with(".jks")
        || name.ends_with(".keystore")
    {
        return Some("a private key");
    }
    if has("/.aws/") || lower.ends_with("/.aws") {
        return Some("AWS credentials");
    }
    if has("/.config/gcloud")
        || has("application_default_credentials")
        || name.ends_with("-sa.json")
        || name == "service-account.json"
        || name == "credentials.json"
    {
        return Some("Google Cloud credentials");
    }
    if has("/.azure/") || lower.ends_with("/.azure") {
        return Some("Azure credentials");
    }
    if has("/.kube/config") || lower.ends_with("/.kube") || name == "kubeconfig" {
        return Some("a Kubernetes config with credentials");
    }
    if has("/.docker/config.json") {
        return Some("Docker registry credentials");
    }
    if matches!(
        name,
        ".netrc"
            | "_netrc"
            | ".git-credentials"
            | ".npmrc"
            | ".pypirc"
            | ".pgpass"
            | ".my.cnf"
            | "hosts.yml"
            | ".vault-token"
            | "credentials"
            | ".htpasswd"
            | "secrets.yml"
            | "secrets.yaml"
            | "secrets.json"
            | "master.key"
            | "terraform.tfvars"
            | ".boto"
            | ".s3cfg"
    ) && (name != "hosts.yml" || has("/gh/"))
    {
        return Some("a credentials file");
    }
    let example = ["example", "sample", "template", "dist", "defaults"]
        .iter()
        .any(|e| name.contains(e));
    // `.env.schema.ts`, `.env.d.ts`: code about the variables, not them.
    const CODE: &[&str] = &[
        ".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".py", ".rs", ".go", ".rb", ".java", ".kt",
        ".swift", ".md",
    ];
    let code = CODE.iter().any(|e| name.ends_with(e));
    if !example && !code && (name.starts_with(".env") || name.ends_with(".env")) {
        return Some("an .env file");
    }
    if has("/.gnupg")
        || has("/.password-store")
        || has("/keyrings/")
        || has("/library/keychains")
        || name.ends_with(".keychain")
        || name.ends_with(".keychain-db")
        || name == "kwallet"
    {
        return Some("a keychain");
    }
    if matches!(
        name,
        "login data"
            | "cookies"
            | "cookies.sqlite"
            | "key4.db"
            | "key3.db"
            | "logins.json"
            | "web data"
            | "local state"
    ) || has("/.mozilla/firefox/")
        || has("/google-chrome/")
        || has("/chromium/")
        || has("/bravesoftware/")
        || has("/application support/google/chrome")
    {
        return Some("a browser profile");
    }
    // Secrets mounted into a container: Kubernetes' service-account token,
    // Docker's and Compose's `/run/secrets`.
    if lower.starts_with("/var/run/secrets/") || lower.starts_with("/run/secrets/") {
        return Some("a secret mounted into the container");
    }
    if has("/.terraform.d/credentials.tfrc.json") {
        return Some("Terraform's API tokens");
    }
    if has("/.config/op/")
        || lower.ends_with("/.config/op")
        || has("/.op/")
        || lower.ends_with("/.op")
    {
        return Some("the 1Password CLI's configuration and sessions");
    }
    // The GitHub CLI's folder as a whole (`grep -r token ~/.config/gh/`,
    // `tar c ~/.config/gh`) holds its token; `config.yml` alone does not.
    if lower.trim_end_matches('/').ends_with("/.config/gh") {
        return Some("the GitHub CLI's folder, which holds its token");
    }
    if has("/.claude/.credentials.json")
        || has("/.codex/auth.json")
        || has("/.gemini/oauth_creds.json")
        || has("/.qwen/oauth_creds.json")
        || has("/.config/gh/hosts.yml")
        || has("/.copilot/") && name.contains("token")
        || has("/.local/share/opencode/auth.json")
        || has("/.config/github-copilot/")
    {
        return Some("an agent's own credentials");
    }
    if has("/.config/toolgate")
        || has("/.toolgate/trust")
        || has("/.local/state/toolgate")
        || has("/.cache/toolgate")
        || beneath(&lower, "/etc/toolgate")
    {
        return Some("toolgate's own state");
    }
    if matches!(
        lower.as_str(),
        "/etc/shadow" | "/etc/gshadow" | "/etc/sudoers" | "/etc/master.passwd"
    ) || lower.starts_with("/etc/ssh/ssh_host_") && !name.ends_with(".pub")
    {
        return Some("the system's password or host-key files");
    }
    if lower.starts_with("/proc/") && (name == "environ" || name == "mem" || name == "maps") {
        return Some("another process's memory or environment");
    }
    None
}

/// Files and folders that configure the agents' hooks and sandboxes, and
/// toolgate itself: changing them turns the guard off.
pub fn guard_config(path: &str) -> Option<&'static str> {
    let lower = path.to_ascii_lowercase();
    let has = |part: &str| lower.contains(part);
    let at_or_in = |dir: &str| lower.ends_with(dir) || has(&format!("{dir}/"));
    if at_or_in(".claude")
        && !has(".claude/commands")
        && !has(".claude/agents")
        && !has("claude.md")
    {
        return Some("Claude Code's settings");
    }
    if at_or_in(".codex")
        || at_or_in(".gemini")
        || at_or_in(".qwen")
        || at_or_in(".cursor")
        || has(".github/hooks")
        || has(".copilot/hooks")
        || has("opencode/plugin")
        || at_or_in(".config/opencode")
    {
        return Some("an agent's hook settings");
    }
    if at_or_in(".toolgate")
        || at_or_in(".config/toolgate")
        || beneath(&lower, "/etc/toolgate")
        || has("/toolgate/hooks.json")
    {
        return Some("toolgate's own configuration");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_dot_folds_lexically_and_leaves_the_workspace() {
        assert_eq!(resolve("../../etc", Some("/w/p")), "/etc");
        assert_eq!(resolve("a/./b/../c", Some("/w")), "/w/a/c");
        assert_eq!(resolve("~/x/..", None), "~");
        assert_eq!(resolve("/", Some("/w")), "/");
        assert_eq!(resolve("/..", Some("/w")), "/");
        assert_eq!(resolve("~/..", None), "/home");
    }

    /// The cheap test never rules out a name [`secret_kind`] would flag.
    #[test]
    fn may_be_secret_lets_through_every_secret_name() {
        for name in [
            "credentials",
            "kubeconfig",
            "id_rsa",
            "Cookies",
            ".env",
            "~/.ssh",
            "key4.db",
        ] {
            assert!(may_be_secret(name), "{name}");
            assert!(secret_kind(&resolve(name, Some("/w"))).is_some(), "{name}");
        }
        assert!(!may_be_secret("test"));
    }

    #[test]
    fn the_secret_files_are_told_from_their_public_neighbours() {
        assert!(secret_kind("~/.ssh/id_ed25519").is_some());
        assert!(secret_kind("~/.ssh/id_ed25519.pub").is_none());
        assert!(secret_kind("/w/.env").is_some());
        assert!(secret_kind("/w/.env.example").is_none());
        assert!(secret_kind("~/.aws/credentials").is_some());
        assert!(secret_kind("/w/src/main.rs").is_none());
    }
}
