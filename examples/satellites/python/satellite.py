"""A Caméléon satellite in Python, written from docs/wire.md alone (nats-py from PyPI).

It hosts an operator type the `cameleon` binary does not have, `word_tally`, and a tool,
`reverse_text`; a run places them from this satellite's description:

    python3 -m venv .venv && .venv/bin/pip install nats-py
    .venv/bin/python examples/satellites/python/satellite.py --nats nats://127.0.0.1:4222
    cameleon run examples/satellites/polyglot.cm --nats nats://127.0.0.1:4222

It does what docs/wire.md asks of a satellite: queue-group subscriptions per type and tool,
its own subjects, acknowledgements, heartbeats, discovery answers with manifests and type
descriptions, a bounded intake (`busy`), the version check, and a clean stop on SIGTERM.
"""

import argparse
import asyncio
import json
import os
import signal
import socket
import sys

import nats

WIRE = 1
P_DEFAULT = "cameleon"


# --- What it hosts ------------------------------------------------------------------------


class WordTally:
    """Counts the words of `in_text` with at least `min_len` letters, and a running total."""

    TYPE = {
        "id": "word_tally",
        "label": "Word tally",
        "doc": "Counts the words of `in_text` that have at least `min_len` letters, with a running total.",
        "family": "behavioral",
        "policy": "any",
        "inputs": [{"name": "in_text", "type": "DataString", "optional": False}],
        "outputs": [{"name": "out_count", "type": "DataJSON", "optional": False}],
        "params": {
            "type": "object",
            "properties": {"min_len": {"type": "integer", "minimum": 0}},
            "required": [],
            "additionalProperties": False,
        },
        "stateful": True,
    }

    def __init__(self, params):
        self.min_len = int(params.get("min_len", 1))
        self.total = 0

    def restore(self, state):
        # The same form as the Rust operator's: one element per state field.
        self.total = int(state[0])

    def state(self):
        return [self.total]

    def fire(self, inputs):
        text = inputs[0]["value"]["value"]
        n = sum(1 for w in text.split() if len(w) >= self.min_len)
        self.total += n
        return [(0, {"type": "DataJSON", "value": {"words": n, "total": self.total}})]


OPS = {"word_tally": WordTally}

TOOLS = {
    "reverse_text": {
        "manifest": {
            "name": "reverse_text",
            "description": "Reverses `text`, character by character.",
            "input_schema": {
                "type": "object",
                "properties": {"text": {"type": "string", "description": "The text to reverse."}},
                "required": ["text"],
            },
            "output_schema": {"type": "string"},
            "effects": "none",
        },
        "run": lambda args: args["text"][::-1],
    }
}


# --- The wire ------------------------------------------------------------------------------


