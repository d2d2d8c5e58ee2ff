"""An MCP server (the official Python SDK, `mcp` 2.x) for the MCP tests: `meta` answers with
the idempotency key the request's `_meta` carries; `count` with how many times it was called."""

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("meta")


@server.tool()
def meta(ctx: Context) -> str:
    """The idempotency key of this request's `_meta`."""
    m = ctx.request_context.meta or {}
    return str(m.get("cameleon/idempotency_key"))


calls = 0


@server.tool()
def count() -> int:
    """How many times this tool was called, this call included."""
    global calls
    calls += 1
    return calls


if __name__ == "__main__":
    server.run()
