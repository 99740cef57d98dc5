// The Lucille-rs console: plain JavaScript, no framework, no build step. Every number comes
// from the REST API (with the token, when the service has one); a run's page follows its
// progress stream (read with fetch, so the token travels in a header).
"use strict";

const TOKEN_KEY = "lucille-token";
const $ = (sel, root = document) => root.querySelector(sel);
const main = () => document.getElementById("main");
let leave = () => {}; // what the current page stops when another is shown

function token() {
  return sessionStorage.getItem(TOKEN_KEY);
}

function headers(extra = {}) {
  const h = { ...extra };
  const t = token();
  if (t) h.Authorization = `Bearer ${t}`;
  return h;
}

// Asks for the token once; resolves when one is given.
let asking = null;
function askToken(message) {
  if (asking) return asking;
  const dialog = document.getElementById("token-dialog");
  $("#token-error").textContent = message || "";
  asking = new Promise((resolve) => {
    const form = document.getElementById("token-form");
    form.onsubmit = () => {
      const value = $("#token-input").value.trim();
      if (!value) return false;
      sessionStorage.setItem(TOKEN_KEY, value);
      asking = null;
      resolve();
      return true;
    };
  });
  if (!dialog.open) dialog.showModal();
  $("#token-input").focus();
  return asking;
}

// A JSON API call; on 401 asks for the token and tries again.
async function api(method, path, body) {
  for (;;) {
    const init = { method, headers: headers(body ? { "Content-Type": "application/json" } : {}) };
    if (body) init.body = JSON.stringify(body);
    const r = await fetch(path, init);
    if (r.status === 401) {
      const had = token();
      sessionStorage.removeItem(TOKEN_KEY);
      await askToken(had ? "That token was not accepted." : "");
      continue;
    }
    const data = await r.json().catch(() => ({ error: `HTTP ${r.status}` }));
    return { status: r.status, ok: r.ok, data };
  }
}

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

function row(cells) {
  const tr = document.createElement("tr");
  for (const c of cells) {
    if (c instanceof Node) {
      const td = document.createElement("td");
      td.appendChild(c);
      tr.appendChild(td);
    } else {
      const [text, cls] = Array.isArray(c) ? c : [c, ""];
      tr.appendChild(el("td", text, cls));
    }
  }
  return tr;
}

function fill(tbody, rows, empty, columns) {
  tbody.replaceChildren(...rows);
  if (!rows.length) {
    const td = el("td", empty, "muted");
    td.colSpan = columns;
    const tr = document.createElement("tr");
    tr.appendChild(td);
    tbody.appendChild(tr);
  }
}

const n = (x) => Number(x || 0).toLocaleString("en-US");

function when(iso) {
  if (!iso) return "—";
  const d = new Date(iso);
  return d.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "medium" });
}

function duration(run) {
  if (!run.startedAt) return "—";
  const end = run.endedAt ? new Date(run.endedAt) : new Date();
  const s = (end - new Date(run.startedAt)) / 1000;
  return s < 60 ? `${s.toFixed(1)} s` : `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
}

function badge(node, state) {
  node.textContent = state;
  node.className = `badge state-${state}`;
}

function show(templateId) {
  leave();
  leave = () => {};
  const m = main();
  m.replaceChildren(document.getElementById(templateId).content.cloneNode(true));
  for (const a of document.querySelectorAll("header nav a")) {
    a.removeAttribute("aria-current");
  }
  return m;
}

// ----- Runs list -----

async function runsPage(offset) {
  show("tpl-runs");
  document.getElementById("nav-runs").setAttribute("aria-current", "page");
  const limit = 25;
  let stopped = false;
  let timer = null;
  leave = () => {
    stopped = true;
    clearTimeout(timer);
  };
  const tick = async () => {
    const r = await api("GET", `/api/runs?limit=${limit}&offset=${offset}`);
    if (stopped) return;
    if (!r.ok) {
      $("#runs-total").textContent = r.data.error || "cannot list runs";
    } else {
      $("#runs-total").textContent = `${r.data.total} run${r.data.total === 1 ? "" : "s"}`;
      const rows = r.data.runs.map((run) => {
        const link = el("a", run.name || run.id);
        link.href = `#/runs/${run.id}`;
        link.title = run.name || run.id; // the whole name where the column cuts it
        const state = el("span");
        badge(state, run.state);
        return row([link, state, [n(run.counts.published), "n"], [n(run.counts.succeeded), "n"],
          [n(run.counts.failed), "n"], [n(run.counts.dropped), "n"], when(run.submittedAt),
          [duration(run), "n"]]);
      });
      fill($("#runs-table tbody"), rows, "No runs yet: start one from New run.", 8);
      $("#runs-prev").disabled = offset === 0;
      $("#runs-next").disabled = offset + limit >= r.data.total;
    }
    timer = setTimeout(tick, 1000);
  };
  $("#runs-prev").onclick = () => { location.hash = `#/runs?offset=${Math.max(0, offset - limit)}`; };
  $("#runs-next").onclick = () => { location.hash = `#/runs?offset=${offset + limit}`; };
  await tick();
}

