//! The scenarios of a bench run, set up in the order they are measured:
//! the in-process rows (one per guest, a chain of three, subprocess hooks),
//! then the agent path (fresh processes, through a server, one socket
//! request) and a fresh `toolgate check`.

use super::scenario::{self, Allow, Kind, Scenario};
use super::{BenchError, Guest, Options};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Command;
use toolgate::config::HookDef;
use toolgate::wasm::{self, WasmOptions};
use toolgate::{Config, HookRunner, Request};

/// How every row of the lean client through the server begins (the
/// budget finds them by it, with [`lean_client_of`]).
const LEAN_ROW: &str = "agent path via the lean client";

/// What follows the client's name in its row.
const THROUGH_SERVER: &str = " and `toolgate serve` + ";

/// The row of a lean client through the server, named by `named`.
fn lean_row_name(named: &str, what: &str) -> String {
    format!("{LEAN_ROW} {named}{THROUGH_SERVER}{what}")
}

/// Which lean client a row measures (`` `toolgate-hook` `` or `at PATH`,
/// after a space), or `None` when the row is not a lean client's: the
/// inverse of [`lean_row_name`], so the budget cannot drift from it.
pub(crate) fn lean_client_of(scenario: &str) -> Option<&str> {
    let rest = scenario.strip_prefix(LEAN_ROW)?;
    Some(rest.split(THROUGH_SERVER).next().unwrap_or(rest))
}

/// The socket request's floor: the same client against a thread that
/// answers without reading (`scenario::floor_server`).
pub(crate) const SOCKET_FLOOR_ROW: &str =
    "the same request over a Unix socket to a thread that answers at once (the floor)";

/// The row of a C program that does nothing, spawned as an agent spawns
/// its hook (the budget's floor for the lean client).
pub(crate) const DO_NOTHING_ROW: &str =
    "a C program that reads its input and exits, spawned as the agent spawns a hook";

/// A row of the agent path to add once the server runs: the hook as
/// hooks.json gives it, the call, and the guest whose cache entry to warm.
pub(crate) struct AgentRow {
    what: String,
    hook: serde_json::Value,
    request: Request,
    guest: Option<PathBuf>,
}

/// The scenarios as they are set up, and what the later ones need.
pub(crate) struct Setup<'a> {
    options: &'a Options,
    root: &'a Path,
    /// The compile cache the fresh processes use.
    cache: PathBuf,
    /// The common call: a pre shell call.
    pub(crate) pre: Request,
    pub(crate) scenarios: Vec<Scenario>,
    agent: Vec<AgentRow>,
    /// The servers of the served agent rows, one per row: a server answers
    /// only with its own global config, and each row has its own.
    servers: Vec<scenario::Server>,
}

impl<'a> Setup<'a> {
    /// Starts with the in-process interceptor row.
    pub(crate) fn new(options: &'a Options, root: &'a Path) -> Self {
        let pre = Request::pre("shell", json!({"command": "git push origin main"}));
        let mut setup = Setup {
            options,
            root,
            // Cold-compile and `check` measurements use caches under the
            // bench's own folder, so cold and warm are controlled whatever
            // the user's cache holds.
            cache: root.join("cache"),
            pre: pre.clone(),
            scenarios: Vec::new(),
            agent: Vec::new(),
            servers: Vec::new(),
        };
        setup.push(
            "in-process interceptor".into(),
            Kind::Chain(
                HookRunner::builder().interceptor("allow", Allow).build(),
                pre,
            ),
            2000,
        );
        setup
    }

    /// Adds a scenario of `n` calls a batch (a tenth, at least two, when
    /// quick).
    fn push(&mut self, name: String, kind: Kind, n: usize) {
        let scale = if self.options.quick { 0.1 } else { 1.0 };
        self.scenarios.push(Scenario {
            name,
            kind,
            batch: ((n as f64 * scale) as usize).max(2),
            samples: Vec::new(),
        });
    }

    /// One in-process row per guest, and its agent-path row; then a chain
    /// of three of the reference guest.
    pub(crate) fn wasm_rows(
        &mut self,
        guests: &[Guest],
        reference: &Guest,
    ) -> Result<(), BenchError> {
        for (name, path) in guests {
            let (request, config) = guest_files(path, &self.pre)?;
            let mut hook = HookDef::wasm("g", path).events(&[request.event]);
            let mut file_hook = json!({"name": "g", "wasm": path, "event": request.event.as_str()});
            if let Some(config) = config {
                file_hook["config"] = config.clone();
                hook = hook.config(config);
            }
            self.agent.push(AgentRow {
                what: format!("wasm: {name}"),
                hook: file_hook,
                request: request.clone(),
                guest: Some(path.clone()),
            });
            let kind = Kind::Chain(chain(self.root, [hook])?, request);
            self.push(format!("wasm: {name}"), kind, 300);
        }
        let three = ["a", "b", "c"].map(|n| HookDef::wasm(n, &reference.1));
        let kind = Kind::Chain(chain(self.root, three)?, self.pre.clone());
        self.push(format!("wasm chain of 3 × {}", reference.0), kind, 200);
        Ok(())
    }

