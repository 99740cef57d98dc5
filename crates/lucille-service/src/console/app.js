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
  const live = run.state === "running" || run.state === "queued";
  $("#run-cancel").disabled = !live;
  $("#run-replay").disabled = live || !run.counts.failed;
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
  if (first.data.state === "running" || first.data.state === "queued") {
    follow(id, async (event, run) => {
      renderRun(run);
      if (event === "end") await loadFailures(id, 0);
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

// ----- Routing -----

function route() {
  const hash = location.hash || "#/runs";
  const [path, query] = hash.slice(1).split("?");
  const params = new URLSearchParams(query || "");
  const parts = path.split("/").filter(Boolean);
  if (parts[0] === "runs" && parts[1]) return runPage(decodeURIComponent(parts[1]));
  if (parts[0] === "new") return newPage();
  if (parts[0] === "schedules") return schedulesPage();
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