// ----- One run -----

function renderRun(run) {
  $("#run-name").textContent = run.name || run.id;
  badge($("#run-state"), run.state);
  const parts = [`submitted ${when(run.submittedAt)}`];
  if (run.startedAt) parts.push(`started ${when(run.startedAt)}`);
  if (run.endedAt) parts.push(`ended ${when(run.endedAt)} (${duration(run)})`);
  if (run.replayOf) parts.push(`replay of ${run.replayOf}`);
  $("#run-times").textContent = parts.join(" · ");
  for (const k of ["published", "succeeded", "failed", "dropped", "unchanged"]) {
    $(`#count-${k}`).textContent = n(run.counts[k] || 0);
  }
  $("#run-error").textContent = run.error || "";
  fill($("#run-connectors tbody"), run.connectors.map((c) => row([c.name, c.state,
    [n(c.published), "n"], [n(c.succeeded), "n"], [n(c.failed), "n"], [n(c.dropped), "n"]])),
    "No connectors.", 6);
  fill($("#run-stages tbody"), run.stages.map((s) => row([s.pipeline, s.name, s.class,
    [n(s.documents), "n"], [n(s.errors), "n"], [s.seconds.toFixed(3), "n"]])),
    run.state === "running" || run.state === "queued" ? "The run is going." : "No stages.", 6);
  $("#stages-note").hidden = !(run.state === "running" || run.state === "queued");
  $("#run-summary").textContent = run.summary || "";
  drawStageBars(run);
  const live = run.state === "running" || run.state === "queued";
  $("#run-cancel").disabled = !live;
  $("#run-replay").disabled = live || !run.counts.failed;
}

// ----- Charts: SVG drawn here (no library, nothing fetched; the CSP holds) -----

const SVG_NS = "http://www.w3.org/2000/svg";
function svgEl(tag, attrs = {}, text) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = String(text);
  return e;
}

// Samples closer together than this are merged: a rate over a sliver of a second is noise.
const MIN_GAP = 0.25;

// Each connector's rates between its progress samples, plotted at the end of each interval:
// Map connector -> [{t, done, published}], `done` the documents that reached their end
// (succeeded + failed + dropped) per second, `published` those its connector read. The first
// interval starts at the run's start (t = 0, nothing yet); a sample closer than MIN_GAP to
// the last one kept is skipped, except the last, which replaces that one.
function throughput(points) {
  const by = new Map();
  for (const p of points) {
    if (!by.has(p.connector)) by.set(p.connector, []);
    by.get(p.connector).push({ t: p.t, done: p.succeeded + p.failed + p.dropped, published: p.published });
  }
  const out = new Map();
  for (const [name, samples] of by) {
    const kept = [{ t: 0, done: 0, published: 0 }];
    samples.forEach((s, i) => {
      const last = i === samples.length - 1;
      if (s.t - kept[kept.length - 1].t < MIN_GAP) {
        if (!last) return;
        if (kept.length > 1) kept.pop();
        if (s.t - kept[kept.length - 1].t <= 0) return;
      }
      kept.push(s);
    });
    const series = [];
    for (let i = 1; i < kept.length; i++) {
      const [a, b] = [kept[i - 1], kept[i]];
      series.push({ t: b.t, done: (b.done - a.done) / (b.t - a.t), published: (b.published - a.published) / (b.t - a.t) });
    }
    out.set(name, series);
  }
  return out;
}

