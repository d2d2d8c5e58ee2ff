// What the net produced, without hovering: the Outputs panel (every sink's values, the tokens
// the run used) and the inspector (one connection or operator: its value(s), and for a model
// firing the prompt, the answer and the tokens). Loaded before page.js, which calls
// `scheduleResults` with every new state and `select` on a click in the drawing.
"use strict";

let selected = null; // {conn} or {op}: what the inspector shows
let resultsTimer = 0; // a fetch is scheduled or under way
let resultsKey = ""; // what was fetched last: the state's version and the selection

const resultsWanted = () => (latest ? latest.version : -1) + "/" + JSON.stringify(selected);

// Fetches the outputs and the inspected item again when the state or the selection changed, a
// few times a second at most, one fetch at a time.
function scheduleResults() {
  if (resultsTimer) return;
  resultsTimer = setTimeout(async () => {
    const key = resultsWanted();
    if (key !== resultsKey) {
      const sel = selected;
      const [out, ins] = await Promise.all([
        api("GET", "/api/outputs"),
        sel ? api("GET", "/api/inspect?" + new URLSearchParams(sel)) : null,
      ]);
      resultsKey = key;
      if (out.ok) drawOutputs(out.data);
      if (ins && sel === selected) drawInspector(ins);
    }
    resultsTimer = 0;
    if (resultsWanted() !== resultsKey) scheduleResults();
  }, 150);
}

// A value's text as a reader wants it: a string without its quotes, anything else as JSON.
function valueText(v) {
  if (!v.truncated && v.json.startsWith('"')) {
    try {
      return JSON.parse(v.json);
    } catch (_) {}
  }
  return v.json + (v.truncated ? "\n…" : "");
}

function el(tag, className, text) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

function valueBox(v) {
  const box = el("div", "value-box");
  let meta = v.type;
  if (v.bytes !== undefined) meta += " · " + v.bytes + " bytes";
  if (v.truncated) meta += " · preview";
  box.appendChild(el("div", "meta", meta));
  box.appendChild(el("pre", "value", valueText(v)));
  return box;
}

function drawOutputs(o) {
  const box = $("outputs");
  box.textContent = "";
  if (!o.sinks.length) box.appendChild(el("p", "note", "this net has no sink"));
  for (const k of o.sinks) {
    const div = el("div", "sink");
    div.dataset.op = k.op;
    div.dataset.count = String(k.count);
    const head = el("div", "sink-head", k.label + " ");
    head.appendChild(el("code", "", k.op));
    head.appendChild(el("span", "note", " · " + k.count + (k.count === 1 ? " value" : " values")));
    div.appendChild(head);
    if (!k.count) div.appendChild(el("p", "note", "nothing yet"));
    if (k.count > k.values.length)
      div.appendChild(el("p", "note", "the last " + k.values.length + " of " + k.count));
    for (const v of k.values) div.appendChild(valueBox(v));
    div.onclick = () => select({ op: k.op });
    box.appendChild(div);
  }
  const u = $("usage");
  u.textContent = o.usage
    ? "tokens: " + o.usage.prompt_tokens + " prompt + " + o.usage.completion_tokens +
      " completion = " + (o.usage.prompt_tokens + o.usage.completion_tokens) +
      " (" + o.usage.firings + " firing" + (o.usage.firings === 1 ? "" : "s") + ")"
    : "";
  document.body.dataset.outputsVersion = String(o.version);
}

function select(what) {
  selected = what;
  markSelection();
  $("inspector").textContent = "";
  $("inspector").appendChild(el("p", "note", "loading…"));
  resultsKey = ""; // fetch it, even when it was selected already
  scheduleResults();
}

function markSelection() {
  const svg = $("visual").querySelector("svg");
  if (!svg) return;
  for (const e of svg.querySelectorAll(".selected")) e.classList.remove("selected");
  if (!selected) return;
  const css = selected.conn
    ? 'path[data-conn="' + CSS.escape(selected.conn) + '"]'
    : 'g[data-op="' + CSS.escape(selected.op) + '"]';
  const e = svg.querySelector(css);
  if (e) e.classList.add("selected");
}

