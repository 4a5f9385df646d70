"""The server the official MCP conformance suite's server scenarios test
(`@modelcontextprotocol/conformance`, pinned in
tests/agents/mcp-versions.env), written for this repository from what the
scenarios call and check: the suite's own reference server lives in its
repository, not in the npm package. Built on the official Python SDK's
low-level server (PyPI `mcp`), over Streamable HTTP:

    conformance_server.py PORT

Every tool, prompt and resource below is named, and answers, as the
scenario of the same name (in the suite's `list`) describes it.
"""

import asyncio
import base64
import itertools
import sys

import anyio
import mcp_types as t
import uvicorn

from mcp.server.lowlevel.server import Server
from mcp.server.streamable_http import EventMessage, EventStore

# A 1x1 red PNG, and a minimal WAV (a header and no samples).
PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
WAV = base64.b64encode(
    b"RIFF" + (36).to_bytes(4, "little") + b"WAVEfmt " + (16).to_bytes(4, "little")
    + (1).to_bytes(2, "little") + (1).to_bytes(2, "little") + (8000).to_bytes(4, "little")
    + (8000).to_bytes(4, "little") + (1).to_bytes(2, "little") + (8).to_bytes(2, "little")
    + b"data" + (0).to_bytes(4, "little")
).decode()

SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False,
}

NO_ARGS = {"type": "object", "properties": {}}


def tool(name, description, schema=NO_ARGS):
    return {"name": name, "description": description, "inputSchema": schema}


TOOLS = [
    tool("test_simple_text", "Returns simple text"),
    tool("test_image_content", "Returns an image"),
    tool("test_audio_content", "Returns audio"),
    tool("test_embedded_resource", "Returns an embedded resource"),
    tool("test_multiple_content_types", "Returns text, an image and a resource"),
    tool("test_tool_with_logging", "Logs while it runs"),
    tool("test_tool_with_progress", "Reports progress while it runs"),
    tool("test_error_handling", "Always fails"),
    tool(
        "test_sampling",
        "Asks the client's model",
        {"type": "object", "properties": {"prompt": {"type": "string"}}, "required": ["prompt"]},
    ),
    tool(
        "test_elicitation",
        "Asks the user",
        {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]},
    ),
    tool("test_elicitation_sep1034_defaults", "Asks the user, with defaults"),
    tool("test_elicitation_sep1330_enums", "Asks the user, with every kind of enum"),
    tool("json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features", SCHEMA_2020_12),
    tool("test_reconnection", "Closes its stream mid-call, for the client to reconnect"),
]


def text(t):
    return {"type": "text", "text": t}


async def call_tool(ctx, params):
    name, args = params.name, params.arguments or {}
    session = ctx.session
    if name == "test_simple_text":
        content = [text("This is a simple text response for testing.")]
    elif name == "test_image_content":
        content = [{"type": "image", "data": PNG, "mimeType": "image/png"}]
    elif name == "test_audio_content":
        content = [{"type": "audio", "data": WAV, "mimeType": "audio/wav"}]
    elif name == "test_embedded_resource":
        content = [{"type": "resource", "resource": {
            "uri": "test://embedded-resource", "mimeType": "text/plain",
            "text": "This is an embedded resource content."}}]
    elif name == "test_multiple_content_types":
        content = [
            text("Multiple content types test:"),
            {"type": "image", "data": PNG, "mimeType": "image/png"},
            {"type": "resource", "resource": {
                "uri": "test://mixed-content-resource", "mimeType": "application/json",
                "text": '{"test":"data","value":123}'}},
        ]
    elif name == "test_tool_with_logging":
        for i, said in enumerate(["Tool execution started", "Tool processing data", "Tool execution completed"]):
            if i:
                await anyio.sleep(0.05)
            await session.send_log_message("info", said, related_request_id=ctx.request_id)
        content = [text("Tool with logging executed successfully")]
    elif name == "test_tool_with_progress":
        for i, done in enumerate([0, 50, 100]):
            if i:
                await anyio.sleep(0.05)
            await session.report_progress(done, 100)
        content = [text("Tool with progress executed successfully")]
    elif name == "test_error_handling":
        return {"isError": True, "content": [text("This tool intentionally returns an error for testing")]}
    elif name == "test_sampling":
        answer = await session.create_message(
            messages=[t.SamplingMessage(role="user", content=t.TextContent(type="text", text=args.get("prompt", "")))],
            max_tokens=100,
            related_request_id=ctx.request_id,
        )
        said = getattr(answer.content, "text", "")
        content = [text(f"LLM response: {said}")]
    elif name in ("test_elicitation", "test_elicitation_sep1034_defaults", "test_elicitation_sep1330_enums"):
        message, schema = ELICITATIONS[name](args)
        answer = await session.elicit_form(message, schema, related_request_id=ctx.request_id)
        if name == "test_elicitation":
            content = [text(f"User response: action={answer.action}, content={answer.content}")]
        else:
            content = [text(f"Elicitation completed: action={answer.action}, content={answer.content}")]
    elif name == "json_schema_2020_12_tool":
        content = [text("ok")]
    elif name == "test_reconnection":
        # Close this call's stream after its priming event: the client
        # reconnects (after the server's `retry`) and gets the answer.
        close = getattr(ctx, "close_sse_stream", None)
        await anyio.sleep(0.05)
        if close is not None:
            await close()
        await anyio.sleep(0.2)
        content = [text("Reconnection test completed")]
    else:
        return {"isError": True, "content": [text(f"unknown tool {name}")]}
    return {"content": content}


