//! {{name}}: a toolgate hook. Denies shell commands that use a forbidden
//! program (the hook's config: `{"forbidden": ["sudo"]}`), allows the rest.

use toolgate_hook::serde_json::Value;
use toolgate_hook::{Hook, Request, Verdict};

struct Policy;

impl Hook for Policy {
    fn decide(request: Request) -> Result<Verdict, String> {
        if !request.is_pre() {
            return Ok(Verdict::allow());
        }
        let input: Value = request.input_json()?;
        let Some(command) = input.get("command").and_then(Value::as_str) else {
            return Ok(Verdict::allow());
        };
        let config: Value = request.config_json()?.unwrap_or(Value::Null);
        let forbidden = config.get("forbidden").and_then(Value::as_array);
        for program in forbidden.into_iter().flatten().filter_map(Value::as_str) {
            if command.split_whitespace().any(|word| word == program) {
                return Ok(Verdict::deny(format!(
                    "`{program}` is not allowed in this workspace; run the command without it or ask the user."
                )));
            }
        }
        Ok(Verdict::allow())
    }
}

toolgate_hook::export!(Policy);
