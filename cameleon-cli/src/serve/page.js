// The `cameleon serve` page: draws the net, follows the engine through the event stream, shows
// what the net produced, and sends the buttons' requests. No framework, no build step. The
// token is in an HttpOnly cookie the server set when the page was opened: every request of the
// page (and its event stream) carries it without this script ever seeing it.
"use strict";

const $ = (id) => document.getElementById(id);

// What tests and the curious can read: when the page was first ready, event-to-screen latency.
const stats = (window.cameleon = {
  readyAt: null,
  streamVersion: -1, // the newest state that came through the event stream
  renders: 0,
  events: 0,
  latency: { count: 0, last: 0, max: 0, sum: 0 },
});

let latest = null; // the newest state received
let shownVersion = -1; // the version of the state on screen
let frame = 0; // a pending animation frame
let typesOfConn = {}; // connection name -> data type (from the SVG)

async function api(method, path, body) {
  const headers = {};
  if (method === "POST") headers["Content-Type"] = "application/json";
  const r = await fetch(path, {
    method,
    headers,
    credentials: "same-origin",
    body: method === "POST" ? JSON.stringify(body || {}) : undefined,
  });
  const ct = r.headers.get("Content-Type") || "";
  const data = ct.includes("json") ? await r.json() : await r.text();
  return { ok: r.ok, status: r.status, data, headers: r.headers };
}

// ---------------------------------------------------------------------------------------------
// State: newest wins; drawn at most once per animation frame.

function receive(state) {
  if (!state || typeof state.version !== "number") return;
  if (latest && state.version < latest.version) return;
  latest = state;
  if (!frame) frame = requestAnimationFrame(render);
}

function render() {
  frame = 0;
  const s = latest;
  if (!s || s.version === shownVersion) return;
  shownVersion = s.version;
  stats.renders++;
  drawMarking(s);
  drawStatus(s);
  drawWaiting(s);
  scheduleTimeline(s);
  scheduleResults();
  if (s.sent_ms) {
    const l = Math.max(0, Date.now() - s.sent_ms);
    const L = stats.latency;
    L.count++;
    L.last = l;
    L.sum += l;
    if (l > L.max) L.max = l;
  }
  document.body.dataset.step = String(s.step);
  document.body.dataset.version = String(s.version);
}

function drawMarking(s) {
  const svg = $("visual").querySelector("svg");
  if (!svg) return;
  for (const p of svg.querySelectorAll("path[data-conn]")) {
    const st = s.connections[p.getAttribute("data-conn")];
    if (st && p.getAttribute("data-state") !== st) p.setAttribute("data-state", st);
  }
  const fireable = new Set(s.fireable);
  const waiting = new Set(s.waiting.map((w) => w.op));
  for (const g of svg.querySelectorAll("g[data-op]")) {
    const op = g.getAttribute("data-op");
    g.classList.toggle("enabled", fireable.has(op));
    g.classList.toggle("waiting", waiting.has(op));
  }
}

// What the run spent on models, and of what budget: "120 tokens of 500 · $0.000120".
function spentText(u, b) {
  let t = u.total_tokens + " tokens";
  if (b && b.tokens) t += " of " + b.tokens;
  if (u.cost_usd > 0 || (b && b.cost_usd)) {
    t += " · $" + u.cost_usd.toFixed(6);
    if (b && b.cost_usd) t += " of $" + b.cost_usd;
  }
  return t;
}

function drawStatus(s) {
  const st = $("status");
  let text = "step " + s.step;
  if (s.end) text += " · " + s.end;
  else if (s.running) text += " · running";
  if (s.firing && s.firing.length) text += " · firing " + s.firing.join(", ") + "…";
  else if (s.busy && !s.running) text += " · working…";
  if (s.redo) text += " · " + s.redo + " to replay";
  if (s.branches > 1) text += " · " + s.branches + " branches";
  if (s.usage) text += " · " + spentText(s.usage, s.budget);
  st.textContent = text;
  st.title = s.end_detail || "";
  st.className = s.end ? "end-" + s.end : "";
  $("pause").disabled = !s.running;
  for (const id of ["step", "back", "run", "reset", "refire"]) {
    $(id).disabled = s.running || !s.engine;
  }
}