// The smallest 1, 2 or 5 times a power of ten at or above v.
function niceCeil(v) {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

const fmtRate = (r) => (r >= 100 ? Math.round(r).toLocaleString("en-US") : r.toFixed(r >= 10 ? 1 : 2));

function drawThroughput(points, live) {
  const chart = $("#throughput");
  if (!chart) return;
  const W = 720, H = 220, L = 64, R = 14, T = 12, B = 30;
  const series = throughput(points);
  const all = [...series.values()].flat();
  chart.replaceChildren(svgEl("title", { id: "throughput-title" },
    "Documents per second, per connector, over the run: finished (solid) and published (dashed)"));
  $("#throughput-note").textContent = live ? "(live)" : "";
  if (!all.length) {
    chart.appendChild(svgEl("text", { x: W / 2, y: H / 2, "text-anchor": "middle", class: "empty" },
      "No progress samples yet"));
    $("#throughput-legend").replaceChildren();
    return;
  }
  const maxT = Math.max(...all.map((p) => p.t), 1);
  const maxY = niceCeil(Math.max(...all.map((p) => Math.max(p.done, p.published))));
  const x = (t) => L + (t / maxT) * (W - L - R);
  const y = (r) => T + (1 - r / maxY) * (H - T - B);
  const axes = svgEl("g", { class: "axes" });
  // The grid's labels with as many decimals as its step needs (a step of 0.25 gets two).
  const step = maxY / 4;
  const decimals = step >= 1 ? 0 : step >= 0.1 ? 1 : 2;
  for (let i = 0; i <= 4; i++) {
    const v = step * i;
    axes.appendChild(svgEl("line", { x1: L, x2: W - R, y1: y(v), y2: y(v), class: i ? "grid" : "axis" }));
    axes.appendChild(svgEl("text", { x: L - 6, y: y(v) + 4, "text-anchor": "end" },
      v.toLocaleString("en-US", { minimumFractionDigits: decimals, maximumFractionDigits: decimals })));
  }
  for (let i = 0; i <= 5; i++) {
    const t = (maxT * i) / 5;
    axes.appendChild(svgEl("text", { x: x(t), y: H - 10, "text-anchor": "middle" },
      `${t < 10 ? t.toFixed(1) : Math.round(t)} s`));
  }
  chart.appendChild(axes);
  const legend = [];
  let i = 0;
  for (const [name, pts] of series) {
    const cls = `series series-${i % 6}`;
    for (const kind of ["published", "done"]) {
      const g = svgEl("g", { class: `${cls} ${kind}`, "data-connector": name, "data-kind": kind });
      g.appendChild(svgEl("polyline", {
        points: [[x(0), y(0)], ...pts.map((p) => [x(p.t), y(p[kind])])].map((xy) => xy.join(",")).join(" "),
      }));
      for (const p of pts) {
        const c = svgEl("circle", { cx: x(p.t), cy: y(p[kind]), r: kind === "done" ? 3 : 2, class: "point",
          "data-t": p.t, "data-rate": p[kind] });
        c.appendChild(svgEl("title", {}, `${name}: ${fmtRate(p[kind])} docs/s ${kind === "done" ? "finished" : "published"} by ${p.t.toFixed(1)} s`));
        g.appendChild(c);
      }
      chart.appendChild(g);
    }
    const li = el("li");
    li.append(el("span", null, `swatch ${cls}`), el("span", `${name} `),
      el("span", "finished (solid), published (dashed)", "muted"));
    legend.push(li);
    i++;
  }
  $("#throughput-legend").replaceChildren(...legend);
}

function drawStageBars(run) {
  const chart = $("#stage-bars");
  if (!chart) return;
  const stages = run.stages || [];
  const total = stages.reduce((a, s) => a + s.seconds, 0);
  const W = 440, LABEL = 130, BAR = W - LABEL - 110, ROW = 28;
  chart.replaceChildren(svgEl("title", { id: "stage-bars-title" }, "Each stage's share of the stage time"));
  if (!stages.length) {
    chart.setAttribute("viewBox", `0 0 ${W} 60`);
    chart.appendChild(svgEl("text", { x: 8, y: 34, class: "empty" },
      run.state === "running" || run.state === "queued" ? "Stage times appear when the run ends." : "No stages."));
    return;
  }
  chart.setAttribute("viewBox", `0 0 ${W} ${ROW * stages.length + 12}`);
  const most = Math.max(...stages.map((s) => s.seconds)) || 1;
  stages.forEach((s, i) => {
    const yTop = 6 + i * ROW;
    const share = total > 0 ? s.seconds / total : 0;
    const g = svgEl("g", { class: "stage-bar", "data-stage": s.name, "data-pipeline": s.pipeline,
      "data-seconds": s.seconds, "data-share": share });
    g.appendChild(svgEl("text", { x: LABEL - 8, y: yTop + 16, "text-anchor": "end" }, s.name));
    g.appendChild(svgEl("rect", { x: LABEL, y: yTop + 3, height: ROW - 10,
      width: Math.max(1, (s.seconds / most) * BAR), rx: 2 }));
    g.appendChild(svgEl("text", { x: LABEL + Math.max(1, (s.seconds / most) * BAR) + 6, y: yTop + 16, class: "value" },
      `${s.seconds.toFixed(3)} s · ${Math.round(share * 100)}%`));
    const tip = svgEl("title", {}, `${s.pipeline} / ${s.name} (${s.class}): ${s.seconds.toFixed(3)} s, ${n(s.documents)} documents`);
    g.appendChild(tip);
    chart.appendChild(g);
  });
}

async function loadTimeline(id, live) {
  const r = await api("GET", `/api/runs/${id}/timeline`);
  if (r.ok) drawThroughput(r.data.points, live);
}

// Reads a text/event-stream with fetch (EventSource cannot send the token).
async function follow(id, onEvent, signal) {
  const r = await fetch(`/api/runs/${id}/events`, { headers: headers(), signal });
  if (r.status === 401) {
    sessionStorage.removeItem(TOKEN_KEY);
    await askToken("");
    return follow(id, onEvent, signal);
  }
  if (!r.ok || !r.body) return;
  const reader = r.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let event = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) event = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      if (data.length) onEvent(event, JSON.parse(data.join("\n")));
    }
  }
}