class Satellite:
    def __init__(self, nc, prefix, name, heartbeat_ms, concurrency):
        self.nc, self.p, self.name = nc, prefix, name
        self.heartbeat_ms, self.concurrency = heartbeat_ms, concurrency
        self.in_flight = 0
        self.done = {}  # idempotency key -> reply (successes only)

    def headers(self, **more):
        h = {"Cameleon-Wire": str(WIRE)}
        h.update(more)
        return h

    def heartbeat(self):
        return {
            "v": WIRE,
            "name": self.name,
            "ops": sorted(OPS),
            "tools": sorted(TOOLS),
            "heartbeat_ms": self.heartbeat_ms,
            "concurrency": self.concurrency,
            "in_flight": self.in_flight,
        }

    async def send(self, subject, body):
        await self.nc.publish(subject, json.dumps(body).encode(), headers=self.headers())

    def op_failed(self, kind, error):
        return {"v": WIRE, "satellite": self.name, "ok": False, "emitted": [], "state": None,
                "error": error, "kind": kind, "cached": False}

    def tool_failed(self, tool, kind, error):
        return {"v": WIRE, "satellite": self.name, "cached": False, "kind": kind,
                "result": {"status": "error", "content": None, "error": error,
                           "meta": {"tool": tool, "origin": f"satellite:{self.name}",
                                    "duration_ms": 0, "attempts": 1}}}

    async def take(self, msg, kind):
        """A call: too many at once is `busy`; else acknowledged (when asked), run, answered."""
        if not msg.reply:
            return
        h = msg.headers or {}
        if h.get("Cameleon-Wire", str(WIRE)) != str(WIRE):
            why = f"wire version mismatch: the request speaks version {h['Cameleon-Wire']}, this satellite version {WIRE}"
            body = self.op_failed("version", why) if kind == "op" else self.tool_failed("?", "version", why)
            return await self.send(msg.reply, body)
        if self.in_flight >= self.concurrency:
            why = f"satellite `{self.name}` is busy: it runs {self.concurrency} calls"
            body = self.op_failed("busy", why) if kind == "op" else self.tool_failed("?", "busy", why)
            return await self.send(msg.reply, body)
        self.in_flight += 1
        try:
            if h.get("Cameleon-Want-Ack"):
                await self.nc.publish(msg.reply, b"", headers=self.headers(**{
                    "Cameleon-Ack": self.name, "Cameleon-Heartbeat-Ms": str(self.heartbeat_ms)}))
            body = self.fire(msg.data) if kind == "op" else self.call(msg.data)
            await self.send(msg.reply, body)
        finally:
            self.in_flight -= 1

    def fire(self, data):
        try:
            req = json.loads(data)
        except ValueError as e:
            return self.op_failed("bad_request", f"unreadable firing request: {e}")
        if req.get("v") != WIRE:
            return self.op_failed("version", f"wire version mismatch: the request speaks version {req.get('v')}, this satellite version {WIRE}")
        if req["type"] not in OPS:
            return self.op_failed("unknown", f"satellite `{self.name}` does not host operator type `{req['type']}`")
        if req["key"] in self.done:
            return dict(self.done[req["key"]], cached=True)
        try:
            op = OPS[req["type"]](req.get("params") or {})
            if req.get("state") is not None:
                op.restore(req["state"])
            emitted = op.fire(req["inputs"])
        except Exception as e:  # the operator's failure, not the satellite's
            return self.op_failed("failed", str(e))
        reply = {"v": WIRE, "satellite": self.name, "ok": True,
                 "emitted": [{"port": p, "value": v} for p, v in emitted],
                 "state": op.state(), "error": None, "kind": None, "cached": False}
        self.done[req["key"]] = reply
        return reply

    def call(self, data):
        try:
            req = json.loads(data)
        except ValueError as e:
            return self.tool_failed("?", "bad_request", f"unreadable tool call: {e}")
        tool = req.get("tool", "?")
        if tool not in TOOLS:
            return self.tool_failed(tool, "unknown", f"satellite `{self.name}` does not host tool `{tool}`")
        meta = {"tool": tool, "origin": f"satellite:{self.name}", "duration_ms": 0, "attempts": 1}
        try:
            content = TOOLS[tool]["run"](req["args"])
            result = {"status": "ok", "content": content, "error": None, "meta": meta}
        except Exception as e:
            result = {"status": "error", "content": None, "error": str(e), "meta": meta}
        return {"v": WIRE, "satellite": self.name, "cached": False, "result": result}

    async def subscribe(self):
        group = f"{self.p}-satellites"

        def handler(kind):
            async def cb(msg):
                asyncio.create_task(self.take(msg, kind))
            return cb

        for t in OPS:
            await self.nc.subscribe(f"{self.p}.op.{t}", queue=group, cb=handler("op"))
        for t in TOOLS:
            await self.nc.subscribe(f"{self.p}.tool.{t}", queue=group, cb=handler("tool"))

        async def direct(msg):
            kind = msg.subject.split(".")[len(self.p.split(".")) + 2]
            asyncio.create_task(self.take(msg, kind))

        await self.nc.subscribe(f"{self.p}.sat.{self.name}.>", cb=direct)

        async def discover(msg):
            if msg.reply:
                intro = dict(self.heartbeat(),
                             manifests=[t["manifest"] for t in TOOLS.values()],
                             types=[op.TYPE for op in OPS.values()])
                await self.send(msg.reply, intro)

        await self.nc.subscribe(f"{self.p}.discover", cb=discover)

    async def beat(self):
        while True:
            await self.send(f"{self.p}.heartbeat.{self.name}", self.heartbeat())
            await asyncio.sleep(self.heartbeat_ms / 1000)


async def main():
    a = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    a.add_argument("--nats", required=True, help="the NATS server, nats://HOST:PORT")
    a.add_argument("--name", default=f"{socket.gethostname()}-{os.getpid()}".replace(".", "-"))
    a.add_argument("--subject-prefix", default=P_DEFAULT)
    a.add_argument("--heartbeat-ms", type=int, default=1000)
    a.add_argument("--concurrency", type=int, default=4)
    args = a.parse_args()
    nc = await nats.connect(args.nats, name=args.name)
    sat = Satellite(nc, args.subject_prefix, args.name, args.heartbeat_ms, args.concurrency)
    await sat.subscribe()
    await nc.flush()
    beat = asyncio.create_task(sat.beat())
    stop = asyncio.Event()
    for s in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(s, stop.set)
    print(f"satellite {args.name}: serving {len(OPS)} operator types and {len(TOOLS)} tools "
          f"on {args.nats} (prefix `{args.subject_prefix}`)", file=sys.stderr, flush=True)
    await stop.wait()
    beat.cancel()
    await nc.drain()  # answers what is in flight, then closes
    print(f"satellite {args.name}: stopped", file=sys.stderr, flush=True)


if __name__ == "__main__":
    asyncio.run(main())
