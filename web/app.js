// The explorer's page: a scenario from the form, POSTed to the HTTP API (/api/train or
// /api/search), shown as numbers and Chart.js charts; every view links to its JSON.
"use strict";

const $ = (id) => document.getElementById(id);
const PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000", "#999999"];
const PARTS = [["compute_s", "compute"], ["recompute_s", "recompute"], ["bubble_s", "pipeline bubble"],
  ["optimizer_s", "optimizer"], ["tp_comm_exposed_s", "TP comm"], ["pp_comm_exposed_s", "PP comm"],
  ["dp_comm_exposed_s", "DP comm"], ["cp_comm_exposed_s", "CP comm"], ["ep_comm_exposed_s", "EP comm"],
  ["offload_exposed_s", "offload"]];
const MEMORY = [["weights_bytes", "weights"], ["gradients_bytes", "gradients"], ["optimizer_bytes", "optimizer state"],
  ["activations_bytes", "activations"], ["overhead_bytes", "buffers + framework"]];
const GIB = 1024 ** 3;
const SLIDERS = { hbm_bw: "system.accelerator.memory_bw_bytes_per_s", up_bw: "system.scale_up.bw_bytes_per_s",
  out_bw: "system.scale_out.bw_bytes_per_s" };

// What the page last showed, for people and for the browser test.
const explorer = window.explorer = { base: null, last: null, updates: 0, charts: {} };

async function api(command, body) {
  const res = await fetch(`/api/${command}`, body === undefined ? {} : { method: "POST", body: JSON.stringify(body) });
  const text = await res.text();
  let doc;
  try { doc = JSON.parse(text); } catch (e) { doc = { error: text }; }
  if (!res.ok) throw new Error(doc.error || `HTTP ${res.status}`);
  return { doc, text, notes: res.headers.get("X-Scalemodel-Notes") || "" };
}

function jsonLink(a, text) {
  if (a.dataset.url) URL.revokeObjectURL(a.dataset.url);
  a.dataset.url = URL.createObjectURL(new Blob([text], { type: "application/json" }));
  a.href = a.dataset.url;
  a.hidden = false;
}

function modelSection() {
  const m = { preset: $("model").value };
  if ($("seq").value) m.seq_len = Number($("seq").value);
  return m;
}

function scenario() {
  const s = {
    model: modelSection(), system: { preset: $("system").value },
    training: { global_batch: Number($("global_batch").value), precision: $("precision").value },
  };
  if (!$("search").checked)
    s.parallel = { tp: +$("tp").value, tp_rows: +$("tp_rows").value, pp: +$("pp").value, dp: +$("dp").value, cp: +$("cp").value, ep: +$("ep").value,
      vp: +$("vp").value, microbatch: +$("microbatch").value, zero: +$("zero").value, recompute: $("recompute").value,
      cp_kind: $("cp_kind").value, order: $("order").value, sequence_parallel: $("sp").checked && +$("tp").value > 1 };
  return s;
}

// The layout fields set to the one found, so that unticking "search" starts from it (and keeps
// its GPU count) instead of from the page's defaults.
function keepFound(p) {
  for (const k of ["tp", "tp_rows", "pp", "dp", "cp", "ep", "vp", "microbatch"]) $(k).value = p[k];
  $("zero").value = String(p.zero);
  $("recompute").value = p.recompute;
  $("cp_kind").value = p.cp_kind;
  $("order").value = p.order;
  $("sp").checked = !!p.sequence_parallel;
}

function overrides() {
  const set = {};
  for (const [id, path] of Object.entries(SLIDERS)) {
    const k = 2 ** Number($(id).value);
    $(`${id}_out`).textContent = `x${k.toPrecision(3)}`;
    if (k !== 1 && explorer.base) set[path] = explorer.base[path] * k;
  }
  if ($("domain").value) set["system.scale_up.domain_gpus"] = Number($("domain").value);
  return set;
}

const fmtTime = (s) => (s >= 1 ? `${s.toFixed(3)} s` : `${(s * 1e3).toFixed(2)} ms`);

function chart(id, config) {
  if (!window.Chart) return null;  // Chart.js missing: the numbers still show
  if (explorer.charts[id]) explorer.charts[id].destroy();
  explorer.charts[id] = new Chart($(id), config);
  return explorer.charts[id];
}