    /// Subprocess hooks: a native binary (when there is a C compiler), a
    /// bash script and a Python script; the scripts also on the agent path.
    pub(crate) fn subprocess_rows(&mut self) -> Result<(), BenchError> {
        use std::os::unix::fs::PermissionsExt;
        let hooks_dir = self.root.join("hooks");
        std::fs::create_dir_all(&hooks_dir)?;
        let mut rows = Vec::new();
        if let Some(native) = compile_c(&hooks_dir, "allow-native", scenario::NATIVE_HOOK_C) {
            rows.push(("subprocess: native binary (C)", native, 20));
        } else {
            (self.options.progress)("no C compiler (cc): the native subprocess row is left out");
        }
        for (name, file, text, n) in [
            (
                "subprocess: bash script",
                "allow.sh",
                scenario::BASH_HOOK,
                10,
            ),
            (
                "subprocess: python script",
                "allow.py",
                scenario::PYTHON_HOOK,
                4,
            ),
        ] {
            let path = hooks_dir.join(file);
            std::fs::write(&path, text)?;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
            rows.push((name, path, n));
        }
        for (name, program, n) in rows {
            let hook = HookDef::command("p", [program.to_string_lossy()]);
            let kind = Kind::Chain(chain(self.root, [hook])?, self.pre.clone());
            self.push(name.into(), kind, n);
            if !name.contains("native") {
                self.agent.push(AgentRow {
                    what: name.replace("subprocess: ", ""),
                    hook: json!({"name": "p", "command": [program]}),
                    request: self.pre.clone(),
                    guest: None,
                });
            }
        }
        Ok(())
    }

    /// The agent path: `toolgate claude-code` as a fresh process per call
    /// with one hook (warm compile cache), on its own and through the
    /// server at `socket`; and one request straight over the socket for
    /// the reference guest.
    pub(crate) fn agent_rows(
        &mut self,
        server: &scenario::Server,
        reference: &str,
    ) -> Result<(), BenchError> {
        // The children are one-shot processes: their cache entries are
        // keyed by that engine, so the cache is warmed with the same one.
        let one_shot = WasmOptions::new()
            .cache_dir(&self.cache)
            .allocator(wasm::Allocator::OneShot);
        let mut served = Vec::new();
        for (i, row) in std::mem::take(&mut self.agent).into_iter().enumerate() {
            let AgentRow {
                what,
                hook,
                request,
                guest,
            } = row;
            if let Some(guest) = guest {
                (self.options.progress)(&format!(
                    "warming the compile cache for the agent path: {what}…"
                ));
                wasm::load_component(&guest, &one_shot).map_err(|source| BenchError::Load {
                    guest: what.clone(),
                    source,
                })?;
            }
            let dir = self.root.join(format!("agent-{i}"));
            std::fs::create_dir_all(&dir)?;
            std::fs::write(
                dir.join("hooks.json"),
                json!({"schema": 1, "hooks": [hook]}).to_string(),
            )?;
            let kind = self.agent_process(&dir, &request, None);
            self.push(
                format!("agent path: `toolgate claude-code` + {what}"),
                kind,
                5,
            );
            served.push((what, dir, request));
        }
        for (i, (what, dir, request)) in served.into_iter().enumerate() {
            // A server whose own global config is this row's (a server
            // refuses a caller whose global config differs from its own).
            let own = scenario::Server::spawn(
                {
                    let mut cmd = std::process::Command::new(&self.options.exe);
                    cmd.arg("serve")
                        .arg("--socket")
                        .arg(self.root.join(format!("serve-{i}/serve.sock")))
                        .env("TOOLGATE_CONFIG_DIR", &dir)
                        // The main server's cache, warm from the in-process
                        // rows (the same pooling engine): not the one-shot
                        // processes' (another engine, so every guest would
                        // compile again in each row's server).
                        .env("TOOLGATE_CACHE_DIR", self.root.join("cache-chains"));
                    cmd
                },
                self.root.join(format!("serve-{i}/serve.sock")),
                None,
            )?;
            let row_socket = own.socket.clone();
            self.servers.push(own);
            let kind = self.agent_process(&dir, &request, Some(row_socket.clone()));
            self.push(format!("agent path via `toolgate serve` + {what}"), kind, 5);
            if what.contains(reference) {
                self.lean_row(&row_socket, &dir, &request, &what);
                let client = scenario::SocketClient::connect(&row_socket, &dir, &request)?;
                self.push(
                    format!("one request over the socket to `toolgate serve` ({what})"),
                    Kind::Socket(client),
                    300,
                );
                let floor = scenario::floor_server(&dir)?;
                let client = scenario::SocketClient::connect(&floor, &dir, &request)?;
                self.push(SOCKET_FLOOR_ROW.into(), Kind::Socket(client), 300);
                // Claude Code's http hook: its input names the cwd, the
                // server's own global config (`http_global`) the hook.
                let mut http = request.clone();
                http.cwd = Some(self.http_global().display().to_string());
                let addr = server.http.as_ref().ok_or(BenchError::Missing(
                    "`toolgate serve --http` said no address",
                ))?;
                let client = scenario::HttpClient::connect(addr, &scenario::agent_input(&http))?;
                self.push(
                    format!("HTTP request to the server ({what})"),
                    Kind::Http(client),
                    300,
                );
            }
        }
        Ok(())
    }