let waitingKey = "";
function drawWaiting(s) {
  const key = JSON.stringify(s.waiting);
  if (key === waitingKey) return;
  waitingKey = key;
  const box = $("waiting");
  box.textContent = "";
  if (!s.waiting.length) {
    box.innerHTML = '<p class="note">nothing is waiting for an answer</p>';
    return;
  }
  for (const w of s.waiting) {
    const div = document.createElement("div");
    div.className = "ask";
    div.dataset.op = w.op;
    const prompt = document.createElement("div");
    prompt.className = "prompt";
    prompt.textContent = w.prompt;
    div.appendChild(prompt);
    const meta = document.createElement("div");
    meta.className = "note";
    meta.style.padding = "0";
    meta.textContent = "`" + w.op + "` · " + w.type;
    div.appendChild(meta);
    if (w.context) {
      const ctx = document.createElement("div");
      ctx.className = "context";
      ctx.textContent = w.context;
      div.appendChild(ctx);
    }
    const err = document.createElement("div");
    err.className = "error";
    const send = async (value) => {
      const r = await api("POST", "/api/provide/" + encodeURIComponent(w.op), { value });
      if (r.ok) {
        receive(r.data);
        runAfterAnswer();
      } else err.textContent = r.data.error || String(r.data);
    };
    if (w.type === "DataBool") {
      for (const [label, v] of [["Yes", true], ["No", false]]) {
        const b = document.createElement("button");
        b.className = "provide";
        b.dataset.value = String(v);
        b.textContent = label;
        b.onclick = () => send(v);
        div.appendChild(b);
      }
    } else {
      const input = document.createElement(w.type === "DataJSON" ? "textarea" : "input");
      input.className = "answer";
      input.placeholder = w.type === "DataJSON" ? "any JSON value" : "your answer";
      const b = document.createElement("button");
      b.className = "provide";
      b.textContent = "Answer";
      b.onclick = () => {
        if (w.type === "DataJSON") {
          try {
            send(JSON.parse(input.value));
          } catch (e) {
            err.textContent = "not JSON: " + e.message;
          }
        } else send(input.value);
      };
      input.addEventListener("keydown", (e) => {
        if (e.key === "Enter" && w.type !== "DataJSON") b.click();
      });
      div.appendChild(input);
      div.appendChild(b);
    }
    div.appendChild(err);
    box.appendChild(div);
  }
}

// After an answer, a run that stopped in WAITING goes on by itself.
let resumeRun = false;
function runAfterAnswer() {
  if (resumeRun) control("run");
}

// ---------------------------------------------------------------------------------------------
// Timeline: fetched when the step changes, at most a few times a second.

let timelineTimer = 0;
let timelineStep = -1;
function scheduleTimeline(s) {
  const key = s.step + "/" + s.redo + "/" + s.branches;
  if (key === timelineStep || timelineTimer) return;
  timelineTimer = setTimeout(async () => {
    timelineTimer = 0;
    timelineStep = key;
    const r = await api("GET", "/api/history?limit=200");
    if (r.ok) drawTimeline(r.data);
  }, 120);
}

// The operators of a history entry, each with the satellite it ran on (`serve --nats`).
function ranOn(e) {
  const on = e.ran_on || [];
  return e.ops.map((op, i) => (on[i] ? op + " @ " + on[i] : op)).join(", ");
}

function drawTimeline(h) {
  const ol = $("timeline");
  ol.textContent = "";
  const start = document.createElement("li");
  start.textContent = "0 · initial marking";
  start.dataset.step = "0";
  if (h.depth === 0) start.classList.add("current");
  start.onclick = () => goto({ step: 0 });
  ol.appendChild(start);
  for (const e of h.entries) {
    const li = document.createElement("li");
    li.className = "entry";
    li.dataset.step = String(e.step);
    li.textContent = e.step + " · " + ranOn(e);
    if (e.step === h.depth) li.classList.add("current");
    li.onclick = () => goto({ step: e.step });
    ol.appendChild(li);
  }
  for (const e of h.redo) {
    const li = document.createElement("li");
    li.className = "entry redo";
    li.dataset.step = String(e.step);
    li.textContent = e.step + " · " + ranOn(e) + " (recorded)";
    li.onclick = () => goto({ step: e.step });
    ol.appendChild(li);
  }
  const cur = ol.querySelector(".current");
  if (cur) cur.scrollIntoView({ block: "nearest" });
  const br = $("branches");
  br.textContent = "";
  if (h.branches.length > 1) {
    for (const b of h.branches) {
      const btn = document.createElement("button");
      btn.className = "branch" + (b.current ? " current" : "");
      btn.dataset.branch = String(b.index);
      btn.textContent = "branch " + (b.index + 1) + " (" + b.depth + " steps)";
      btn.onclick = () => goto({ branch: b.index, step: b.depth });
      br.appendChild(btn);
    }
  }
}