ELICITATIONS = {
    "test_elicitation": lambda args: (args.get("message", ""), {
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"},
        },
        "required": ["username", "email"],
    }),
    "test_elicitation_sep1034_defaults": lambda args: ("Please confirm your details", {
        "type": "object",
        "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "score": {"type": "number", "default": 95.5},
            "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
            "verified": {"type": "boolean", "default": True},
        },
    }),
    "test_elicitation_sep1330_enums": lambda args: ("Please choose", {
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
            "titledSingle": {"type": "string", "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"}]},
            "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                           "enumNames": ["Option One", "Option Two", "Option Three"]},
            "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
            "titledMulti": {"type": "array", "items": {"anyOf": [
                {"const": "value1", "title": "First Choice"},
                {"const": "value2", "title": "Second Choice"},
                {"const": "value3", "title": "Third Choice"}]}},
        },
    }),
}

RESOURCES = [
    {"uri": "test://static-text", "name": "static-text", "description": "A static text resource", "mimeType": "text/plain"},
    {"uri": "test://static-binary", "name": "static-binary", "description": "A static binary resource", "mimeType": "image/png"},
    {"uri": "test://watched-resource", "name": "watched-resource", "description": "A resource to subscribe to", "mimeType": "text/plain"},
]


async def read_resource(ctx, params):
    uri = str(params.uri)
    if uri == "test://static-text":
        return {"contents": [{"uri": uri, "mimeType": "text/plain",
                              "text": "This is the content of the static text resource."}]}
    if uri == "test://static-binary":
        return {"contents": [{"uri": uri, "mimeType": "image/png", "blob": PNG}]}
    if uri == "test://watched-resource":
        return {"contents": [{"uri": uri, "mimeType": "text/plain", "text": "Watched."}]}
    if uri.startswith("test://template/") and uri.endswith("/data"):
        ident = uri[len("test://template/"):-len("/data")]
        return {"contents": [{"uri": uri, "mimeType": "application/json",
                              "text": '{"id":"%s","templateTest":true,"data":"Data for ID: %s"}' % (ident, ident)}]}
    from mcp.shared.exceptions import MCPError
    raise MCPError(code=-32002, message=f"Resource not found: {uri}")


PROMPTS = [
    {"name": "test_simple_prompt", "description": "A simple prompt"},
    {"name": "test_prompt_with_arguments", "description": "A prompt with arguments", "arguments": [
        {"name": "arg1", "description": "First test argument", "required": True},
        {"name": "arg2", "description": "Second test argument", "required": True}]},
    {"name": "test_prompt_with_embedded_resource", "description": "A prompt with a resource", "arguments": [
        {"name": "resourceUri", "description": "URI of the resource to embed", "required": True}]},
    {"name": "test_prompt_with_image", "description": "A prompt with an image"},
]


async def get_prompt(ctx, params):
    name, args = params.name, params.arguments or {}
    user = lambda content: {"role": "user", "content": content}
    if name == "test_simple_prompt":
        return {"messages": [user(text("This is a simple prompt for testing."))]}
    if name == "test_prompt_with_arguments":
        return {"messages": [user(text(f"Prompt with arguments: arg1='{args.get('arg1')}', arg2='{args.get('arg2')}'"))]}
    if name == "test_prompt_with_embedded_resource":
        return {"messages": [
            user({"type": "resource", "resource": {"uri": args.get("resourceUri", ""), "mimeType": "text/plain",
                                                   "text": "Embedded resource content for testing."}}),
            user(text("Please process the embedded resource above."))]}
    if name == "test_prompt_with_image":
        return {"messages": [user({"type": "image", "data": PNG, "mimeType": "image/png"}),
                             user(text("Please analyze the image above."))]}
    from mcp.shared.exceptions import MCPError
    raise MCPError(code=-32602, message=f"Unknown prompt: {name}")


class Events(EventStore):
    """Every event, in memory: a closed stream's answer is replayed when the
    client reconnects with Last-Event-ID."""

    def __init__(self):
        self.events = []
        self.ids = itertools.count(1)

    async def store_event(self, stream_id, message):
        event_id = str(next(self.ids))
        self.events.append((event_id, stream_id, message))
        return event_id

    async def replay_events_after(self, last_event_id, send_callback):
        stream = None
        after = False
        for event_id, stream_id, message in list(self.events):
            if event_id == last_event_id:
                stream, after = stream_id, True
                continue
            if after and stream_id == stream and message is not None:
                await send_callback(EventMessage(message, event_id))
        return stream


async def nothing(ctx, params):
    return {}


server = Server(
    "toolgate-conformance",
    version="1.0.0",
    on_list_tools=lambda ctx, params: _const({"tools": TOOLS}),
    on_call_tool=call_tool,
    on_list_resources=lambda ctx, params: _const({"resources": RESOURCES}),
    on_list_resource_templates=lambda ctx, params: _const({"resourceTemplates": [
        {"uriTemplate": "test://template/{id}/data", "name": "template", "description": "A template",
         "mimeType": "application/json"}]}),
    on_read_resource=read_resource,
    on_subscribe_resource=nothing,
    on_unsubscribe_resource=nothing,
    on_list_prompts=lambda ctx, params: _const({"prompts": PROMPTS}),
    on_get_prompt=get_prompt,
    on_completion=lambda ctx, params: _const({"completion": {"values": [], "total": 0, "hasMore": False}}),
    on_set_logging_level=nothing,
)


async def _const(value):
    return value


if __name__ == "__main__":
    app = server.streamable_http_app(event_store=Events(), retry_interval=500, host="127.0.0.1")
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
