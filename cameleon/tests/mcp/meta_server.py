"""An MCP server (the official Python SDK, `mcp` 2.x) whose tool `meta` answers with the
idempotency key the request's `_meta` carries: what the MCP tests check Caméléon sends."""

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("meta")


@server.tool()
def meta(ctx: Context) -> str:
    """The idempotency key of this request's `_meta`."""
    m = ctx.request_context.meta or {}
    return str(m.get("cameleon/idempotency_key"))


if __name__ == "__main__":
    server.run()
