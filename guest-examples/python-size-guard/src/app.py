"""A budget/size guard: denies tool inputs that are too large and tells the
model when an input is getting close to the limit.

config (hooks.json): {"max_input_bytes": 65536, "max_write_lines": 2000,
"ask_over_bytes": 32768} (the last is optional: over it, a person confirms)
"""

from toolgate_hook import Hook, allow, ask, deny


class WitWorld(Hook):
    def check(self, request):
        if not request.is_pre:
            return allow()
        config = request.config or {}
        limit = int(config.get("max_input_bytes", 65536))
        max_lines = int(config.get("max_write_lines", 2000))
        # The raw text is what crosses the boundary: measure it, don't re-encode.
        size = len(request.input_text.encode())
        if size > limit:
            return deny(
                f"this {request.tool} call's input is {size} bytes; the limit here is {limit}. "
                "Split the work into smaller calls."
            )
        content = None
        if '"content"' in request.input_text:  # parse only when there is something to count
            content = request.input.get("content") if isinstance(request.input, dict) else None
        if isinstance(content, str):
            lines = content.count("\n") + 1
            if lines > max_lines:
                return deny(f"writing {lines} lines at once is over the {max_lines}-line limit; write it in parts.")
        ask_over = config.get("ask_over_bytes")
        if ask_over is not None and size > int(ask_over):
            return ask(f"this {request.tool} call's input is {size} bytes, over the {ask_over} a person confirms")
        if size > limit // 2:
            return allow(context=f"note: this input is {size} of {limit} allowed bytes.")
        return allow()
