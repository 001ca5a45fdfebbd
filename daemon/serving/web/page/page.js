// The landing page's script: live top keys (from /api/v1/top, every second) and the
// shard-model playground (sliders -> /api/v1/model -> per-shard load bars). Each hot key's row
// says in one line what its advised fix means, with the key's figures (fixLine), and links to
// the fix's runbook section in deploy/README.md. The model's inputs are shown with their origin
// (measured from the shard, or configured), with a warning when the advice rests on configured
// figures (modelWarning). The sliders start at the cluster the daemon's advice uses
// (/api/v1/model's default inputs); a clicked key is modelled on the figures the daemon's
// advice for it uses (/api/v1/model's measured mode: the shard's ops/s over the rate window,
// the key's share and write ratio, as /api/v1/top gives them), so the page shows the fix the
// daemon advises. With --model.measured-loads-file, a table between the two shows the shards'
// measured loads beside the model's projection for each fix (/api/v1/measured, every second;
// load_comparison.h), and after it the history: the top keys' shares as a timeline and a
// heatmap (/api/v1/history) and the hot episodes (/api/v1/episodes), every 5 s. On a Redis
// Cluster node, a section shows the hot slots and tags with their advice, the node against its
// peers, and the slot move plan with its projection and script (/api/v1/slots, every 2 s).
//
// A classic script with no dependency and no bundler, inlined into index.html when the daemon
// is built (daemon/serving/web/embed_page.cmake), so the page works on an air-gapped host.
"use strict";
const fmt = (x, d = 1) => (x == null ? "–" : (100 * x).toFixed(d) + "%");
const num = (x) => (x == null ? "–" : x >= 100 ? Math.round(x).toLocaleString() : x.toFixed(1));
const names = {
  none: "none",
  cache: "cache",
  replicate: "replicate",
  split: "split",
  split_cache: "split+cache",
  isolate: "isolate",
};
const count = (x) => (x == null ? "–" : (+x.toFixed(4)).toLocaleString());
// Each fix's runbook: a section of deploy/README.md, at the base URL the alerts use
// (deploy/mixin/config.libsonnet runbookURLBase); the anchor is its heading "Fix: <name>".
const runbookBase = "https://github.com/hotkeyd/hotkeyd/blob/main/deploy/README.md#";
const runbook = (advice) => runbookBase + "fix-" + advice;
// What a key's advised fix means, in one line, with the figures the advice used: the
// daemon's model inputs (/api/v1/top's "model") and the key's projected busiest shard under
// the fix (a fraction of a shard's capacity).
function fixLine(k, m) {
  if (k.advice == null) return "not advised yet";
  const load = fmt(k.projected_load[k.advice], 0);
  const every = `refreshed every ${count(m.refresh)} s`;
  switch (k.advice) {
    case "cache":
      return `cache: serve reads from each app server's cache, ${every}; projected busiest shard ${load}`;
    case "replicate":
      return `replicate: ${m.replicas} copies on ${m.replicas} shards, reads spread over them; projected busiest shard ${load}`;
    case "split":
      return `split: ${m.split} sub-keys on ${m.split} shards, a write goes to one, a read sums all; projected busiest shard ${load}`;
    case "split_cache":
      return `split + cache: ${m.split} sub-keys, the total cached on each app server, ${every}; projected busiest shard ${load}`;
    case "isolate":
      return `isolate: no fix keeps the busiest shard under ${fmt(m.target, 0)}; give the key its own capacity`;
    case "none":
      return `none: the shard absorbs it; projected load ${load}`;
  }
  return String(k.advice);
}
// The warning over advice that rests on configured figures, or "" when there is none.
function modelWarning(m) {
  const sh = m.shard || {};
  if (m.capacity && m.capacity.origin === "unknown") {
    return `no key is advised: the shard's headroom is unknown (${m.capacity.reason || "no reason given"})`;
  }
  if (sh.asked && !sh.up) {
    return `advice uses configured figures: the shard could not be asked (${sh.error || "no error given"})`;
  }
  const measured = ["capacity", "shards", "app_servers"].some(
    (id) => m[id] && m[id].origin === "measured",
  );
  if (!sh.asked && !measured) return "advice uses configured cluster figures (--cluster.* flags)";
  return "";
}
// The model's inputs, each with its origin; the fixes' parameters are always configured.
function showModel(m) {
  const w = modelWarning(m),
    warn = document.getElementById("model-warning");
  warn.textContent = w;
  warn.hidden = !w;
  // A configured or unknown input says why (the daemon's "reason").
  const span = (id, text, origin, reason) => {
    const e = document.createElement("span");
    e.dataset.input = id;
    if (origin) e.dataset.origin = origin;
    const why = origin && reason ? `${origin}: ${reason}` : origin;
    e.textContent = why ? `${text} (${why})` : text;
    return e;
  };
  const parts = [document.createTextNode("Advice inputs: ")];
  for (const [id, label, unit] of [
    ["capacity", "shard capacity", " ops/s"],
    ["shards", "shards", ""],
    ["app_servers", "app servers", ""],
  ]) {
    if (m[id]) {
      const v = m[id].value === null ? m[id].origin : `${count(m[id].value)}${unit}`;
      parts.push(span(id, `${label} ${v}`, m[id].origin, m[id].reason));
    }
  }
  parts.push(
    span(
      "fixes",
      `cache refresh ${count(m.refresh)} s, replicas ${m.replicas}, split ${m.split}, ` +
        `target ${fmt(m.target, 0)}`,
      "configured",
    ),
  );
  const sh = m.shard || {};
  if (sh.asked && sh.up) {
    parts.push(
      span(
        "shard",
        `shard ${sh.server || ""}: busy ${fmt(sh.busy, 0)} of ${count(sh.cpus)} CPUs` +
          `${sh.cpus_origin ? ` (${sh.cpus_origin})` : ""}, ${num(sh.commands_per_second)} commands/s` +
          `${sh.role && sh.role !== "unknown" ? `, ${sh.role}` : ""}` +
          `${sh.slots !== undefined ? ` serving ${sh.slots} slots` : ""}`,
        "measured",
      ),
    );
  }
  document.getElementById("model-inputs").replaceChildren(...parts);
}
// The sliders' ranges; their values come from the daemon (/api/v1/model's "inputs").
const inputs = [
  ["hot_share", "hot share", 0, 1, 0.01],
  ["write_share", "write share", 0, 1, 0.01],
  ["ops", "cluster ops/s", 1000, 500000, 1000],
  ["shards", "shards", 1, 64, 1],
  ["capacity", "shard capacity ops/s", 1000, 100000, 1000],
  ["app_servers", "app servers", 1, 500, 1],
  ["refresh", "cache refresh s", 0.1, 10, 0.1],
  ["replicas", "replicas", 1, 64, 1],
  ["split", "split into", 1, 64, 1],
  ["target", "target utilisation", 0.1, 1, 0.05],
];
// The clicked key's figures as /api/v1/top gave them ({key, time, shard_ops, hot_share,
// write_share}), or null: then the model is the cluster-wide one, from the "ops" slider.
let measured = null;
const shown = (x) => String(+x.toFixed(4));
function setSlider(id, v) {
  const r = document.getElementById(id);
  // Widen the range to hold the value, and let it off the step grid if it is not on it.
  if (v < +r.min) r.min = v;
  if (v > +r.max) r.max = v;
  r.value = v;
  if (+r.value !== v) {
    r.step = "any";
    r.value = v;
  }
  document.getElementById(id + "-v").textContent = shown(v);
}
const box = document.getElementById("inputs");
for (const [id, label, min, max, step] of inputs) {
  const l = document.createElement("label");
  l.innerHTML = `<span>${label}</span><output id="${id}-v"></output>`;
  const r = Object.assign(document.createElement("input"), { type: "range", id, min, max, step });
  r.addEventListener("input", () => {
    document.getElementById(id + "-v").textContent = r.value;
    if (measured && id in measured) measured[id] = +r.value;
    runModel();
  });
  const d = document.createElement("div");
  d.append(l, r);
  box.append(d);
}
function query() {
  const q = new URLSearchParams();
  for (const [id] of inputs) {
    if (measured && id === "ops") continue; // the measured model has no cluster total
    q.set(id, document.getElementById(id).value);
  }
  if (measured)
    for (const id of ["shard_ops", "hot_share", "write_share"]) q.set(id, String(measured[id]));
  return q;
}
function draw(res, m) {
  const out = document.getElementById("strategies");
  if (!res.ok) {
    out.textContent = m.error;
    document.getElementById("advice").textContent = "";
    return;
  }
  document.getElementById("advice").textContent = "Advice: " + names[m.advice];
  const top = Math.max(1.2, ...m.strategies.map((s) => s.busiest)) * 1.05;
  out.replaceChildren(
    ...m.strategies.map((s) => {
      const div = document.createElement("div");
      div.className = "strategy";
      div.dataset.strategy = s.strategy;
      div.innerHTML = `<b>${names[s.strategy]}</b> busiest ${fmt(s.busiest, 0)}, least busy ${fmt(s.least_busy, 0)} of capacity`;
      const bars = document.createElement("div");
      bars.className = "bars";
      for (const x of s.shard_loads) {
        const b = document.createElement("div");
        b.className = "bar" + (x > 1 ? " over" : "");
        b.style.height = (100 * x) / top + "%";
        b.title = fmt(x, 0);
        bars.append(b);
      }
      const cap = document.createElement("div");
      cap.className = "cap";
      cap.style.bottom = 100 / top + "%";
      const tgt = document.createElement("div");
      tgt.className = "tgt";
      tgt.style.bottom = (100 * m.inputs.target) / top + "%";
      bars.append(cap, tgt);
      div.append(bars);
      return div;
    }),
  );
}
// One model request at a time. Input that arrives meanwhile (a drag fires many 'input'
// events) is modelled when the answer is in, so the bars end on the sliders' last values.
let pending = false,
  again = false;
