//! A toolgate hook, compiled to a WebAssembly component: denies force-pushes
//! on the `shell` tool and allows everything else.
//!
//! `git push --force`, `git push -f`, `git push -fu origin x` and
//! `git push origin +main` are force-pushes; `--force-with-lease` is allowed
//! unless the hook's config says `{"allow_force_with_lease": false}`.

wit_bindgen::generate!({
    world: "hook",
    path: "../../wit",
});

struct DenyForcePush;

impl Guest for DenyForcePush {
    fn decide(request: Request) -> Result<Verdict, String> {
        if request.event != Event::PreToolUse || request.tool != "shell" {
            return Ok(allow());
        }
        let input: serde_json::Value =
            serde_json::from_str(&request.input).map_err(|e| format!("input is not JSON: {e}"))?;
        let Some(command) = input.get("command").and_then(|c| c.as_str()) else {
            return Ok(allow());
        };
        let lease_ok = match request.config.as_deref() {
            None => true,
            Some(config) => serde_json::from_str::<serde_json::Value>(config)
                .map_err(|e| format!("config is not JSON: {e}"))?
                .get("allow_force_with_lease")
                .and_then(|v| v.as_bool())
                .unwrap_or(true),
        };
        Ok(match force_push(command, lease_ok) {
            Some(how) => Verdict {
                decision: Decision::Deny(format!(
                    "`{how}` rewrites shared history and is blocked by policy. \
                     Push without force, or ask the user to do it."
                )),
                context: None,
            },
            None => allow(),
        })
    }
}

fn allow() -> Verdict {
    Verdict {
        decision: Decision::Allow,
        context: None,
    }
}

/// The force flag found in a `git push` command, if any. Looks at every
/// command in a `;`/`&&`/`||`/`|` list.
fn force_push(command: &str, lease_ok: bool) -> Option<String> {
    command
        .split([';', '|', '&', '\n'])
        .filter_map(|part| {
            let words: Vec<&str> = part.split_whitespace().collect();
            let git = words.iter().position(|w| *w == "git" || w.ends_with("/git"))?;
            let push = words[git + 1..].iter().position(|w| *w == "push")? + git + 1;
            words[push + 1..].iter().find_map(|w| {
                let forced = match *w {
                    "--force" => true,
                    w if w.starts_with("--force-with-lease") => !lease_ok,
                    w if w.starts_with("--") => false,
                    w if w.starts_with('-') => w.contains('f'),
                    w => w.starts_with('+'),
                };
                forced.then(|| format!("git push {w}"))
            })
        })
        .next()
}

export!(DenyForcePush);