async function goto(body) {
  const r = await api("POST", "/api/goto", body);
  if (r.ok) receive(r.data);
  else logLine("goto: " + (r.data.error || r.status));
}

// ---------------------------------------------------------------------------------------------
// Controls

async function control(name) {
  if (name === "run") resumeRun = true;
  if (name === "pause" || name === "reset" || name === "back" || name === "step") resumeRun = false;
  const r = await api("POST", "/api/" + name);
  if (r.ok) receive(r.data);
  else logLine(name + ": " + (r.data.error || r.status));
}

for (const id of ["step", "back", "run", "pause", "reset", "refire"]) {
  $(id).addEventListener("click", () => control(id));
}

function setView(v) {
  document.body.dataset.view = v;
  for (const b of document.querySelectorAll("#views button")) b.classList.toggle("on", b.dataset.view === v);
}
for (const b of document.querySelectorAll("#views button")) b.addEventListener("click", () => setView(b.dataset.view));

// ---------------------------------------------------------------------------------------------
// The drawing, and values on hover

async function loadSvg() {
  const r = await api("GET", "/api/svg");
  const box = $("visual");
  if (!r.ok) {
    box.innerHTML = "";
    const p = document.createElement("p");
    p.className = "note";
    p.textContent = (r.data && r.data.error) || "the net cannot be drawn";
    box.appendChild(p);
    return false;
  }
  box.innerHTML = r.data;
  if (r.headers.get("X-Cameleon-Sketch")) {
    const p = document.createElement("p");
    p.className = "note sketch";
    p.textContent =
      "The file is not a valid net yet: this is what could be read of it. Fix the problems in the Code view and Save.";
    box.insertBefore(p, box.firstChild);
  }
  typesOfConn = {};
  const legend = {};
  for (const p of box.querySelectorAll("path[data-conn]")) {
    typesOfConn[p.getAttribute("data-conn")] = p.getAttribute("data-type");
    legend[p.getAttribute("data-type")] = p.getAttribute("stroke");
  }
  $("legend").innerHTML = "";
  for (const [t, c] of Object.entries(legend)) {
    const span = document.createElement("span");
    const i = document.createElement("i");
    i.style.background = c;
    span.appendChild(i);
    span.appendChild(document.createTextNode(t));
    $("legend").appendChild(span);
  }
  const legendStates = document.createElement("span");
  legendStates.textContent =
    "dashed: EMPTY · thick: NEW · plain: OLD · green: enabled · orange: waiting · click a connection or an operator to inspect it";
  $("legend").appendChild(legendStates);
  // A wide, invisible stroke under each connection, so a click need not hit a 2-pixel line.
  for (const p of box.querySelectorAll("path[data-conn]")) {
    const hit = p.cloneNode(false);
    hit.removeAttribute("data-conn");
    hit.removeAttribute("marker-end");
    hit.setAttribute("data-hit", p.getAttribute("data-conn"));
    hit.setAttribute("stroke", "transparent");
    hit.setAttribute("stroke-width", "14");
    p.parentNode.insertBefore(hit, p);
  }
  shownVersion = -1;
  markSelection();
  return true;
}

$("fit").addEventListener("click", () => {
  const fit = $("visual").classList.toggle("fit");
  $("fit").textContent = fit ? "1:1" : "Fit";
});

const tip = $("tooltip");
function connOf(target) {
  const p = target.closest && target.closest("path[data-conn], path[data-hit]");
  return p ? p.getAttribute("data-conn") || p.getAttribute("data-hit") : null;
}