async function runModel() {
  if (pending) {
    again = true;
    return;
  }
  pending = true;
  again = false;
  try {
    const q = query();
    const res = await fetch("api/v1/model?" + q);
    const m = await res.json();
    document.getElementById("strategies").dataset.query = q.toString();
    draw(res, m);
  } finally {
    pending = false;
    if (again) runModel();
  }
}
// The daemon's configured cluster (and default key): /api/v1/model with no parameters.
async function start() {
  try {
    const res = await fetch("api/v1/model");
    const m = await res.json();
    if (res.ok) for (const [id] of inputs) setSlider(id, m.inputs[id]);
    if (!pending) {
      document.getElementById("strategies").dataset.query = "";
      draw(res, m);
    }
  } catch {
    // The daemon is unreachable: the sliders stay where the browser put them until one is moved.
  }
}
function setMeasured(m) {
  measured = m;
  document.getElementById("ops").disabled = !!m;
  document.getElementById("measured").hidden = !m;
  if (m) {
    document.getElementById("measured-text").textContent =
      `Key ${m.key} as the daemon models it (figures of ${m.time}): this shard's ${num(m.shard_ops)} ops/s, ` +
      `${fmt(m.hot_share)} of them for the key, ${fmt(m.write_share, 0)} of those writes.`;
    setSlider("hot_share", m.hot_share);
    setSlider("write_share", m.write_share);
  }
  runModel();
}
document.getElementById("measured-off").addEventListener("click", () => setMeasured(null));
// The figures the daemon's advice for the key used ("advised_on": the episode's own span,
// and the capacity then); for a key with no advice, its share and write ratio and the
// shard's ops/s over the rate window (read + write, summed as the daemon sums them).
function useKey(k, s) {
  const a = k.advised_on;
  if (a && a.capacity !== null) setSlider("capacity", a.capacity);
  setMeasured({
    key: k.key,
    time: s.time,
    hot_share: a ? a.share : k.share,
    write_share: a ? a.write_ratio : k.write_ratio,
    shard_ops: a ? a.shard_ops : s.ops_per_second.read + s.ops_per_second.write,
  });
}
async function refresh() {
  try {
    const res = await fetch("api/v1/top");
    if (!res.ok) return;
    const s = await res.json();
    const total = s.ops_per_second.read + s.ops_per_second.write;
    document.getElementById("summary").textContent =
      `${num(total)} ops/s, ${s.tracked_keys} keys tracked, ${s.hot_keys} hot, ${s.events_received.toLocaleString()} events received.`;
    document.getElementById("updated").textContent = "at " + s.time;
    if (s.model) showModel(s.model);
    const body = document.querySelector("#top tbody");
    body.replaceChildren(
      ...s.keys.map((k) => {
        const tr = document.createElement("tr");
        if (k.hot) tr.className = "hot";
        const cells = [
          k.key,
          fmt(k.share),
          fmt(k.share_error, 2),
          num(k.ops_per_second.read),
          num(k.ops_per_second.write),
          fmt(k.write_ratio, 0),
          k.threshold == null ? "ignored" : fmt(k.threshold, 0),
        ];
        for (const c of cells) {
          const td = document.createElement("td");
          td.textContent = c;
          tr.append(td);
        }
        const st = document.createElement("td");
        st.innerHTML = `<span class="pill">${k.hot ? "hot" : "ok"}</span>`;
        tr.append(st);
        // Advice is for hot keys; for the others it would answer a question nobody asked.
        const ad = document.createElement("td");
        ad.textContent = !k.hot
          ? "–"
          : k.advice == null
            ? "not advised yet"
            : names[k.advice] || k.advice;
        tr.append(ad);
        const fx = document.createElement("td");
        fx.className = "fix";
        if (k.hot) {
          const line = document.createElement("span");
          line.className = "line";
          line.textContent = fixLine(k, s.model);
          fx.append(line);
          if (k.advice != null) {
            const a = Object.assign(document.createElement("a"), {
              href: runbook(k.advice),
              textContent: "runbook",
              target: "_blank",
              rel: "noopener",
            });
            a.addEventListener("click", (e) => e.stopPropagation());
            fx.append(" ", a);
          }
        }
        tr.append(fx);
        tr.style.cursor = "pointer";
        tr.addEventListener("click", () => useKey(k, s));
        return tr;
      }),
    );
    document.getElementById("empty").style.display = s.keys.length ? "none" : "";
  } catch {
    // The daemon is unreachable or answered no JSON: the next tick asks again.
  }
}
// The measured loads beside the projection (/api/v1/measured); hidden without a file.
function cell(tr, text, value, cls) {
  const td = document.createElement("td");
  td.textContent = text;
  if (value != null) td.dataset.value = String(value);
  if (cls) td.className = cls;
  tr.append(td);
}
async function versus() {
  try {
    const res = await fetch("api/v1/measured");
    const box = document.getElementById("versus");
    if (!res.ok) {
      box.hidden = true;
      return;
    }
    const v = await res.json(),
      m = v.measurement,
      p = v.projection;
    box.hidden = false;
    const mt = document.getElementById("versus-measurement");
    mt.className = m && m.stale ? "stale" : "";
    mt.textContent = !m
      ? "No measurement read yet."
      : `Measured at ${m.time} (${m.age_seconds.toFixed(1)} s ago${m.stale ? `: STALE, older than ${v.max_age_seconds} s` : ""})` +
        ` under fix ${names[m.strategy] || m.strategy}${m.key ? ` for key ${m.key}` : ""}${m.source ? ` (${m.source})` : ""}:` +
        ` busiest shard ${m.busiest_shard} at ${fmt(m.busiest, 0)}, least busy ${fmt(m.least_busy, 0)}.` +
        (m.shards !== m.cluster_shards
          ? ` The file has ${m.shards} shards, --cluster.shards ${m.cluster_shards}.`
          : "");
    document.getElementById("versus-projection").textContent = !p
      ? "No projection yet: one is made while a measurement with no fix in force is read and a key is hot."
      : `Projection for key ${p.key}, from the daemon's figures at ${p.time} with no fix in force: this shard's ` +
        `${num(p.shard_ops)} ops/s, ${fmt(p.hot_share)} of them for the key, ${fmt(p.write_share, 0)} of those writes; advice ${names[p.advice]}.`;
    document.getElementById("versus-error").textContent = v.last_read_successful
      ? ""
      : `The file's last change could not be used (${v.read_errors_total} so far): ${v.last_error}`;
    document.querySelector("#versus-table tbody").replaceChildren(
      ...v.fixes.map((f) => {
        const tr = document.createElement("tr");
        tr.dataset.strategy = f.strategy;
        if (f.in_force) tr.className = "inforce";
        const pr = f.projected,
          me = f.measured,
          st = me && me.stale ? "stale" : "";
        cell(tr, names[f.strategy] + (f.in_force ? " (in force)" : ""));
        cell(tr, pr ? fmt(pr.busiest, 0) : "–", pr && pr.busiest);
        cell(tr, me ? fmt(me.busiest, 0) : "–", me && me.busiest, st);
        cell(tr, pr ? fmt(pr.least_busy, 0) : "–", pr && pr.least_busy);
        cell(tr, me ? fmt(me.least_busy, 0) : "–", me && me.least_busy, st);
        cell(
          tr,
          me ? `${me.age_seconds.toFixed(0)} s ago${me.stale ? " (stale)" : ""}` : "not measured",
          null,
          st,
        );
        return tr;
      }),
    );
    const bars = document.getElementById("versus-bars");
    const loads = m ? m.loads : [];
    const top = Math.max(1.2, ...loads) * 1.05;
    bars.replaceChildren(
      ...loads.map((x, i) => {
        const b = document.createElement("div");
        b.className = "bar" + (x > 1 ? " over" : "");
        b.style.height = (100 * x) / top + "%";
        b.title = `shard ${i}: ${fmt(x, 0)}`;
        return b;
      }),
    );
    if (loads.length) {
      const cap = document.createElement("div");
      cap.className = "cap";
      cap.style.bottom = 100 / top + "%";
      bars.append(cap);
    }
  } catch {
    // The daemon is unreachable or answered no JSON: the next tick asks again.
  }
}
refresh();
setInterval(refresh, 1000);
start();
versus();
setInterval(versus, 1000);
// History: the timeline, the heatmap (absolute colours) and the episode list.
const HEAT = [
  [0, "#f4f4f4"],
  [0.005, "#fff3c4"],
  [0.01, "#ffe08a"],
  [0.02, "#ffc04d"],
  [0.05, "#ff8c1a"],
  [0.1, "#f0502a"],
  [0.2, "#c8102e"],
  [0.5, "#6b0010"],
];
function heatColour(x) {
  let c = HEAT[0][1];
  for (const [lo, col] of HEAT) if (x >= lo) c = col;
  return c;
}
const LINES = [
  "#1f77b4",
  "#ff7f0e",
  "#2ca02c",
  "#d62728",
  "#9467bd",
  "#8c564b",
  "#e377c2",
  "#17becf",
];
const svgNs = "http://www.w3.org/2000/svg";
function el(tag, attrs, text) {
  const e = document.createElementNS(svgNs, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text != null) e.textContent = text;
  return e;
}
let historyStep = 10,
  historyData = null,
  selectedStart = null;