    /// The same call through the lean client (`toolgate-hook claude-code`,
    /// beside the bench's `toolgate`) and the server at `socket`, then
    /// through each further build of it the options name; the one beside
    /// is skipped, saying so, when it is not built.
    fn lean_row(&mut self, socket: &Path, dir: &Path, request: &Request, what: &str) {
        let beside = self
            .options
            .exe
            .with_file_name(toolgate::agent::LEAN_CLIENT);
        let mut clients = Vec::new();
        if beside.is_file() {
            clients.push((beside, "`toolgate-hook`".to_owned()));
        } else {
            (self.options.progress)(&format!(
                "no lean client at {}: its row is skipped",
                beside.display()
            ));
        }
        for other in &self.options.lean_clients {
            clients.push((other.clone(), format!("at {}", other.display())));
        }
        if clients.is_empty() {
            return;
        }
        for (lean, named) in clients {
            let mut kind = self.agent_process(dir, request, Some(socket.to_owned()));
            if let Kind::Process { exe, .. } = &mut kind {
                *exe = lean;
            }
            self.push(lean_row_name(&named, what), kind, 5);
        }
        self.do_nothing_row(dir, request);
    }

    /// A C program that reads its input and exits, spawned exactly as the
    /// lean client is (same arguments, environment, stdin and pipes), in
    /// the same rounds: the floor the lean client is measured against
    /// ([`DO_NOTHING_ROW`]). Skipped, saying so, without a C compiler.
    fn do_nothing_row(&mut self, dir: &Path, request: &Request) {
        let Some(program) = compile_c(self.root, "do-nothing", scenario::DO_NOTHING_C) else {
            (self.options.progress)(
                "no C compiler (cc): the do-nothing row the lean client is measured against is left out",
            );
            return;
        };
        let mut kind = self.agent_process(dir, request, None);
        if let Kind::Process { exe, .. } = &mut kind {
            *exe = program;
        }
        self.push(DO_NOTHING_ROW.into(), kind, 5);
    }

    /// The global config of the server's HTTP requests: the reference
    /// guest's agent row's hook (written by [`Setup::write_http_global`]).
    pub(crate) fn http_global(&self) -> PathBuf {
        self.root.join("http")
    }

    /// Writes [`Setup::http_global`] for the agent row of `reference`,
    /// before the server starts.
    pub(crate) fn write_http_global(&self, reference: &str) -> Result<PathBuf, BenchError> {
        let dir = self.http_global();
        std::fs::create_dir_all(&dir)?;
        let row = self
            .agent
            .iter()
            .find(|row| row.what.contains(reference))
            .ok_or(BenchError::Missing("the reference guest's agent row"))?;
        std::fs::write(
            dir.join("hooks.json"),
            json!({"schema": 1, "hooks": [row.hook]}).to_string(),
        )?;
        Ok(dir)
    }

    /// `toolgate claude-code` on `request` with `dir` as its config,
    /// through `socket`'s server or (`None`) on its own.
    fn agent_process(&self, dir: &Path, request: &Request, socket: Option<PathBuf>) -> Kind {
        Kind::Process {
            exe: self.options.exe.clone(),
            command: "claude-code",
            workspace: dir.to_owned(),
            cache: self.cache.clone(),
            stdin: scenario::agent_input(request),
            socket,
        }
    }

