"""A client written with the official Python SDK (PyPI `mcp`): connects in
the mode given (`2026-07-28`, `auto` or `legacy`) to the server command
that follows (or, when it is an `http://` URL, over Streamable HTTP with
`$TOOLGATE_TOKEN` as its bearer secret), makes the calls the tests judge and prints what it was shown
as one JSON object: the server's instructions, its tools, each call's text,
error flag and resultType, and every elicitation message it was asked.
"""

import asyncio
import json
import os
import sys

import mcp_types as t
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

CALLS = [
    ("echo", {"text": "hello"}),
    ("echo", {"text": "rewrite me"}),
    ("echo", {"text": "my SECRET"}),
    ("leak", {}),
    ("sum", {"a": 1, "b": 2}),
    ("ask", {"question": "is SECRET ok?"}),
]


async def main() -> None:
    mode, command = sys.argv[1], sys.argv[2:]
    elicited = []

    async def on_elicit(ctx, params):
        elicited.append(params.message)
        return t.ElicitResult(action="accept", content={"confirm": True})

    # The whole environment, not the SDK's short default list: the proxy
    # reads its config and state from it.
    if command[0].startswith("http://"):
        http = create_mcp_http_client(headers={"Authorization": "Bearer " + os.environ["TOOLGATE_TOKEN"]})
        params = streamable_http_client(command[0], http_client=http)
    else:
        params = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    async with Client(params, mode=mode, elicitation_callback=on_elicit) as client:
        tools = await client.list_tools()
        shown = {"instructions": client.instructions, "tools": sorted(x.name for x in tools.tools), "calls": []}
        for name, arguments in CALLS:
            result = await client.call_tool(name, arguments)
            shown["calls"].append({
                "tool": name,
                "text": " ".join(c.text for c in result.content if c.type == "text"),
                "isError": bool(result.is_error),
                "resultType": result.result_type,
            })
        shown["elicited"] = elicited
    print(json.dumps(shown))


asyncio.run(main())