document.getElementById("heat-legend").replaceChildren(
  ...HEAT.map(([lo, col], i) => {
    const s = document.createElement("span");
    s.style.background = col;
    s.dataset.colour = col;
    s.style.color = i >= 5 ? "#fff" : "#222";
    s.textContent =
      i + 1 < HEAT.length ? `${fmt(lo, 1)}–${fmt(HEAT[i + 1][0], 1)}` : `≥ ${fmt(lo, 0)}`;
    return s;
  }),
);
for (const b of document.querySelectorAll("#history-controls button")) {
  b.addEventListener("click", () => {
    historyStep = +b.dataset.step;
    selectedStart = null;
    loadHistory();
  });
}
function drawHistory(h) {
  const ws = h.windows,
    svgT = document.getElementById("timeline"),
    svgH = document.getElementById("heatmap");
  const box = document.getElementById("history");
  box.dataset.step = String(h.step_seconds);
  box.dataset.windows = String(ws.length);
  box.dataset.lastStart = ws.length ? String(ws[ws.length - 1].start_unix) : "";
  document.getElementById("history-empty").style.display = ws.length ? "none" : "";
  for (const b of document.querySelectorAll("#history-controls button"))
    b.className = +b.dataset.step === historyStep ? "on" : "";
  // Keys: by their highest share in any window, the top 8 on the timeline, all on the heatmap.
  const peak = new Map();
  for (const w of ws)
    for (const k of w.keys) peak.set(k.key, Math.max(peak.get(k.key) || 0, k.share));
  const keys = [...peak.keys()].sort((a, b) => peak.get(b) - peak.get(a) || (a < b ? -1 : 1));
  const W = svgT.clientWidth || 1000,
    left = 150,
    right = 10,
    n = Math.max(ws.length, 1);
  const cw = (W - left - right) / n;
  // Timeline: y from 0 to a fixed step above the highest share (so shapes are comparable).
  const top = [0.05, 0.1, 0.25, 0.5, 1].find((c) => c >= Math.max(...peak.values(), 0)) || 1;
  const H = 150,
    y = (x) => 10 + (H - 10) * (1 - x / top);
  const tl = [
    el("line", { x1: left, x2: W - right, y1: y(0), y2: y(0), stroke: "#999" }),
    el("text", { x: left - 6, y: y(top) + 4, "text-anchor": "end", "font-size": 11 }, fmt(top, 0)),
    el("text", { x: left - 6, y: y(0), "text-anchor": "end", "font-size": 11 }, "0%"),
  ];
  const shown = keys.slice(0, LINES.length);
  shown.forEach((key, i) => {
    const pts = ws.map((w, j) => {
      const k = w.keys.find((k) => k.key === key);
      return `${left + (j + 0.5) * cw},${y(k ? k.share : 0)}`;
    });
    tl.push(
      el("polyline", {
        points: pts.join(" "),
        fill: "none",
        stroke: LINES[i],
        "stroke-width": 2,
        "data-key": key,
      }),
    );
  });
  svgT.replaceChildren(...tl);
  document.getElementById("timeline-legend").replaceChildren(
    ...shown.map((key, i) => {
      const s = document.createElement("span");
      s.style.borderLeft = `10px solid ${LINES[i]}`;
      s.textContent = key;
      return s;
    }),
  );
  // Heatmap: one row per key, one column per window; every cell coloured by its share.
  const rh = 16,
    hh = 20 + rh * keys.length;
  svgH.setAttribute("height", String(hh));
  const hm = [];
  keys.forEach((key, r) => {
    hm.push(
      el(
        "text",
        { x: left - 6, y: 20 + r * rh + 12, "text-anchor": "end", "font-size": 11 },
        key.length > 22 ? key.slice(0, 21) + "…" : key,
      ),
    );
    ws.forEach((w, j) => {
      const k = w.keys.find((k) => k.key === key),
        share = k ? k.share : 0;
      const rect = el("rect", {
        x: left + j * cw,
        y: 20 + r * rh,
        width: Math.max(cw - 0.5, 0.5),
        height: rh - 1,
        fill: heatColour(share),
        "data-key": key,
        "data-start": w.start_unix,
        "data-share": share,
      });
      if (w.start_unix === selectedStart) rect.setAttribute("class", "sel");
      rect.append(
        el(
          "title",
          {},
          `${key} at ${w.start}: ${fmt(share, 2)} (peak ${fmt(k ? k.peak_share : 0, 2)})`,
        ),
      );
      hm.push(rect);
    });
  });
  if (ws.length) {
    hm.push(el("text", { x: left, y: 12, "font-size": 11 }, ws[0].start));
    hm.push(
      el(
        "text",
        { x: W - right, y: 12, "font-size": 11, "text-anchor": "end" },
        ws[ws.length - 1].start,
      ),
    );
  }
  svgH.replaceChildren(...hm);
  document.getElementById("history-updated").textContent = ws.length
    ? `${ws.length} windows of ${h.step_seconds} s, to ${ws[ws.length - 1].start}`
    : "";
}
function showWindow(t) {
  // The ring that still holds the window: an hour of 10 s windows, else a day of 1 min ones.
  historyStep = Date.now() / 1000 - t < 3500 ? 10 : 60;
  selectedStart = null;
  loadHistory().then(() => {
    const ws = historyData ? historyData.windows : [];
    const w = ws.filter((w) => w.start_unix <= t + 1e-3).pop();
    if (!w) return;
    selectedStart = w.start_unix;
    drawHistory(historyData);
    document.getElementById("heatmap").scrollIntoView({ block: "center" });
  });
}
// Who said a fix was in force (/api/v1/episodes' in_force.by).
const inForceBy = { feed: "by the feed", measured_loads: "by the measured loads file" };
function drawEpisodes(e) {
  const body = document.querySelector("#episodes tbody");
  document.getElementById("episodes-empty").style.display = e.episodes.length ? "none" : "";
  body.replaceChildren(
    ...e.episodes.map((x) => {
      const tr = document.createElement("tr");
      if (x.open) tr.className = "open";
      tr.dataset.id = String(x.id);
      tr.dataset.start = String(x.start_unix);
      const subject = x.kind === "key" ? x.key : `${x.kind} ${x[x.kind]}`;
      const fix =
        x.changes
          .map((c) => `${names[c.strategy] || c.strategy} (${c.time.slice(11, 19)})`)
          .join(" → ") || "–";
      const inForce = x.in_force
        ? `${names[x.in_force.strategy] || x.in_force.strategy} since ${x.in_force.since.slice(11, 19)}` +
          (inForceBy[x.in_force.by] ? `, ${inForceBy[x.in_force.by]}` : "")
        : "–";
      const cells = [
        subject,
        String(x.id),
        x.start,
        x.open ? "open" : x.end + (x.interrupted ? " (restart)" : ""),
        x.duration_seconds == null ? "–" : `${x.duration_seconds.toFixed(1)} s`,
        fmt(x.peak_share),
        num(x.peak_ops_per_second),
        fix,
        inForce,
      ];
      for (const c of cells) {
        const td = document.createElement("td");
        td.textContent = c;
        tr.append(td);
      }
      const td = document.createElement("td");
      const a = Object.assign(document.createElement("a"), {
        href: `#window-${x.start_unix}`,
        textContent: "show",
      });
      a.addEventListener("click", (ev) => {
        ev.preventDefault();
        showWindow(x.start_unix);
      });
      td.append(a);
      tr.append(td);
      return tr;
    }),
  );
}
async function loadHistory() {
  try {
    const [h, e] = await Promise.all([
      fetch(`api/v1/history?step=${historyStep}`),
      fetch("api/v1/episodes?limit=100"),
    ]);
    if (h.ok) {
      historyData = await h.json();
      drawHistory(historyData);
    }
    if (e.ok) drawEpisodes(await e.json());
  } catch {
    // The daemon is unreachable or answered no JSON: the next tick asks again.
  }
}
loadHistory();
setInterval(loadHistory, 5000);

