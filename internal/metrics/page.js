// The status page's script: it renders the page document (embedded in the page, then read
// again from /page.json every few seconds) into the page. Every text from schedd goes in
// as text (append of a string, textContent), never as markup; links are built from numbers.
// The page is read only: the script sends nothing but GET /page.json.
"use strict";
(function () {
  const body = document.body;
  const every = 5000; // ms between reads of /page.json

  function fail(what) {
    body.dataset.error = (body.dataset.error ? body.dataset.error + "; " : "") + what;
  }
  window.addEventListener("error", (e) => fail(e.message || "script error"));
  window.addEventListener("unhandledrejection", (e) => fail(String(e.reason)));
  document.addEventListener("securitypolicyviolation", (e) => fail("blocked " + e.violatedDirective + " " + e.blockedURI));

  // skew is the browser's clock minus schedd's, so that ages are schedd's.
  let skew = 0;
  const now = () => Date.now() - skew;
  const ms = (t) => (t ? Date.parse(t) : NaN);

  // vis writes the control characters of a text (but tabs and newlines) as \xNN or \uNNNN,
  // as the server's pages do.
  const vis = (s) => String(s).replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029]/g, (c) => {
    const n = c.charCodeAt(0);
    return n < 0x100 ? "\\x" + n.toString(16).padStart(2, "0") : "\\u" + n.toString(16).padStart(4, "0");
  });

  // el builds an element: attributes from attrs, then the children (strings become text).
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") e.className = v;
      else e.setAttribute(k, vis(v));
    }
    for (const k of kids.flat()) {
      if (k === undefined || k === null || k === "") continue;
      e.append(k instanceof Node ? k : vis(k));
    }
    return e;
  }
  const byId = (id) => document.getElementById(id);
  function fill(id, ...kids) {
    byId(id).replaceChildren(...kids.flat().filter((k) => k !== undefined && k !== null && k !== "")
      .map((k) => (k instanceof Node ? k : vis(k))));
  }
  function rows(id, list, row, empty, cols) {
    const tb = byId(id).tBodies[0];
    const out = list.length ? list.map(row) : [];
    if (out.length === 0) out.push(el("tr", { class: "empty" }, el("td", { colspan: cols }, empty)));
    tb.replaceChildren(...out);
  }

  // dur writes a duration in ms the way people read it: 850ms, 42s, 3m 5s, 2h 10m, 4d 3h.
  function dur(d) {
    if (!isFinite(d)) return "";
    d = Math.max(0, Math.round(d));
    if (d < 1000) return d + "ms";
    const s = Math.floor(d / 1000);
    if (s < 60) return s + "s";
    const m = Math.floor(s / 60);
    if (m < 60) return m + "m " + (s % 60) + "s";
    const h = Math.floor(m / 60);
    if (h < 24) return h + "h " + (m % 60) + "m";
    return Math.floor(h / 24) + "d " + (h % 24) + "h";
  }
  const ago = (t) => (isFinite(ms(t)) ? dur(now() - ms(t)) + " ago" : "");
  const until = (t) => {
    const d = ms(t) - now();
    return !isFinite(d) ? "" : d <= 0 ? "due now" : "in " + dur(d);
  };
  function clock(t) {
    const v = ms(t);
    if (!isFinite(v)) return "";
    const d = new Date(v + skew);
    const time = d.toLocaleTimeString([], { hour12: false });
    return new Date().toDateString() === d.toDateString() ? time : d.toLocaleDateString() + " " + time;
  }
  const stamp = (t) => el("time", { datetime: t, title: t }, clock(t));
  const badge = (state, text) => el("span", { class: "state", "data-state": state }, text || state);

  function exitWhy(e) {
    let why = e.reason;
    if (e.signal) why += " (" + e.signal + ")";
    else if (e.code !== null && e.code !== undefined) why += " (code " + e.code + ")";
    return e.error ? why + ": " + e.error : why;
  }

  function renderGateway(g, r) {
    const st = byId("gw-state");
    st.textContent = vis(g.state);
    st.dataset.state = g.state;
    const facts = [];
    if (g.pid) facts.push("pid " + g.pid);
    if (g.ready_since) facts.push("up " + dur(now() - ms(g.ready_since)));
    else if (g.started_at && g.state === "starting") facts.push("starting for " + dur(now() - ms(g.started_at)));
    facts.push(g.restarts + (g.restarts === 1 ? " restart" : " restarts"));
    if (g.consecutive_failures) facts.push(g.consecutive_failures + " failures in a row");
    if (g.next_start_at) facts.push("next start " + until(g.next_start_at));
    if (g.inflight !== null && g.inflight !== undefined) facts.push(g.inflight + " in flight");
    fill("gw-facts", facts.join(" · "));
    const said = [];
    if (g.status_text) said.push("it says: " + g.status_text);
    const p = r && r.pending;
    if (p) said.push("restart pending: " + (p.reasons || []).join("; "));
    if (g.state === "failed") said.push("not restarted: a no-restart exit code; schedd restart or a config reload starts it");
    fill("gw-said", said.join(" · "));
    const runs = (g.history || []).slice().reverse(); // newest first
    rows("timeline", runs, (run) => {
      const e = run.exit;
      const end = e ? ms(e.at) : now();
      const kind = !e ? "running" : e.reason === "restart" || e.reason === "stop" ? "asked" : "failed";
      return el("tr", { class: "run-" + kind, "data-reason": e ? e.reason : "running" },
        el("td", null, stamp(run.started_at), " ", el("span", { class: "muted" }, ago(run.started_at))),
        el("td", null, run.pid ? String(run.pid) : "—"),
        el("td", null, run.ready_at ? dur(ms(run.ready_at) - ms(run.started_at)) : e ? "never ready" : "not yet"),
        el("td", null, e ? stamp(e.at) : badge("running")),
        el("td", null, dur(end - ms(run.started_at))),
        el("td", { class: "why" }, e ? exitWhy(e) : ""));
    }, "no start yet", 6);
  }

  function renderHeartbeat(h) {
    if (!h) {
      fill("hb-switch", "heartbeats are not set up");
      rows("agents", [], null, "none", 6);
      return;
    }
    fill("hb-switch", h.enabled ? "" : "heartbeats are switched off (schedd heartbeat enable turns them on)");
    rows("agents", h.agents || [], (a) => {
      const last = a.last;
      const detail = [];
      if (last && last.reason) detail.push(last.reason);
      if (last && last.outcome) detail.push(last.outcome);
      if (a.event) detail.push("gateway: " + a.event.status + (a.event.reason ? " (" + a.event.reason + ")" : ""));
      if (a.config_error) detail.push("refused: " + a.config_error);
      if (a.rate_limited_until) detail.push("rate limited " + until(a.rate_limited_until));
      return el("tr", { "data-agent": a.id, "data-last": last ? last.status : "" },
        el("td", null, a.id),
        el("td", null, a.enabled ? a.every : "off: " + (a.disabled_reason || "disabled")),
        el("td", null, a.next_due_at ? until(a.next_due_at) : "—"),
        el("td", null, last ? badge(last.status) : "none yet"),
        el("td", null, last ? ago(last.at) : ""),
        el("td", { class: "why" }, detail.join(" · ")));
    }, "no agents", 6);
  }

  function strip(tasks) {
    return el("span", { class: "strip" }, (tasks || []).slice().reverse().map((t) =>
      el("a", {
        class: "task", href: "/tasks/" + Number(t.id), "data-state": t.state,
        title: "task " + t.id + ": " + t.state + (t.reason ? " (" + t.reason + ")" : "") +
          (t.error ? ": " + t.error : "") + " · " + clock(t.ended_at || t.started_at || t.queued_at),
        "aria-label": "task " + t.id + " " + t.state,
      })));
  }

  function renderCron(c, tasks) {
    if (!c) {
      fill("cron-queue", "cron is not set up");
      rows("jobs", [], null, "none", 6);
      return;
    }
    fill("cron-queue", c.workers + " workers · " + c.running + " running · " + c.queued + " queued" +
      (c.queue_full ? " · " + c.queue_full + " skipped on a full queue" : "") +
      (c.fleet ? " · fleet host " + c.fleet.host + ", " + c.fleet.role : ""));
    rows("jobs", c.jobs || [], (j) => {
      const last = j.last;
      return el("tr", { "data-job": j.name, "data-last": last ? last.state : "" },
        el("td", { class: "name" }, j.name),
        el("td", null, j.schedule + (j.timezone ? " (" + j.timezone + ")" : "")),
        el("td", null, j.enabled ? (j.next_run_at ? until(j.next_run_at) : "no further run") : "off: " + (j.disabled_reason || "disabled")),
        el("td", null, last ? [badge(last.state), last.reason ? " " + last.reason : "", " ",
          el("a", { href: "/tasks/" + Number(last.task_id), class: "muted" }, ago(last.at))] : "none yet"),
        el("td", null, String(j.consecutive_failures)),
        el("td", null, strip(tasks[j.name])));
    }, "no jobs", 6);
  }

  function renderDeliveries(d, dead) {
    if (!d) {
      fill("counts");
      fill("store", "deliveries are not set up");
      rows("dead", [], null, "none", 7);
      return;
    }
    fill("counts", [["pending", d.pending], ["sending", d.sending], ["dead", d.failed], ["delivered", d.delivered],
      ["quarantined", d.quarantined]].map(([k, n]) =>
      el("div", { class: "count", "data-state": k, "data-count": n }, el("b", null, String(n)), " " + k)));
    const store = [d.store + " store " + d.store_state];
    if (d.path) store.push(d.path);
    if (d.oldest_pending_at) store.push("oldest pending " + ago(d.oldest_pending_at));
    if (d.connected === false) store.push("not connected to its database");
    if (d.disk_full) store.push("DISK FULL: enqueues are refused");
    if (d.read_error) store.push("cannot be read since " + clock(d.read_error.at) + ": " + d.read_error.message);
    if (d.enqueue_error) store.push("last enqueue failed: " + d.enqueue_error.message);
    fill("store", store.join(" · "));
    fill("dead-note", dead.length < d.failed ? "the oldest " + dead.length + " of " + d.failed +
      "; schedd deliveries list --state dead lists them all" : "");
    rows("dead", dead, (e) => el("tr", { "data-id": e.id },
      el("td", null, String(e.id)),
      el("td", null, e.sink),
      el("td", { class: "key" }, e.idempotency_key),
      el("td", { class: "why" }, e.dead_reason || ""),
      el("td", { class: "why" }, e.last_error || ""),
      el("td", null, String(e.attempts)),
      el("td", null, e.finished_at ? ago(e.finished_at) : "")), "no dead letters", 7);
  }

  function renderLogs(lines) {
    const out = lines.map((l) => el("span", { class: "line", "data-stream": l.stream },
      el("span", { class: "muted" }, clock(l.time) + " " + l.pid + " " + (l.stream === "stderr" ? "err" : "out") + " "), l.text + (l.truncated ? " [cut]" : "") + "\n"));
    if (out.length === 0) out.push(el("span", { class: "muted" }, "no output yet"));
    fill("log-lines", out);
  }

  function render(p) {
    skew = Date.now() - ms(p.at);
    if (!isFinite(skew)) skew = 0;
    const s = p.status;
    document.title = "schedd: gateway " + s.gateway.state;
    fill("version", s.schedd.version);
    fill("schedd-line", "pid " + s.schedd.pid + " · up " + dur(now() - ms(s.schedd.started_at)));
    fill("updated", "read " + clock(p.at));
    renderGateway(s.gateway, s.restart);
    renderHeartbeat(s.heartbeat);
    renderCron(s.cron, p.tasks || {});
    renderDeliveries(s.deliveries, p.dead || []);
    renderLogs(p.logs || []);
    problem((p.errors || []).join("; "));
    body.dataset.ok = "1";
  }

  function problem(text) {
    const e = byId("problem");
    e.textContent = vis(text);
    e.hidden = !text;
  }

  let last = null;
  async function poll() {
    try {
      const r = await fetch("/page.json", { cache: "no-store" });
      if (!r.ok) throw new Error("HTTP " + r.status);
      last = await r.json();
      body.dataset.stale = "";
    } catch (e) {
      body.dataset.stale = "1";
      if (last) render(last);
      problem("schedd did not answer (" + e.message + "); this is what it said at " + clock(last && last.at));
      return;
    } finally {
      setTimeout(poll, every);
    }
    render(last);
  }

  last = JSON.parse(byId("page-data").textContent);
  render(last);
  setTimeout(poll, every);
})();