function show(r, notes, text) {
  explorer.last = r;
  explorer.updates += 1;
  $("step_time").textContent = fmtTime(r.step_time_s);
  $("tok_gpu").textContent = r.tokens_per_s_per_gpu.toFixed(1);
  $("mfu").textContent = `${(100 * r.mfu).toFixed(1)} %`;
  const m = r.memory;
  $("memory").textContent = `${(m.peak_bytes_per_gpu / GIB).toFixed(1)} of ${(m.capacity_bytes / GIB).toFixed(0)} GiB` +
    (r.fits_in_memory ? "" : " (does not fit)");
  const p = r.parallel;
  const searched = $("search").checked;
  $("layout_used").textContent = (searched ? "searched: " : "yours: ") +
    `tp ${p.tp} · pp ${p.pp} · dp ${p.dp} · cp ${p.cp} · ep ${p.ep} · vp ${p.vp} · micro-batch ${p.microbatch}` +
    ` · ZeRO ${p.zero} · recompute ${p.recompute}${p.sequence_parallel ? " · SP" : ""} on ${r.gpus} GPUs`;
  if (searched) explorer.found = p;
  $("notes").textContent = notes;
  jsonLink($("json_link"), text);
  chart("breakdown_chart", {
    type: "bar",
    data: { labels: ["step"], datasets: PARTS.filter(([k]) => r.breakdown[k] > 0).map(([k, name], i) =>
      ({ label: name, data: [r.breakdown[k]], backgroundColor: PALETTE[i % PALETTE.length] })) },
    options: { animation: false, scales: { x: { stacked: true }, y: { stacked: true, title: { display: true, text: "seconds" } } } },
  });
  chart("memory_chart", {
    type: "bar",
    data: { labels: ["per GPU"], datasets: [
      ...MEMORY.map(([k, name], i) => ({ label: name, data: [m[k] / GIB], backgroundColor: PALETTE[i], stack: "used" })),
      { label: "HBM capacity", data: [m.capacity_bytes / GIB], backgroundColor: "rgba(0,0,0,0.08)", borderColor: "#000",
        borderWidth: 1, stack: "capacity" }] },
    options: { animation: false, scales: { x: { stacked: true }, y: { stacked: true, title: { display: true, text: "GiB" } } } },
  });
}

// An error replaces the numbers: none of the last answer stays on screen under it.
function clearResults() {
  for (const id of ["step_time", "tok_gpu", "mfu", "memory", "layout_used"]) $(id).textContent = "–";
  $("json_link").hidden = true;
  for (const id of ["breakdown_chart", "memory_chart"])
    if (explorer.charts[id]) { explorer.charts[id].destroy(); delete explorer.charts[id]; }
  explorer.last = null;
}

function fail(e) {
  $("error").textContent = e.message;
  $("error").hidden = false;
  $("status").textContent = "error";
}

let pending = null;
async function update() {
  $("layout").classList.toggle("disabled", $("search").checked);
  const body = { scenario: scenario(), options: { set: overrides() } };
  const command = $("search").checked ? "search" : "train";
  if (command === "search") Object.assign(body.options, { gpus: Number($("gpus").value), top: 1 });
  const ticket = pending = {};
  $("status").textContent = "computing…";
  try {
    const { doc, text, notes } = await api(command, body);
    if (ticket !== pending) return;  // a newer request is under way
    const r = command === "search" ? doc.results[0] : doc;
    if (!r) throw new Error(`no layout of ${body.options.gpus} GPUs fits in memory`);
    $("error").hidden = true;
    show(r, notes, text);
    $("status").textContent = command === "search"
      ? `best of ${doc.evaluated.toLocaleString()} layouts in ${(1e3 * doc.elapsed_s).toFixed(0)} ms` : "ready";
  } catch (e) {
    if (ticket === pending) { clearResults(); fail(e); }
  }
}

let timer = null;
const soon = () => { clearTimeout(timer); timer = setTimeout(update, 120); };

async function resolveBase() {
  const { doc } = await api("resolve", { model: modelSection(), system: { preset: $("system").value } });
  const get = (path) => path.split(".").slice(1).reduce((o, k) => o[k], doc.system);
  explorer.base = Object.fromEntries(Object.values(SLIDERS).map((p) => [p, get(p)]));
  explorer.base["system.scale_up.domain_gpus"] = doc.system.scale_up.domain_gpus;
}

async function runSweep() {
  const field = $("sweep_field").value;
  const base = field === "training.global_batch" ? Number($("global_batch").value) : explorer.base[field];
  const values = $("sweep_values").value.split(",").map((v) => v.trim()).filter(Boolean)
    .map((v) => (v.startsWith("x") ? Number(v.slice(1)) * base : Number(v)));
  const mode = $("search").checked ? "search" : "train";
  const options = { set: overrides(), vary: [`${field}=${values.join(",")}`], mode };
  if (mode === "search") options.gpus = Number($("gpus").value);
  delete options.set[field];
  try {
    const { doc, text } = await api("sweep", { scenario: scenario(), options });
    jsonLink($("sweep_json"), text);
    const ok = doc.points.map((p) => (p.status === "ok" ? p.step_time_s : null));
    chart("sweep_chart", {
      type: "line",
      data: { labels: doc.points.map((p) => Number(p.inputs[field]).toPrecision(3)),
        datasets: [{ label: "step time (s)", data: ok, borderColor: PALETTE[0], backgroundColor: PALETTE[0] }] },
      options: { animation: false, scales: { x: { title: { display: true, text: field } },
        y: { title: { display: true, text: "step time (s)" } } } },
    });
    explorer.sweep = doc;
  } catch (e) { fail(e); }
}