async function loadFailures(id, offset) {
  const limit = 20;
  const r = await api("GET", `/api/runs/${id}/failures?limit=${limit}&offset=${offset}`);
  if (!r.ok) return;
  fill($("#run-failures tbody"), r.data.failures.map((f) => {
    const reason = el("div", f.reason, "reason");
    reason.title = f.reason; // the whole reason; the cell shows its first lines
    return row([[f.id, "mono"], f.stage || "—", reason]);
  }), "No failed documents.", 3);
  const total = r.data.total;
  $("#failures-title").textContent = `Failures (${n(total)})`;
  $("#failures-page").textContent = total ? `${offset + 1}–${Math.min(offset + limit, total)} of ${n(total)}` : "";
  $("#failures-prev").disabled = offset === 0;
  $("#failures-next").disabled = offset + limit >= total;
  $("#failures-prev").onclick = () => loadFailures(id, Math.max(0, offset - limit));
  $("#failures-next").onclick = () => loadFailures(id, offset + limit);
}

async function runPage(id) {
  show("tpl-run");
  const controller = new AbortController();
  leave = () => controller.abort();
  const first = await api("GET", `/api/runs/${id}`);
  if (!first.ok) {
    $("#run-name").textContent = first.data.error || "No such run";
    return;
  }
  renderRun(first.data);
  await loadFailures(id, 0);
  $("#run-cancel").onclick = async () => {
    const r = await api("POST", `/api/runs/${id}/cancel`);
    $("#run-action").textContent = r.ok ? "Cancelling: the run drains what is in flight." : (r.data.error || "cannot cancel");
  };
  $("#run-replay").onclick = async () => {
    const r = await api("POST", `/api/runs/${id}/replay`);
    if (r.ok) location.hash = `#/runs/${r.data.id}`;
    else $("#run-action").textContent = r.data.error || "cannot replay";
  };
  const running = first.data.state === "running" || first.data.state === "queued";
  await loadTimeline(id, running);
  if (running) {
    // The chart follows the run: its timeline again at most every 1.5 s of progress events.
    let drawn = Date.now();
    follow(id, async (event, run) => {
      renderRun(run);
      if (event === "end") {
        await loadTimeline(id, false);
        await loadFailures(id, 0);
      } else if (Date.now() - drawn > 1500) {
        drawn = Date.now();
        await loadTimeline(id, true);
      }
    }, controller.signal).catch(() => {});
  }
}

// ----- New run -----

const EXAMPLE = `# A config as \`lucille run\` takes it; paths are read by the service.
connectors: [
  { name: "numbers", class: "SequenceConnector", numDocs: 1000, pipeline: "enrich" }
]
pipelines: [
  { name: "enrich", stages: [
    { name: "mark", class: "SetStaticValues", staticValues: { source: "console" } }
  ] }
]
indexer { type: "tantivy" }
tantivy { path: "console-index" }
`;

