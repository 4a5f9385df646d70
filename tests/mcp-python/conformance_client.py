"""The client the official MCP conformance suite's client scenarios run
(`conformance client --command ...`): the suite starts a server of its own,
sets $MCP_CONFORMANCE_SCENARIO and passes the server's URL last. Written
with the official Python SDK's client (PyPI `mcp`).

With $TOOLGATE_BIN set, the client reaches the suite's server through
`toolgate mcp --upstream URL` instead of directly: the server is reviewed
and approved (`toolgate mcp trust`), the proxy started on a free loopback
port, and the client given the proxy's URL and secret, so the suite sees
what a client behind the proxy sends.
"""

import asyncio
import os
import re
import subprocess
import sys

import mcp_types as t
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def through_toolgate(url):
    """Approves the server at `url`, starts the proxy in front of it, and
    returns (its URL, its secret, the process)."""
    toolgate = os.environ["TOOLGATE_BIN"]
    at = ["--upstream", url]
    review = subprocess.run([toolgate, "mcp", "trust", "--name", "conformance", *at],
                            stdin=subprocess.DEVNULL, capture_output=True, text=True)
    digest = re.search(r"^digest: (\S+)", review.stdout, re.M)
    if digest is None:
        sys.exit(f"no digest in the review: {review.stdout}{review.stderr}")
    subprocess.run([toolgate, "mcp", "trust", "--name", "conformance", "--yes", digest.group(1), *at],
                   check=True, stdout=subprocess.DEVNULL)
    proxy = subprocess.Popen([toolgate, "mcp", "--name", "conformance", *at, "--listen", "127.0.0.1:0"],
                             stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    said = proxy.stderr.readline()
    where = re.search(r"on (http://\S+/mcp)", said)
    if where is None:
        proxy.kill()
        sys.exit(f"the proxy did not say where it listens: {said}")
    state = os.environ["XDG_STATE_HOME"]
    with open(os.path.join(state, "toolgate", "http-token")) as token:
        secret = token.read().strip()
    return where.group(1), secret, proxy


async def elicited(ctx, params):
    # Accept, with each field's default filled in (SEP-1034: the client
    # applies the defaults the form declares).
    schema = getattr(params, "requested_schema", None) or {}
    properties = schema.get("properties", {}) if isinstance(schema, dict) else {}
    content = {name: spec["default"] for name, spec in properties.items() if "default" in spec}
    return t.ElicitResult(action="accept", content=content)


async def run(url, secret):
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "initialize")
    headers = {"Authorization": f"Bearer {secret}"} if secret else {}
    http = create_mcp_http_client(headers=headers)
    async with Client(streamable_http_client(url, http_client=http), mode="legacy",
                      elicitation_callback=elicited) as client:
        tools = await client.list_tools()
        names = [tool.name for tool in tools.tools]
        if scenario == "tools_call" and "add_numbers" in names:
            await client.call_tool("add_numbers", {"a": 5, "b": 3})
        elif scenario == "elicitation-sep1034-client-defaults":
            await client.call_tool("test_client_elicitation_defaults", {})
        elif scenario == "sse-retry":
            await client.call_tool("test_reconnection", {})


def main():
    url = sys.argv[-1]
    proxy = None
    secret = None
    if os.environ.get("TOOLGATE_BIN"):
        url, secret, proxy = through_toolgate(url)
    try:
        asyncio.run(run(url, secret))
    finally:
        if proxy is not None:
            proxy.kill()
            proxy.wait()


main()
