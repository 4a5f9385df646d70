"""An MCP server written with the official Python SDK (PyPI `mcp`, pinned in
tests/agents/mcp-versions.env), serving both eras: the handshake revisions
and the stateless 2026-07-28. Its instructions come from the environment
(`INSTRUCTIONS`), so a test can change them under an approval.

Tools: `echo` (echoes `text`, mirrored in a header over HTTP), `slow`
(answers after `seconds`), `leak` (returns a secret), `sum` (adds),
`ask` (asks the user to confirm `question` first: an elicitation, carried
in an `input_required` round at 2026-07-28). Over stdio, or Streamable
HTTP with `http PORT`.
"""

import os
from typing import Annotated

import anyio
from pydantic import BaseModel, Field

from mcp.server.mcpserver import Elicit, MCPServer, Resolve

app = MCPServer("py-sdk", instructions=os.environ.get("INSTRUCTIONS", "Use echo to echo."))


@app.tool()
def echo(text: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Text"})]) -> str:
    """Echo the text back."""
    # Over HTTP at 2026-07-28 the client mirrors `text` in `Mcp-Param-Text`,
    # and the SDK refuses a call whose header disagrees with the body.
    return "echo: " + text


@app.tool()
async def slow(seconds: float) -> str:
    """Answer after a while."""
    await anyio.sleep(seconds)
    return "slept"


@app.tool()
def leak() -> str:
    """Return a secret."""
    return "the key is SECRET"


@app.tool()
def sum(a: int, b: int) -> str:
    """Add two numbers."""
    return str(a + b)


class Confirm(BaseModel):
    confirm: bool


def confirm(question: str) -> Elicit[Confirm]:
    return Elicit(message="Please confirm: " + question, schema=Confirm)


@app.tool()
async def ask(question: str, ok: Annotated[Confirm, Resolve(confirm)]) -> str:
    """Ask the user to confirm a question."""
    return f"confirmed: {ok.confirm}"


if __name__ == "__main__":
    # `server.py http PORT`: Streamable HTTP on 127.0.0.1:PORT/mcp.
    import sys

    if sys.argv[1:2] == ["http"]:
        app.run(transport="streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        app.run()