// The line a key path names in the text, found by its last key (a best guess: HOCON allows
// the same key in many places; the first after the previous keys of the path wins).
function lineOf(text, path) {
  const keys = path.split(/[.[\]]+/).filter((k) => k && !/^\d+$/.test(k));
  let at = 0;
  for (const k of keys) {
    const re = new RegExp(`(^|[\\s{,"])"?${k.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}"?\\s*[:={]`, "m");
    const m = re.exec(text.slice(at));
    if (m) at += m.index + m[0].length;
  }
  return at ? text.slice(0, at).split("\n").length : null;
}

function showProblems(list, errors, text) {
  list.replaceChildren(...errors.map((e) => {
    const li = el("li");
    const where = el("code", e.path || "(config)", "path");
    li.appendChild(where);
    const line = text === undefined ? null : lineOf(text, e.path || "");
    if (line) li.appendChild(el("span", ` line ${line}`, "muted"));
    li.appendChild(el("span", `: ${e.message}`));
    if (e.suggestion) li.appendChild(el("span", ` (${e.suggestion})`, "suggestion"));
    li.dataset.path = e.path || "";
    return li;
  }));
}

function newPage() {
  show("tpl-new");
  document.getElementById("nav-new").setAttribute("aria-current", "page");
  const area = $("#new-config");
  const gutter = $("#new-gutter");
  area.value = sessionStorage.getItem("lucille-draft") || EXAMPLE;
  let timer = null;
  let seq = 0;
  const lines = () => {
    const count = area.value.split("\n").length;
    gutter.textContent = Array.from({ length: count }, (_, i) => i + 1).join("\n");
    gutter.scrollTop = area.scrollTop;
  };
  const check = async () => {
    const mine = ++seq;
    const text = area.value;
    const r = await api("POST", "/api/validate", { config: text });
    if (mine !== seq) return;
    const errors = r.ok ? r.data.errors : (r.data.errors || [{ path: "", message: r.data.error }]);
    showProblems($("#new-errors"), errors, text);
    $("#new-status").textContent = r.ok && r.data.valid ? "The config is valid." :
      `${errors.length} config error${errors.length === 1 ? "" : "s"}`;
    $("#new-status").className = r.ok && r.data.valid ? "ok" : "error";
  };
  area.addEventListener("input", () => {
    sessionStorage.setItem("lucille-draft", area.value);
    lines();
    clearTimeout(timer);
    $("#new-status").textContent = "Checking…";
    $("#new-status").className = "muted";
    timer = setTimeout(check, 350);
  });
  area.addEventListener("scroll", () => { gutter.scrollTop = area.scrollTop; });
  leave = () => clearTimeout(timer);
  $("#new-form").onsubmit = async (ev) => {
    ev.preventDefault();
    const body = { config: area.value, mode: $("#new-mode").value };
    const name = $("#new-name").value.trim();
    if (name) body.name = name;
    const r = await api("POST", "/api/runs", body);
    if (r.ok) {
      location.hash = `#/runs/${r.data.id}`;
    } else {
      const errors = r.data.errors || [{ path: "", message: r.data.error }];
      showProblems($("#new-errors"), errors, area.value);
      $("#new-status").textContent = "The run was not started: fix the errors below.";
      $("#new-status").className = "error";
    }
  };
  lines();
  check();
}

// ----- Schedules -----