$("visual").addEventListener("mousemove", (e) => {
  const name = connOf(e.target);
  if (!name || !latest) {
    tip.hidden = true;
    return;
  }
  const value = latest.values && latest.values[name];
  tip.textContent =
    name + "\n" + (typesOfConn[name] || "") + " · " + (latest.connections[name] || "") +
    (value !== undefined ? "\n" + value : "");
  tip.style.left = e.clientX + 14 + "px";
  tip.style.top = e.clientY + 14 + "px";
  tip.hidden = false;
});
$("visual").addEventListener("mouseleave", () => (tip.hidden = true));
$("visual").addEventListener("click", (e) => {
  const conn = connOf(e.target);
  const g = e.target.closest && e.target.closest("g[data-op]");
  if (conn) select({ conn });
  else if (g) select({ op: g.getAttribute("data-op") });
});

// ---------------------------------------------------------------------------------------------
// Code view: problems at their lines as you type; Save writes the canonical form.

const editor = $("editor");
let checkTimer = 0;
let checkSeq = 0;

function drawGutter(problems) {
  const lines = editor.value.split("\n").length;
  const byLine = {};
  for (const p of problems) (byLine[p.line] = byLine[p.line] || []).push(p);
  const g = $("gutter");
  g.textContent = "";
  for (let i = 1; i <= lines; i++) {
    const d = document.createElement("div");
    d.className = "line" + (byLine[i] ? " problem" : "");
    d.dataset.line = String(i);
    d.textContent = String(i);
    if (byLine[i]) d.title = byLine[i].map((p) => p.message).join("\n");
    g.appendChild(d);
  }
  g.scrollTop = editor.scrollTop;
}

function drawProblems(problems) {
  drawGutter(problems);
  const ul = $("problems");
  ul.textContent = "";
  for (const p of problems) {
    const li = document.createElement("li");
    li.className = "problem";
    li.dataset.line = String(p.line);
    li.dataset.code = p.code || "";
    li.textContent = "line " + p.line + ", column " + p.column + ": " + p.message;
    if (p.hint) {
      const h = document.createElement("span");
      h.className = "hint";
      h.textContent = " — " + p.hint;
      li.appendChild(h);
    }
    li.onclick = () => goToLine(p.line);
    ul.appendChild(li);
  }
  const cs = $("code-status");
  cs.textContent = problems.length
    ? problems.length + " problem" + (problems.length > 1 ? "s" : "")
    : "valid";
  cs.className = problems.length ? "bad" : "";
}

function goToLine(n) {
  const lines = editor.value.split("\n");
  let at = 0;
  for (let i = 0; i < n - 1 && i < lines.length; i++) at += lines[i].length + 1;
  editor.focus();
  editor.setSelectionRange(at, at + (lines[n - 1] || "").length);
  editor.scrollTop = Math.max(0, (n - 5) * 18);
}

editor.addEventListener("input", () => {
  drawGutter([]);
  $("code-status").textContent = "checking…";
  clearTimeout(checkTimer);
  checkTimer = setTimeout(async () => {
    const seq = ++checkSeq;
    const r = await api("POST", "/api/check", { text: editor.value });
    if (seq !== checkSeq) return; // a newer check is on its way
    if (r.ok) drawProblems(r.data.problems);
  }, 200);
});
editor.addEventListener("scroll", () => ($("gutter").scrollTop = editor.scrollTop));
editor.addEventListener("keydown", (e) => {
  if (e.key === "Tab") {
    e.preventDefault();
    const { selectionStart: a, selectionEnd: b } = editor;
    editor.setRangeText("  ", a, b, "end");
    editor.dispatchEvent(new Event("input"));
  }
  if ((e.ctrlKey || e.metaKey) && e.key === "s") {
    e.preventDefault();
    save();
  }
});

async function save() {
  const r = await api("POST", "/api/save", { text: editor.value });
  if (r.ok) {
    editor.value = r.data.text;
    drawProblems([]);
    $("code-status").textContent = "saved (canonical form)";
    await loadSvg();
    receive(r.data.state);
  } else {
    drawProblems(r.data.problems || []);
    $("code-status").textContent = r.data.error || "not saved";
    $("code-status").className = "bad";
  }
}
$("save").addEventListener("click", save);

// ---------------------------------------------------------------------------------------------
// Events

function logLine(text) {
  const log = $("log");
  const li = document.createElement("li");
  li.textContent = text;
  log.appendChild(li);
  while (log.children.length > 60) log.removeChild(log.firstChild);
  log.scrollTop = log.scrollHeight;
}

