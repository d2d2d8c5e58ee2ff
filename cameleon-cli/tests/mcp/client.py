"""A client of `cameleon mcp` written with the official MCP SDK for Python (`mcp` 2.x): it
starts the server over standard input and output (or reaches it over streamable HTTP), lists
its tools and calls some, and prints what it saw as one JSON object for the Rust test.

    client.py stdio CAMELEON_BINARY --nets DIR
    client.py http URL TOKEN
"""

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def content(result):
    """A call's result: whether it is an error, its text and its structured content."""
    texts = [c.text for c in result.content if getattr(c, "type", None) == "text"]
    return {
        "is_error": bool(result.is_error),
        "text": "\n".join(texts),
        "structured": result.structured_content,
    }


async def session_calls(session):
    await session.initialize()
    listed = await session.list_tools()
    tools = {t.name: {"input_schema": t.input_schema, "annotations": t.annotations.model_dump() if t.annotations else None} for t in listed.tools}
    out = {"tools": tools}
    out["shout"] = content(await session.call_tool("shout", {"text": "bonjour"}))
    out["calc"] = content(await session.call_tool("calc", {"args": {"expr": "2 ^ 10"}}))
    out["review"] = content(await session.call_tool("review", {"text": "a draft"}))
    out["check"] = content(await session.call_tool("check", {"cm": "cameleon: 1\noperators:\n  - {id: x, type: nope}\n"}))
    return out


async def main():
    mode = sys.argv[1]
    if mode == "stdio":
        params = StdioServerParameters(command=sys.argv[2], args=sys.argv[3:])
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                out = await session_calls(session)
    else:
        from mcp.client.streamable_http import streamable_http_client
        import httpx2 as httpx

        url, token = sys.argv[2], sys.argv[3]
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http:
            async with streamable_http_client(url, http_client=http) as streams:
                read, write = streams[0], streams[1]
                async with ClientSession(read, write) as session:
                    out = await session_calls(session)
    print(json.dumps(out))


asyncio.run(main())
