"""An MCP server written with the official Python SDK (PyPI `mcp`, pinned in
tests/agents/mcp-versions.env), serving both eras: the handshake revisions
and the stateless 2026-07-28. Its instructions come from the environment
(`INSTRUCTIONS`), so a test can change them under an approval.

Tools: `echo` (echoes `text`), `leak` (returns a secret), `sum` (adds),
`ask` (asks the user to confirm `question` first: an elicitation, carried
in an `input_required` round at 2026-07-28).
"""

import os
from typing import Annotated

from pydantic import BaseModel

from mcp.server.mcpserver import Elicit, MCPServer, Resolve

app = MCPServer("py-sdk", instructions=os.environ.get("INSTRUCTIONS", "Use echo to echo."))


@app.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return "echo: " + text


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
    app.run()