// Redis Cluster: slots, tags, the node against its peers and the move plan (/api/v1/slots).
const slotAdvice = {
  key: "key: the busiest key's own fix",
  tag: "tag: re-key it",
  move: "move: in the plan below",
};
function row(cells, cls) {
  const tr = document.createElement("tr");
  if (cls) tr.className = cls;
  for (const c of cells) {
    const td = document.createElement("td");
    td.textContent = c;
    tr.append(td);
  }
  return tr;
}
function drawSlots(v) {
  document.getElementById("slots").hidden = !v.enabled;
  if (!v.enabled) return;
  document.getElementById("slots-updated").textContent = "at " + v.time;
  const c = v.cluster;
  document.getElementById("node-peers").textContent =
    c == null
      ? "The shard has not described its cluster yet."
      : `Node ${c.node_id} (${c.address}, ${c.slots} slots): ${num(c.ops_per_second)} commands/s` +
        (c.peers_mean_ops_per_second == null
          ? `; no peer's load known yet (${c.peers_up} of ${c.peers} answered).`
          : ` against its peers' mean of ${num(c.peers_mean_ops_per_second)}` +
            ` (${c.peers_ratio == null ? "–" : c.peers_ratio.toFixed(2) + "x"},` +
            ` ${c.peers_up} of ${c.peers} peers known).`);
  document.querySelector("#slot-table tbody").replaceChildren(
    ...v.slots.map((x) => {
      let advice = x.hot ? "none: no fix needed" : "–";
      if (x.advice != null) advice = slotAdvice[x.advice] || x.advice;
      if (x.advice === "tag") advice += ` (spread its keys over ${x.tag_split} tags)`;
      return row(
        [
          x.slot,
          fmt(x.share),
          num(x.ops_per_second),
          x.top_key ? `${x.top_key} (${fmt(x.top_key_share, 0)})` : "–",
          x.top_tag ? `${x.top_tag} (${fmt(x.top_tag_share, 0)})` : "–",
          x.hot ? "hot" : "ok",
          advice,
        ],
        x.hot ? "hot" : "",
      );
    }),
  );
  document
    .querySelector("#tag-table tbody")
    .replaceChildren(
      ...v.tags.map((t) =>
        row(
          [t.tag, t.slot, fmt(t.share), num(t.ops_per_second), t.hot ? "hot" : "ok"],
          t.hot ? "hot" : "",
        ),
      ),
    );
  const m = v.move;
  document.getElementById("plan").hidden = m == null;
  if (m == null) return;
  const measure = (x) => (m.in_load ? fmt(x, 0) + " load" : num(x) + " commands/s");
  document.getElementById("plan-text").textContent =
    `Advice: move ${m.slot_count} slots off this node, which is ` +
    (m.reason === "over_target"
      ? "over its load target"
      : `clearly over its peers (their mean: ${measure(m.peers_mean)})`) +
    `, to bring it to ${measure(m.goal)} or under. Run the script below once; ` +
    "the advice ends when the slots have moved.";
  const sides = [{ ...m.from, slots: [] }, ...m.to];
  document
    .querySelector("#plan-table tbody")
    .replaceChildren(
      ...sides.map((n, i) =>
        row([
          i === 0 ? n.id + " (this node)" : n.id,
          n.address,
          i === 0 ? "–" : n.slots.length,
          num(n.ops_per_second_before),
          num(n.ops_per_second_after),
          fmt(n.load_after, 0),
        ]),
      ),
    );
  document.getElementById("plan-script").textContent = m.commands;
}
async function loadSlots() {
  try {
    const res = await fetch("api/v1/slots");
    if (res.ok) drawSlots(await res.json());
  } catch {
    // The daemon is unreachable or answered no JSON: the next tick asks again.
  }
}
loadSlots();
setInterval(loadSlots, 2000);