async function runAttribution() {
  const from = scenario();
  const to = JSON.parse(JSON.stringify(from));
  to.system = { preset: $("to_system").value };
  const options = { to, mode: "search", gpus: Number($("gpus").value) };
  delete from.parallel; delete to.parallel;
  try {
    const { doc, text } = await api("attribute", { scenario: from, options });
    jsonLink($("attr_json"), text);
    let level = 1;
    const bars = doc.factors.map((f) => { const lo = level; level *= f.speedup; return [lo, level]; });
    chart("attr_chart", {
      type: "bar",
      data: { labels: [...doc.factors.map((f) => f.name), "total"],
        datasets: [{ label: "speed-up (x)", data: [...bars, [1, doc.ratio]],
          backgroundColor: [...doc.factors.map((f) => (f.speedup >= 1 ? PALETTE[2] : PALETTE[3])), PALETTE[0]] }] },
      options: { animation: false, scales: { y: { type: "logarithmic", title: { display: true, text: "speed-up (x, log)" } } } },
    });
    explorer.attribution = doc;
  } catch (e) { fail(e); }
}

const fmtMs = (s) => `${(s * 1e3).toFixed(1)} ms`;

async function runServe() {
  const s = { model: modelSection(), system: { preset: $("system").value },
    inference: { input_len: Number($("isl").value), output_len: Number($("osl").value), precision: $("serve_precision").value } };
  const options = { gpus: Number($("serve_gpus").value), "ttft-ms": Number($("ttft").value), "tpot-ms": Number($("tpot").value),
    set: overrides() };
  const body = $("serve_best").tBodies[0];
  try {
    const { doc, text } = await api("serve-search", { scenario: s, options });
    jsonLink($("serve_json"), text);
    body.replaceChildren(...doc.best.slice(0, 5).map((b) => {
      const tr = document.createElement("tr");
      for (const v of [b.tp, b.pp, b.dp, b.ep, b.etp, b.concurrency, fmtMs(b.ttft_s), fmtMs(b.tpot_s),
        b.output_tokens_per_s_per_gpu.toFixed(1), b.output_tokens_per_s_per_user.toFixed(1)])
        tr.insertCell().textContent = v;
      return tr;
    }));
    if (!doc.best.length) body.insertRow().insertCell().textContent = "no layout meets the targets in memory";
    const front = [...doc.pareto].sort((a, b) => a.output_tokens_per_s_per_user - b.output_tokens_per_s_per_user);
    const datasets = [{ label: "Pareto front", data: front.map((p) => ({ x: p.output_tokens_per_s_per_user, y: p.output_tokens_per_s_per_gpu,
      layout: `tp${p.tp} pp${p.pp} dp${p.dp}${p.etp !== p.tp ? ` ep${p.ep} etp${p.etp}` : ""} C${p.concurrency}` })), showLine: true, borderColor: PALETTE[0], backgroundColor: PALETTE[0] }];
    if (doc.best.length) datasets.push({ label: "best under the targets", data: [{ x: doc.best[0].output_tokens_per_s_per_user,
      y: doc.best[0].output_tokens_per_s_per_gpu }], pointStyle: "crossRot", pointRadius: 9, borderColor: PALETTE[1], backgroundColor: PALETTE[1] });
    const top = Math.max(...front.map((p) => p.output_tokens_per_s_per_gpu), 1);
    if (doc.tpot_target_s > 0) datasets.push({ label: "TPOT target", data: [{ x: 1 / doc.tpot_target_s, y: 0 }, { x: 1 / doc.tpot_target_s, y: top }],
      showLine: true, borderDash: [6, 4], borderColor: PALETTE[3], pointRadius: 0 });
    chart("pareto_chart", { type: "scatter", data: { datasets },
      options: { animation: false, plugins: { tooltip: { callbacks: { label: (c) => c.raw.layout || c.dataset.label } } },
        scales: { x: { title: { display: true, text: "output tokens/s per user" } },
          y: { title: { display: true, text: "output tokens/s per GPU" } } } } });
    explorer.serving = doc;
  } catch (e) {
    body.replaceChildren();
    if (explorer.charts.pareto_chart) { explorer.charts.pareto_chart.destroy(); delete explorer.charts.pareto_chart; }
    explorer.serving = null;
    fail(e);
  }
}

async function init() {
  try {
    const { doc } = await api("presets");
    const fill = (sel, names, def) => {
      for (const n of names) sel.add(new Option(n, n, false, n === def));
    };
    fill($("model"), doc.models.map((m) => m.name), "gpt3-175b");
    fill($("system"), doc.systems.map((s) => s.name), "dgx-h100");
    fill($("to_system"), doc.systems.map((s) => s.name), "gb200-nvl72");
    await resolveBase();
  } catch (e) { fail(e); return; }
  for (const el of document.querySelectorAll("#scenario input, #scenario select"))
    el.addEventListener("input", soon);
  for (const id of ["model", "system"]) $(id).addEventListener("change", async () => { await resolveBase(); soon(); });
  $("search").addEventListener("change", () => { if (!$("search").checked && explorer.found) keepFound(explorer.found); });
  $("run_sweep").addEventListener("click", runSweep);
  $("run_serve").addEventListener("click", runServe);
  $("run_attr").addEventListener("click", runAttribution);
  if (!window.Chart) $("notes").textContent = "Chart.js is not installed (Debian: libjs-chart.js): numbers only.";
  await update();
}

init();