async function schedulesPage() {
  show("tpl-schedules");
  document.getElementById("nav-schedules").setAttribute("aria-current", "page");
  const load = async () => {
    const r = await api("GET", "/api/schedules");
    if (!r.ok) return;
    fill($("#schedules-table tbody"), r.data.schedules.map((s) => {
      const actions = el("span", null, "buttons");
      const toggle = el("button", s.paused ? "Resume" : "Pause");
      toggle.type = "button";
      toggle.onclick = async () => {
        await api("POST", `/api/schedules/${s.id}/${s.paused ? "resume" : "pause"}`);
        load();
      };
      const del = el("button", "Delete", "danger");
      del.type = "button";
      del.onclick = async () => {
        if (!confirm(`Delete schedule ${s.name}?`)) return;
        await api("DELETE", `/api/schedules/${s.id}`);
        load();
      };
      actions.append(toggle, del);
      let last = el("span", "—");
      if (s.lastRunId) {
        last = el("a", s.lastRunId.slice(0, 8));
        last.href = `#/runs/${s.lastRunId}`;
      }
      const whenText = s.cron ? `cron ${s.cron}` : `every ${s.everySecs} s`;
      return row([s.name, whenText, s.paused ? "paused" : when(s.nextRunAt), last, actions]);
    }), "No schedules.", 5);
  };
  $("#schedule-form").onsubmit = async (ev) => {
    ev.preventDefault();
    const body = {};
    const name = $("#sched-name").value.trim();
    if (name) body.name = name;
    const cron = $("#sched-cron").value.trim();
    const every = $("#sched-every").value.trim();
    if (cron) body.cron = cron;
    if (every) body.everySecs = Number(every);
    const path = $("#sched-path").value.trim();
    if (path) body.configPath = path;
    else body.config = $("#sched-config").value;
    const r = await api("POST", "/api/schedules", body);
    if (r.ok) {
      $("#sched-errors").replaceChildren();
      load();
    } else {
      showProblems($("#sched-errors"), r.data.errors || [{ path: "", message: r.data.error }]);
    }
  };
  await load();
}

// ----- Search the embedded indexes the runs wrote -----

const HITS_PER_PAGE = 10;

// A snippet's HTML (escaped text with the terms in <b>, from the API) as nodes: text and <b>
// only, whatever else it might hold.
function snippetNodes(html) {
  const body = new DOMParser().parseFromString(`<body>${html}</body>`, "text/html").body;
  return [...body.childNodes].map((node) => node.nodeName === "B"
    ? el("b", node.textContent) : document.createTextNode(node.textContent || ""));
}

// A stored value, short: long lists of numbers (vectors) are counted, long text cut.
function shortValue(v) {
  if (Array.isArray(v) && v.length > 8 && v.every((x) => typeof x === "number")) return `[${v.length} numbers]`;
  const text = typeof v === "string" ? v : JSON.stringify(v);
  return text.length > 300 ? `${text.slice(0, 300)}…` : text;
}

function hitItem(hit) {
  const li = el("li", null, "hit");
  li.dataset.id = String(hit.id);
  const head = el("div", null, "hit-head");
  head.append(el("code", hit.id, "hit-id"), el("span", `score ${hit.score.toFixed(3)}`, "muted"));
  li.appendChild(head);
  for (const [field, html] of Object.entries(hit.snippets || {})) {
    const p = el("p", null, "snippet");
    p.dataset.field = field;
    p.append(el("span", `${field}: `, "field"), ...snippetNodes(html));
    li.appendChild(p);
  }
  const dl = el("dl", null, "fields");
  for (const [k, v] of Object.entries(hit.fields || {})) {
    const div = el("div");
    div.append(el("dt", k), el("dd", shortValue(v)));
    dl.appendChild(div);
  }
  li.appendChild(dl);
  return li;
}

// The query with the character the parser stopped at marked (positions count characters,
// as the API does, not UTF-16 units).
function showQueryError(q, error, position) {
  $("#search-error").hidden = false;
  $("#search-error-text").textContent = error;
  const where = $("#search-error-where");
  where.replaceChildren();
  where.dataset.position = position === null || position === undefined ? "" : String(position);
  if (position === null || position === undefined) { where.hidden = true; return; }
  where.hidden = false;
  const chars = Array.from(q);
  const at = chars.slice(position, position + 1).join("") || " ";
  where.append(document.createTextNode(chars.slice(0, position).join("")),
    el("mark", at, "at"), document.createTextNode(chars.slice(position + 1).join("")),
    document.createTextNode(`\n${" ".repeat(position)}^ character ${position}`));
  const input = $("#search-q");
  input.setAttribute("aria-invalid", "true");
  const unit = chars.slice(0, position).join("").length;
  input.focus();
  input.setSelectionRange(unit, unit + at.length);
}

