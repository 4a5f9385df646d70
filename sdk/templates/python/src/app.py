"""{{name}}: a toolgate hook. Denies shell commands that use a forbidden
program (the hook's config: {"forbidden": ["sudo"]}), allows the rest."""

from toolgate_hook import Hook, allow, deny


class WitWorld(Hook):
    def check(self, call):
        if not call.is_pre:
            return allow()
        command = call.input.get("command") if isinstance(call.input, dict) else None
        if not isinstance(command, str):
            return allow()
        words = command.split()
        for program in (call.config or {}).get("forbidden", []):
            if program in words:
                return deny(f"`{program}` is not allowed in this workspace; "
                            "run the command without it or ask the user.")
        return allow()