// ---------------------------------------------------------------------------------------------
// Live output: what a firing writes while it runs (a model's answer streaming in), from the
// stream's `partial` events (the server coalesces them per flush). Shown on the operator in the
// drawing and in the Outputs panel until the step ends; the result then shows as usual.

const live = new Map(); // op -> { step, text }
let liveFrame = 0;

function onPartial(e) {
  let l = live.get(e.op);
  if (!l || l.step !== e.step) {
    l = { step: e.step, text: "" };
    live.set(e.op, l);
  }
  l.text += e.text;
  stats.partial = (stats.partial || 0) + 1;
  if (!liveFrame) liveFrame = requestAnimationFrame(drawLive);
}

function endLive(e) {
  let changed = false;
  for (const [op, l] of live) {
    if (e.event === "ended" || l.step === e.step) {
      live.delete(op);
      changed = true;
    }
  }
  if (changed && !liveFrame) liveFrame = requestAnimationFrame(drawLive);
}

function drawLive() {
  liveFrame = 0;
  const box = $("live");
  box.textContent = "";
  for (const [op, l] of live) {
    const div = document.createElement("div");
    div.className = "live";
    div.dataset.op = op;
    const name = document.createElement("b");
    name.textContent = op + " ";
    const text = document.createElement("span");
    text.textContent = l.text;
    div.append(name, text);
    box.appendChild(div);
  }
  const svg = $("visual").querySelector("svg");
  if (!svg) return;
  for (const t of svg.querySelectorAll("text.live-text")) {
    if (!live.has(t.parentNode.getAttribute("data-op"))) t.remove();
  }
  for (const [op, l] of live) {
    const g = svg.querySelector('g[data-op="' + CSS.escape(op) + '"]');
    if (!g) continue;
    let t = g.querySelector("text.live-text");
    if (!t) {
      t = document.createElementNS("http://www.w3.org/2000/svg", "text");
      t.setAttribute("class", "live-text");
      const box = g.getBBox();
      t.setAttribute("x", String(box.x));
      t.setAttribute("y", String(box.y + box.height + 12));
      g.appendChild(t);
    }
    const tail = l.text.replace(/\s+/g, " ");
    t.textContent = tail.length > 48 ? "…" + tail.slice(-47) : tail;
  }
}

let pendingLog = [];
let logTimer = 0;
function connect() {
  const es = new EventSource("/api/events");
  es.onmessage = (m) => {
    stats.events++;
    let e = null;
    try {
      e = JSON.parse(m.data);
    } catch (_) {}
    if (e && e.event === "partial") {
      onPartial(e); // live text, not a line of the log
      return;
    }
    if (e && (e.event === "step_committed" || e.event === "step_discarded" || e.event === "ended")) endLive(e);
    pendingLog.push(m.data);
    if (pendingLog.length > 40) pendingLog.splice(0, pendingLog.length - 40);
    if (!logTimer)
      logTimer = setTimeout(() => {
        logTimer = 0;
        for (const d of pendingLog) {
          try {
            const e = JSON.parse(d);
            logLine(e.event + (e.step ? " " + e.step : "") + (e.op ? " " + e.op : e.ops ? " " + e.ops.join(",") : "") + (e.end ? " " + e.end : ""));
          } catch (_) {
            logLine(d);
          }
        }
        pendingLog = [];
      }, 250);
  };
  es.addEventListener("state", (m) => {
    try {
      const s = JSON.parse(m.data);
      stats.streamVersion = Math.max(stats.streamVersion, s.version);
      receive(s);
    } catch (_) {}
  });
}

async function start() {
  const src = await api("GET", "/api/source");
  if (src.ok) {
    $("file").textContent = src.data.file;
    editor.value = src.data.text;
    drawProblems(src.data.problems);
    if (src.data.problems.length) setView("code");
  }
  await loadSvg();
  const st = await api("GET", "/api/state");
  if (st.ok) {
    receive(st.data);
    render();
  }
  const name = $("visual").querySelector("svg title");
  if (name) $("net-name").textContent = name.textContent || "Caméléon";
  connect();
  stats.readyAt = performance.now();
  document.body.dataset.ready = "1";
}

start();
