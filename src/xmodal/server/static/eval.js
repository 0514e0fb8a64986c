// The evaluation page: saved `xmodal eval --json` reports as metric tables, Recall@K and
// precision-recall plots, and a side-by-side comparison of two models (with paired significance
// tests from /api/reports/compare when both reports hold per-query values).
"use strict";

const DIRECTION_NAMES = { i2t: "image → text (annotation)", t2i: "text → image (search)" };
const LOWER_IS_BETTER = /^(medR|meanR|med_r|mean_r)$|rank/i;

function kOf(metric, prefix) {
  const m = metric.match(new RegExp("^" + prefix + "@(\\d+)$"));
  return m ? Number(m[1]) : null;
}

// [[K, R@K], ...] from the report's saved curve if present, else from its R@K metrics.
function recallCurve(report, dir) {
  const c = report.curves && report.curves[dir] && report.curves[dir].recall_at_k;
  if (c && Array.isArray(c.k) && Array.isArray(c.value)) return c.k.map((k, i) => [k, c.value[i]]);
  if (c && typeof c === "object") {  // {"1": R@1, "2": R@2, ...} as `xmodal eval --json` writes
    const points = Object.entries(c).map(([k, v]) => [Number(k), v])
      .filter((p) => Number.isFinite(p[0]) && p[0] > 0 && typeof p[1] === "number");
    if (points.length) return points.sort((a, b) => a[0] - b[0]);
  }
  const metrics = report.directions[dir] || {};
  return Object.keys(metrics).map((name) => [kOf(name, "R"), metrics[name]])
    .filter((p) => p[0] !== null && typeof p[1] === "number").sort((a, b) => a[0] - b[0]);
}

// [[recall, precision], ...] from a saved PR curve, else the (recall@K, P@K) pairs of the metrics.
function prCurve(report, dir) {
  const c = report.curves && report.curves[dir] && report.curves[dir].pr;
  if (c && Array.isArray(c.recall) && Array.isArray(c.precision)) return c.recall.map((r, i) => [r, c.precision[i]]);
  const metrics = report.directions[dir] || {};
  const points = [];
  for (const name of Object.keys(metrics)) {
    const k = kOf(name, "recall");
    if (k !== null && typeof metrics["P@" + k] === "number") points.push([metrics[name], metrics["P@" + k], k]);
  }
  return points.sort((a, b) => a[2] - b[2]).map((p) => [p[0], p[1]]);
}

function label(report) { return report.model ? `${report.model}` : report.name; }

// {metric: value} of one report for a table: a direction's metrics, or the paper metrics.
function directionMetrics(dir) { return (r) => r.directions[dir] || {}; }

const SIZES = ["n", "n_words", "n_queries"];  // sizes, not metrics: not compared

// The protocol's own paper metrics (e.g. corel5k: Table 1 and 2 of Lavrenko et al.), nested
// objects flattened to "a · b · c" names; counts and lists are left out.
function paperMetrics(r) {
  const out = {};
  const walk = (obj, prefix) => {
    for (const [k, v] of Object.entries(obj || {})) {
      const name = prefix ? `${prefix} · ${k}` : k;
      if (v && typeof v === "object" && !Array.isArray(v)) walk(v, name);
      else if (typeof v === "number" && !SIZES.includes(k)) out[name] = v;
    }
  };
  walk(r.paper_metrics, "");
  return out;
}

// "0.0002 *": corrected p of B against A; * B significantly better, † worse.
function pCell(c) {
  if (!c) return el("td", {}, "");
  const p = c.p_corrected;
  const text = p >= 0.001 ? p.toPrecision(2) : p.toExponential(1);
  const mark = c.significant && c.better !== null ? (c.better ? " *" : " †") : "";
  const cls = mark ? (c.better ? "better" : "worse") : "";
  const title = `B − A = ${fmt(c.difference)} [${fmt(c.ci_low)}, ${fmt(c.ci_high)}], p = ${c.p_value.toPrecision(2)}`;
  return el("td", { class: cls, title }, text + mark);
}

// sig: {metric: comparison} of one direction from /api/reports/compare, or null.
function metricsTable(reports, metricsOf, attrs, sig) {
  const names = [];
  for (const r of reports) for (const m of Object.keys(metricsOf(r))) if (!names.includes(m)) names.push(m);
  const head = el("tr", {}, el("th", {}, "metric"), ...reports.map((r) => el("th", {}, label(r))));
  if (reports.length === 2) head.append(el("th", {}, "B − A"));
  if (sig) head.append(el("th", { title: "corrected p-value of B against A" }, "p"));
  const body = names.map((m) => {
    const values = reports.map((r) => metricsOf(r)[m]);
    const row = el("tr", {}, el("td", {}, m), ...values.map((v) => el("td", {}, fmt(v))));
    if (reports.length === 2) {
      const [a, b] = values;
      if (typeof a === "number" && typeof b === "number") {
        const d = b - a;
        const good = LOWER_IS_BETTER.test(m) ? d < 0 : d > 0;
        row.append(el("td", { class: d === 0 ? "" : good ? "better" : "worse" }, (d > 0 ? "+" : "") + fmt(d)));
      } else row.append(el("td", {}, "–"));
    }
    if (sig) row.append(pCell(sig[m]));
    return row;
  });
  return el("table", { class: "metrics", ...attrs }, el("thead", {}, head), el("tbody", {}, ...body));
}

