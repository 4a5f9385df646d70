"""toolgate hook SDK for Python guests built with componentize-py.

Write a function from a typed request to a verdict; this module does the WIT
plumbing (JSON text in and out, the result/err convention) so you never touch
the canonical ABI. The names are the WIT's: a request, a verdict (a decision
plus optional context).

    from toolgate_hook import Hook, allow, deny

    class WitWorld(Hook):
        def check(self, request):
            if request.tool == "Bash" and "rm -rf /" in request.input.get("command", ""):
                return deny("not on this machine")
            return allow()

Build with `componentize-py -d <toolgate>/wit -w hook componentize -p src -p
<toolgate>/sdk/python --stub-wasi app -o hook.wasm` (see a guest example's
build.sh). `request.input`, `request.result_output` and `request.config` are
parsed from JSON on first use (`request.input_text` is the raw text); raise `CannotDecide("why")` when the hook cannot decide (toolgate
then applies the hook's `on_failure`, deny by default). Any other exception
is reported the same way (a `guest_error`), with the traceback's last lines.
"""

import json
import os
import traceback
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Optional

import wit_world
from componentize_py_types import Err


class CannotDecide(Exception):
    """Raise to say the hook cannot decide; the message reaches the operator."""


class Request:
    """One tool call as the hook sees it.

    `input`, `result_output` and `config` are parsed from JSON on first use
    (CPython in wasm pays per instruction: a guard that only needs the raw
    text, like a size check, should read `input_text`).
    """

    def __init__(self, request: "wit_world.Request"):
        self._request = request
        # "pre_tool_use", "post_tool_use", or "list_tools" (toolgate:hook@0.3.0).
        self.event = request.event.name.lower()
        self.hook = request.hook
        self.tool = request.tool
        self.input_text = request.input
        self.result_is_error = bool(request.result and request.result.is_error)
        self.session_id = request.session_id
        self.turn_id = request.turn_id
        self.tool_call_id = request.tool_call_id
        self.cwd = request.cwd

    @property
    def is_pre(self) -> bool:
        return self.event == "pre_tool_use"

    @cached_property
    def input(self) -> Any:
        return json.loads(self.input_text)

    @cached_property
    def result_output(self) -> Any:
        """Post only: the output, parsed; None before the call."""
        return json.loads(self._request.result.output) if self._request.result else None

    @cached_property
    def config(self) -> Any:
        """The hook's `config` from hooks.json, parsed, or None."""
        return json.loads(self._request.config) if self._request.config else None


@dataclass
class Verdict:
    """A decision plus optional advisory context for the model."""

    decision: Any
    context: Optional[str] = None


def allow(context: Optional[str] = None) -> Verdict:
    return Verdict(wit_world.Decision_Allow(), context)


def deny(reason: str, context: Optional[str] = None) -> Verdict:
    return Verdict(wit_world.Decision_Deny(reason), context)


def modify(new_input: Any, context: Optional[str] = None) -> Verdict:
    return Verdict(wit_world.Decision_Modify(json.dumps(new_input)), context)


def replace(output: Any, is_error: bool = False, context: Optional[str] = None) -> Verdict:
    return Verdict(wit_world.Decision_Replace(wit_world.ToolResult(json.dumps(output), is_error)), context)


def ask(reason: str, context: Optional[str] = None) -> Verdict:
    """Before the call only (toolgate:hook@0.2.0): a person must confirm it."""
    return Verdict(wit_world.Decision_Ask(reason), context)


class Hook(wit_world.WitWorld):
    """Subclass as `WitWorld` in your app module and implement `check`."""

    def check(self, request: Request) -> Verdict:  # pragma: no cover - overridden
        raise CannotDecide("the hook does not implement check()")

    def decide(self, request: "wit_world.Request") -> "wit_world.Verdict":
        try:
            verdict = self.check(Request(request))
            if not isinstance(verdict, Verdict):
                raise CannotDecide(f"check() returned {type(verdict).__name__}, not a verdict")
            return wit_world.Verdict(verdict.decision, verdict.context)
        except CannotDecide as e:
            raise Err(str(e))
        except Exception as e:  # a bug in the hook: it could not decide
            raise Err(_describe(e))


def _describe(e: BaseException) -> str:
    """`ValueError: …` then the traceback's last lines, innermost last, as
    Python prints them but without source text (the component has no files
    to read it from) and without this module's own frame."""
    frames = traceback.StackSummary.extract(traceback.walk_tb(e.__traceback__), lookup_lines=False)
    lines = [
        f'  File "{os.path.basename(f.filename)}", line {f.lineno}, in {f.name}'
        for f in frames
        if os.path.basename(f.filename) != "toolgate_hook.py"
    ][-3:]
    head = f"{type(e).__name__}: {e}"
    return "\n".join(["Traceback (most recent call last):", *lines, head]) if lines else head
