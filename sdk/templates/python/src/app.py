"""{{name}}: a toolgate hook. Denies shell commands that use a forbidden
program (the hook's config: {"forbidden": ["sudo"]}), allows the rest."""

from toolgate_hook import Hook, allow, deny


class WitWorld(Hook):
    def check(self, request):
        if not request.is_pre:
            return allow()
        command = request.input.get("command") if isinstance(request.input, dict) else None
        if not isinstance(command, str):
            return allow()
        words = command.split()
        for program in (request.config or {}).get("forbidden", []):
            if program in words:
                return deny(f"`{program}` is not allowed in this workspace; "
                            "run the command without it or ask the user.")
        return allow()
