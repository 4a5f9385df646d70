//! A toolgate hook, compiled to a WebAssembly component: denies force-pushes
//! on the `shell` tool and allows everything else.
//!
//! `git push --force`, `git push -f`, `git push -fu origin x` and
//! `git push origin +main` are force-pushes; `--force-with-lease` is allowed
//! unless the hook's config says `{"allow_force_with_lease": false}`.

use toolgate_hook::serde_json::Value;
use toolgate_hook::{Event, Hook, Request, Verdict};

struct DenyForcePush;

impl Hook for DenyForcePush {
    fn decide(request: Request) -> Result<Verdict, String> {
        if request.event != Event::PreToolUse || request.tool != "shell" {
            return Ok(Verdict::allow());
        }
        let input: Value = request.input_json()?;
        let Some(command) = input.get("command").and_then(|c| c.as_str()) else {
            return Ok(Verdict::allow());
        };
        let lease_ok = request
            .config_json::<Value>()?
            .and_then(|c| c.get("allow_force_with_lease")?.as_bool())
            .unwrap_or(true);
        Ok(match force_push(command, lease_ok) {
            Some(how) => Verdict::deny(format!(
                "`{how}` rewrites shared history and is blocked by policy. \
                 Push without force, or ask the user to do it."
            )),
            None => Verdict::allow(),
        })
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

toolgate_hook::export!(DenyForcePush);
