// Renders /openapi.json as a plain list of endpoints (no external assets: works offline).
"use strict";

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  for (const c of children) node.append(c);
  return node;
}

function schemaType(schema) {
  if (!schema) return "";
  if (schema.type) return schema.type + (schema.items && schema.items.type ? ` of ${schema.items.type}` : "");
  const any = schema.anyOf || schema.oneOf;
  if (any) return any.map(schemaType).filter(Boolean).join(" | ");
  if (schema.$ref) return schema.$ref.split("/").pop();
  return "";
}

function renderOperation(path, method, op) {
  const box = el("section", { class: "api-op", id: `${method}-${path}` });
  box.append(el("h3", {}, el("code", { class: "api-method" }, method.toUpperCase()), " ", el("code", {}, path)));
  if (op.summary) box.append(el("p", {}, op.summary));
  if (op.description && op.description !== op.summary) box.append(el("p", { class: "muted small" }, op.description));
  const params = op.parameters || [];
  if (params.length) {
    const rows = params.map((p) => el("tr", {},
      el("td", {}, el("code", {}, p.name)), el("td", {}, p.in), el("td", {}, p.required ? "yes" : "no"),
      el("td", {}, schemaType(p.schema)), el("td", {}, (p.schema && p.schema.default !== undefined) ? String(p.schema.default) : ""),
      el("td", {}, p.description || "")));
    box.append(el("table", { class: "api-params" },
      el("thead", {}, el("tr", {}, ...["parameter", "in", "required", "type", "default", "description"].map((h) => el("th", {}, h)))),
      el("tbody", {}, ...rows)));
  }
  if (op.requestBody && op.requestBody.content) {
    box.append(el("p", { class: "small" }, "Body: ", Object.keys(op.requestBody.content).join(", ")));
  }
  const codes = Object.keys(op.responses || {});
  if (codes.length) box.append(el("p", { class: "small muted" }, "Responses: ", codes.join(", ")));
  return box;
}

async function renderApi() {
  const status = document.getElementById("api-status");
  try {
    const response = await fetch("/openapi.json");
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    const spec = await response.json();
    const list = document.getElementById("api-list");
    let n = 0;
    for (const [path, ops] of Object.entries(spec.paths || {}).sort()) {
      for (const [method, op] of Object.entries(ops)) {
        list.append(renderOperation(path, method, op));
        n += 1;
      }
    }
    status.textContent = `${spec.info.title} ${spec.info.version}: ${n} endpoints`;
  } catch (err) {
    status.textContent = `Could not load /openapi.json (${err.message}).`;
    status.classList.add("error");
  }
}

renderApi();