function directionBlock(reports, dir, significance) {
  const block = el("section", { class: "direction" }, el("h3", {}, DIRECTION_NAMES[dir] || dir));
  let sig = null;
  if (significance) {
    sig = {};
    for (const c of significance.comparisons) if (c.direction === dir) sig[c.metric] = c;
  }
  block.append(metricsTable(reports, directionMetrics(dir), { "data-direction": dir }, sig));
  const plots = el("div", { class: "plots" });
  const recall = reports.map((r) => ({ name: label(r), points: recallCurve(r, dir) }));
  if (recall.some((s) => s.points.length)) {
    const ks = [...new Set(recall.flatMap((s) => s.points.map((p) => p[0])))].sort((a, b) => a - b);
    plots.append(lineChart(recall, { title: "Recall@K", xLabel: "K (log scale)", yLabel: "R@K",
      xLog: true, xTicks: ks.length <= 12 ? ks : undefined, xMax: Math.max(...ks, 2) }));
  }
  const pr = reports.map((r) => ({ name: label(r), points: prCurve(r, dir) }));
  if (pr.some((s) => s.points.length)) {
    plots.append(lineChart(pr, { title: "Precision–recall", xLabel: "recall", yLabel: "precision" }));
  }
  block.append(plots);
  return block;
}

function headerTable(reports) {
  const rows = ["protocol", "model", "seed", "elapsed_s"].map((key) =>
    el("tr", {}, el("td", {}, key), ...reports.map((r) => el("td", {}, fmt(r[key], 1)))));
  for (const dir of Object.keys(reports[0].n_queries || {})) {
    rows.push(el("tr", {}, el("td", {}, `queries (${dir})`),
      ...reports.map((r) => el("td", {}, fmt((r.n_queries || {})[dir])))));
  }
  return el("table", { class: "report-header" },
    el("thead", {}, el("tr", {}, el("th", {}, ""), ...reports.map((r, i) => el("th", {}, `${"AB"[i]}: ${r.name}`)))),
    el("tbody", {}, ...rows));
}

async function render() {
  const a = document.getElementById("report-a").value;
  const b = document.getElementById("report-b").value;
  const view = document.getElementById("report-view");
  const status = document.getElementById("eval-status");
  const names = [a, b].filter((n) => n);
  const url = new URL(location.href);
  url.search = new URLSearchParams(Object.fromEntries([["a", a], ["b", b]].filter((p) => p[1])));
  history.replaceState(null, "", url);
  view.replaceChildren();
  if (!names.length) return;
  status.textContent = "Loading…";
  try {
    const reports = await Promise.all(names.map((n) => api("/api/reports/" + n.split("/").map(encodeURIComponent).join("/"))));
    view.append(headerTable(reports));
    let significance = null;
    let sigNote = "";
    if (reports.length === 2 && reports.every((r) => r.per_query)) {
      status.textContent = "Testing significance…";
      try {
        significance = await api(`/api/reports/compare?a=${encodeURIComponent(a)}&b=${encodeURIComponent(b)}`);
      } catch (err) {
        sigNote = " No significance tests: " + err.message;
      }
    } else if (reports.length === 2) {
      sigNote = " No significance tests: they need per-query values (xmodal eval --per-query).";
    }
    const dirs = [];
    for (const r of reports) for (const d of Object.keys(r.directions)) if (!dirs.includes(d)) dirs.push(d);
    const container = el("div", { class: "compare" }, ...dirs.map((d) => directionBlock(reports, d, significance)));
    if (significance) view.append(el("p", { class: "muted small", id: "significance-legend" }, "p: the corrected p-value of B against A (hover for the difference and its CI). " + significance.legend));
    view.append(container);
    if (reports.some((r) => Object.keys(paperMetrics(r)).length)) {
      view.append(el("section", { class: "paper-metrics" },
        el("h3", {}, "The protocol's paper metrics"),
        metricsTable(reports, paperMetrics, { "data-paper": "1" })));
    }
    status.textContent = reports.length === 2 ? "Comparing A and B (green: B is better)." + sigNote : "";
  } catch (err) {
    status.textContent = "Could not load the report: " + err.message;
  }
}

async function setup() {
  const status = document.getElementById("eval-status");
  let list;
  try {
    list = (await api("/api/reports")).reports;
  } catch (err) {
    status.textContent = "Could not list reports: " + err.message;
    return;
  }
  const selA = document.getElementById("report-a");
  const selB = document.getElementById("report-b");
  selA.append(el("option", { value: "" }, "— choose —"));
  selB.append(el("option", { value: "" }, "— none —"));
  const tbody = document.querySelector("#report-list tbody");
  for (const r of list) {
    const text = `${r.name} (${r.model || "?"} on ${r.protocol || "?"})`;
    selA.append(el("option", { value: r.name }, text));
    selB.append(el("option", { value: r.name }, text));
    tbody.append(el("tr", {}, el("td", {}, r.name), el("td", {}, r.protocol || "–"), el("td", {}, r.model || "–"),
      el("td", {}, r.directions.join(", ")),
      el("td", {}, r.n_queries ? Object.entries(r.n_queries).map(([d, n]) => `${d}: ${n}`).join(", ") : "–")));
  }
  if (!list.length) status.textContent = "No saved reports yet: run `xmodal eval --json > reports/NAME.json`.";
  const params = new URLSearchParams(location.search);
  selA.value = params.get("a") || (list[0] ? list[0].name : "");
  selB.value = params.get("b") || "";
  selA.addEventListener("change", render);
  selB.addEventListener("change", render);
  render();
}

document.addEventListener("DOMContentLoaded", setup);