async function searchPage(params) {
  show("tpl-search");
  document.getElementById("nav-search").setAttribute("aria-current", "page");
  const listed = await api("GET", "/api/indexes");
  const select = $("#search-index");
  if (!listed.ok) {
    $("#search-index-note").textContent = listed.data.error || "cannot list the indexes";
    select.disabled = $("#search-go").disabled = true;
    return;
  }
  const indexes = listed.data.indexes;
  if (!indexes.length) {
    $("#search-index-note").textContent = "No indexes yet: a run with indexer type tantivy writes one.";
    select.disabled = $("#search-go").disabled = true;
    $("#search-prev").disabled = $("#search-next").disabled = true;
    return;
  }
  select.replaceChildren(...indexes.map((i) => {
    const o = el("option", `${i.name} (${n(i.documents)} documents)`);
    o.value = i.name;
    return o;
  }));
  const wanted = params.get("index");
  const index = indexes.some((i) => i.name === wanted) ? wanted : indexes[0].name;
  select.value = index;
  const q = params.get("q") || "";
  const facet = params.get("facet") || "";
  const offset = Math.max(0, Number(params.get("offset") || 0) || 0);
  $("#search-q").value = q;
  $("#search-facet").value = facet;
  const go = (over) => {
    const next = new URLSearchParams({ index: select.value, q: $("#search-q").value,
      facet: $("#search-facet").value.trim(), offset: "0", ...over });
    location.hash = `#/search?${next}`;
  };
  $("#search-form").onsubmit = (ev) => { ev.preventDefault(); go({}); };
  select.onchange = () => go({});
  const picked = indexes.find((i) => i.name === index);
  $("#search-index-note").textContent = `written by run ${picked.runId.slice(0, 8)}`;

  const query = new URLSearchParams({ q, limit: String(HITS_PER_PAGE), offset: String(offset) });
  if (facet) query.set("facet", facet);
  const r = await api("GET", `/api/indexes/${encodeURIComponent(index)}/search?${query}`);
  $("#search-prev").disabled = $("#search-next").disabled = true;
  if (!r.ok) {
    showQueryError(q, r.data.error || `HTTP ${r.status}`, r.status === 400 ? r.data.position : null);
    $("#search-total").textContent = "\u00a0";
    return;
  }
  const { total, hits, facets } = r.data;
  $("#search-total").textContent = `${n(total)} match${total === 1 ? "" : "es"}${q.trim() ? "" : " (every document)"}`;
  const list = $("#search-hits");
  list.start = offset + 1;
  list.replaceChildren(...hits.map(hitItem));
  if (!hits.length) list.appendChild(el("li", total ? "No hits on this page." : "No documents match.", "muted empty"));
  $("#search-page").textContent = total ? `${n(offset + 1)}–${n(Math.min(offset + hits.length, total))} of ${n(total)}` : "";
  $("#search-prev").disabled = offset === 0;
  $("#search-next").disabled = offset + HITS_PER_PAGE >= total;
  $("#search-prev").onclick = () => go({ q, facet, offset: String(Math.max(0, offset - HITS_PER_PAGE)) });
  $("#search-next").onclick = () => go({ q, facet, offset: String(offset + HITS_PER_PAGE) });
  const values = facet ? facets[facet] || [] : null;
  $("#search-facets").hidden = values === null;
  if (values !== null) {
    $("#search-facets-title").textContent = facet;
    $("#search-facet-values").replaceChildren(...values.map((f) => {
      const li = el("li");
      const a = el("a", typeof f.value === "string" ? f.value : JSON.stringify(f.value));
      // Narrows the query to this value.
      const term = `${facet}:${typeof f.value === "string" ? JSON.stringify(f.value) : f.value}`;
      a.href = `#/search?${new URLSearchParams({ index, q: q.trim() ? `(${q}) AND ${term}` : term, facet, offset: "0" })}`;
      li.dataset.value = JSON.stringify(f.value);
      li.append(a, el("span", n(f.count), "count n"));
      return li;
    }));
    if (!values.length) $("#search-facet-values").appendChild(el("li", "No values among the matches.", "muted"));
  }
}

// ----- Routing -----

function route() {
  const hash = location.hash || "#/runs";
  const [path, query] = hash.slice(1).split("?");
  const params = new URLSearchParams(query || "");
  const parts = path.split("/").filter(Boolean);
  if (parts[0] === "runs" && parts[1]) return runPage(decodeURIComponent(parts[1]));
  if (parts[0] === "new") return newPage();
  if (parts[0] === "schedules") return schedulesPage();
  if (parts[0] === "search") return searchPage(params);
  return runsPage(Number(params.get("offset") || 0));
}

async function health() {
  try {
    const r = await fetch("/ready");
    $("#conn").textContent = r.ok ? "" : "service not ready";
  } catch {
    $("#conn").textContent = "service unreachable";
  }
}

window.addEventListener("hashchange", () => { route(); main().focus(); });
document.addEventListener("DOMContentLoaded", () => {
  route();
  health();
  setInterval(health, 5000);
});