    /// `toolgate check` as a fresh process with a warm cache: its hooks
    /// are a real workspace config.
    pub(crate) fn check_row(&mut self, reference: &Guest) -> Result<(), BenchError> {
        let check_ws = self.root.join("ws-check");
        std::fs::create_dir_all(&check_ws)?;
        std::fs::write(
            check_ws.join("hooks.json"),
            json!({"schema": 1, "hooks": [{"name": "g", "wasm": &reference.1}]}).to_string(),
        )?;
        // Warmed with the engine the one-shot children use.
        let one_shot = WasmOptions::new()
            .cache_dir(&self.cache)
            .allocator(wasm::Allocator::OneShot);
        wasm::load_component(&reference.1, &one_shot).map_err(|source| BenchError::Load {
            guest: reference.0.clone(),
            source,
        })?;
        let stdin = json!({"event": "pre_tool_use", "tool": "shell", "input": {"command": "git push origin main"}});
        let kind = Kind::Process {
            exe: self.options.exe.clone(),
            command: "check",
            workspace: check_ws,
            cache: self.cache.clone(),
            stdin: stdin.to_string().into_bytes(),
            socket: None,
        };
        self.push(
            format!("`toolgate check` process, warm cache ({})", reference.0),
            kind,
            10,
        );
        Ok(())
    }
}

/// The call a guest example is measured on, and its config. A guest may
/// need a config to decide (an allowlist, say): `bench-config.json` beside
/// its build script supplies it; and it is measured doing its real job
/// when `bench-request.json` gives the call it exists for (a post with a
/// secret for a redactor, a write for a path guard). Otherwise it sees
/// `pre`.
pub(super) fn guest_files(
    path: &Path,
    pre: &Request,
) -> Result<(Request, Option<serde_json::Value>), BenchError> {
    let beside = |file: &str| {
        let path = path.parent()?.parent()?.join(file);
        Some((std::fs::read(&path).ok()?, path))
    };
    let unusable = |file, source| BenchError::GuestFile { file, source };
    let request = match beside("bench-request.json") {
        Some((bytes, file)) => toolgate::wire::read_request(&bytes, None, None)
            .map_err(|e| unusable(file, Box::new(e)))?,
        None => pre.clone(),
    };
    let config = match beside("bench-config.json") {
        Some((bytes, file)) => {
            Some(serde_json::from_slice(&bytes).map_err(|e| unusable(file, Box::new(e)))?)
        }
        None => None,
    };
    Ok((request, config))
}

/// `source` compiled with `cc -O2` to `dir/name`; `None` when it cannot be
/// (no C compiler), for the caller to say which row is left out.
fn compile_c(dir: &Path, name: &str, source: &str) -> Option<PathBuf> {
    let file = dir.join(format!("{name}.c"));
    let program = dir.join(name);
    std::fs::write(&file, source).ok()?;
    Command::new("cc")
        .args(["-O2", "-o"])
        .arg(&program)
        .arg(&file)
        .status()
        .ok()?
        .success()
        .then_some(program)
}

/// A chain of hooks built in code, as the host's own (so they may name
/// files anywhere).
pub(crate) fn chain(
    root: &Path,
    hooks: impl IntoIterator<Item = HookDef>,
) -> Result<HookRunner, BenchError> {
    // One compile cache for every in-process chain: a guest compiled for one
    // row (the reference, three times in the chain of 3, again for the
    // throughput runner) is not compiled again for the next.
    let options = WasmOptions::new().cache_dir(root.join("cache-chains"));
    let config = Config::from_hooks(hooks, root, &options)?;
    Ok(HookRunner::builder().config(config).build())
}

#[cfg(test)]
mod tests {
    use super::{lean_client_of, lean_row_name};

    #[test]
    fn the_budget_reads_back_the_lean_client_each_row_names() {
        let row = lean_row_name("at /tmp/static/toolgate-hook", "wasm: rust-deny-force-push");
        assert_eq!(
            row,
            "agent path via the lean client at /tmp/static/toolgate-hook and `toolgate serve` + \
             wasm: rust-deny-force-push"
        );
        assert_eq!(lean_client_of(&row), Some(" at /tmp/static/toolgate-hook"));
        assert_eq!(
            lean_client_of("agent path via `toolgate serve` + wasm: x"),
            None
        );
    }
}