function usageText(u) {
  return u ? u.prompt_tokens + " prompt + " + u.completion_tokens + " completion tokens" : "";
}

function portBox(p) {
  const div = el("div", "port");
  div.appendChild(el("div", "meta", (p.port ? p.port + " · " : "") + p.conn + " · " + p.type + " · " + p.state));
  if (p.value) div.appendChild(valueBox(p.value));
  return div;
}

function callBox(c) {
  const div = el("div", "call call-" + c.call);
  const more = (t) => (t.truncated ? t.text + "\n…" : t.text);
  if (c.call === "chat") {
    div.appendChild(el("div", "meta", "chat model `" + c.model + "` (" + c.kind + ")" + (c.quoted ? " · quotes its context" : "") + (c.usage ? " · " + usageText(c.usage) : "")));
    div.appendChild(el("h3", "", "Prompt"));
    for (const m of c.messages) {
      const p = el("pre", "message");
      p.dataset.role = m.role;
      p.textContent = m.role + ": " + more(m.content);
      div.appendChild(p);
    }
    if (c.context.length) {
      div.appendChild(el("h3", "", "Context (" + c.context.length + " passages)"));
      for (const t of c.context) div.appendChild(el("pre", "passage", more(t)));
    }
    div.appendChild(el("h3", "", "Answer"));
    div.appendChild(el("pre", "answer", more(c.answer)));
    if (c.tool_calls.length) div.appendChild(el("div", "meta", "asked for tools: " + c.tool_calls.join(", ")));
  } else if (c.call === "embed") {
    div.appendChild(el("div", "meta", "embedder `" + c.model + "` (" + c.kind + "): " + c.texts + " texts, " + c.dim + " dimensions" + (c.usage ? " · " + usageText(c.usage) : "")));
  } else if (c.call === "search") {
    div.appendChild(el("div", "meta", "memory `" + c.memory + "`, k = " + c.k));
    div.appendChild(el("pre", "", c.hits.map((h) => h[0] + "  " + h[1].toFixed(3)).join("\n")));
  } else if (c.call === "tool") {
    div.appendChild(el("div", "meta", "tool `" + c.tool + "` · " + c.status));
    if (c.ran) div.appendChild(el("div", "meta", "ran the net `" + c.ran.net + "`: " + c.ran.end + " after " + c.ran.steps + " steps, " + c.ran.firings + " firings"));
    div.appendChild(el("pre", "", "arguments: " + more(c.args) + "\nresult: " + more(c.result)));
  }
  return div;
}

function drawInspector(r) {
  const box = $("inspector");
  box.textContent = "";
  if (!r.ok) {
    box.appendChild(el("p", "note", (r.data && r.data.error) || "cannot inspect it"));
    return;
  }
  const v = r.data;
  box.dataset.kind = v.kind;
  if (v.kind === "connection") {
    box.dataset.name = v.conn;
    box.appendChild(el("div", "sink-head", v.conn));
    box.appendChild(el("div", "meta", v.type + " · " + v.state));
    box.appendChild(v.value ? valueBox(v.value) : el("p", "note", "no token"));
    return;
  }
  box.dataset.name = v.op;
  const head = el("div", "sink-head", v.label + " ");
  head.appendChild(el("code", "", v.op));
  box.appendChild(head);
  box.appendChild(el("div", "meta", v.type + " · fired " + v.fired + (v.fired === 1 ? " time" : " times")));
  if (v.last_call) {
    const h = el("h3", "", "Last call (step " + v.last_call.step + ")" + (v.last_call.usage ? " · " + usageText(v.last_call.usage) : ""));
    box.appendChild(h);
    for (const c of v.last_call.calls) box.appendChild(callBox(c));
  }
  for (const [title, ports] of [["Inputs", v.inputs], ["Outputs", v.outputs]]) {
    if (!ports.length) continue;
    box.appendChild(el("h3", "", title));
    for (const p of ports) box.appendChild(portBox(p));
  }
}
