// Minimal inline-SVG line charts for the evaluation page (Recall@K and precision-recall).
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";
const COLORS = ["#2458d6", "#d9480f", "#0f9960", "#7048e8"];

function svg(tag, attrs, text) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

// series: [{name, points: [[x, y], ...]}]; options: {title, xLabel, yLabel, xLog, xTicks, xMax}
function lineChart(series, options) {
  const W = 420, H = 290, m = { l: 48, r: 14, t: 28, b: 44 };
  const iw = W - m.l - m.r, ih = H - m.t - m.b;
  const all = series.flatMap((s) => s.points);
  const xs = all.map((p) => p[0]);
  const xMin = options.xLog ? Math.max(1, Math.min(...xs, 1)) : 0;
  const xTop = Math.max(...xs, 0);
  const xMax = options.xMax ?? (options.xLog ? Math.max(xTop, 10)
    : [0.1, 0.2, 0.5, 1].find((v) => xTop <= v) || Math.ceil(xTop));
  const fx = options.xLog
    ? (x) => m.l + (xMax === xMin ? 0 : (Math.log(x) - Math.log(xMin)) / (Math.log(xMax) - Math.log(xMin)) * iw)
    : (x) => m.l + (x - xMin) / (xMax - xMin || 1) * iw;
  // y axis: 0 .. the smallest of 0.1, 0.2, 0.5, 1 that holds every point
  const yTop = Math.max(...all.map((p) => p[1]).filter(Number.isFinite), 0);
  const yMax = [0.1, 0.2, 0.5, 1].find((v) => yTop <= v) || Math.ceil(yTop);
  const fy = (y) => m.t + (1 - y / yMax) * ih;
  const root = svg("svg", { class: "chart", width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: "img",
    "aria-label": options.title });
  root.append(svg("text", { x: m.l, y: 16, style: "font-size:13px;fill:#1d2330;font-weight:600" }, options.title));
  for (let i = 0; i <= 5; i++) {
    const y = i / 5 * yMax;
    root.append(svg("line", { x1: m.l, x2: m.l + iw, y1: fy(y), y2: fy(y), stroke: "#eef0f4" }));
    root.append(svg("text", { x: m.l - 6, y: fy(y) + 4, "text-anchor": "end" }, String(+y.toFixed(2))));
  }
  const xTicks = options.xTicks || [0, 1, 2, 3, 4, 5].map((i) => +(i / 5 * xMax).toFixed(3));
  for (const x of xTicks) {
    if (x < xMin || x > xMax) continue;
    root.append(svg("line", { x1: fx(x), x2: fx(x), y1: m.t, y2: m.t + ih, stroke: "#eef0f4" }));
    root.append(svg("text", { x: fx(x), y: m.t + ih + 16, "text-anchor": "middle" }, String(x)));
  }
  root.append(svg("rect", { x: m.l, y: m.t, width: iw, height: ih, fill: "none", stroke: "#c5ccd8" }));
  root.append(svg("text", { x: m.l + iw / 2, y: H - 8, "text-anchor": "middle" }, options.xLabel));
  root.append(svg("text", { x: 12, y: m.t + ih / 2, "text-anchor": "middle",
    transform: `rotate(-90 12 ${m.t + ih / 2})` }, options.yLabel));
  series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length];
    const pts = s.points.filter((p) => Number.isFinite(p[0]) && Number.isFinite(p[1]));
    if (pts.length > 1) {
      root.append(svg("polyline", { points: pts.map((p) => `${fx(p[0])},${fy(p[1])}`).join(" "),
        fill: "none", stroke: color, "stroke-width": 2 }));
    }
    if (pts.length <= 30) {
      for (const p of pts) {
        const dot = svg("circle", { cx: fx(p[0]), cy: fy(p[1]), r: 3.5, fill: color });
        dot.append(svg("title", {}, `${s.name}: (${fmt(p[0])}, ${fmt(p[1])})`));
        root.append(dot);
      }
    }
    root.append(svg("rect", { x: m.l + 8, y: m.t + 8 + i * 16, width: 10, height: 10, fill: color }));
    root.append(svg("text", { x: m.l + 22, y: m.t + 17 + i * 16, style: "fill:#1d2330" }, s.name));
  });
  return root;
}
