// The search page: sentence search with paging, a detail view with similar images,
// and describe/tag for a dropped or chosen image.
"use strict";

const PAGE = 24;
let currentQuery = "";
let currentFolder = "";  // optional: only photos inside this folder
let nextOffset = 0;
let describedImage = null;  // the last dropped or chosen image: described again when the caption file changes
let describeRun = 0;  // only the latest describe run may fill in the panel
let previewUrl = null;

function baseName(id) { return id.split(/[\\/]/).pop(); }

function resultCard(hit, onOpen) {
  const img = el("img", { src: hit.thumbnail, alt: hit.caption || baseName(hit.id), loading: "lazy" });
  const score = el("span", { class: "score" }, fmt(hit.score));
  const card = el("button", { class: "card", type: "button", title: hit.id, "data-id": hit.id },
    img, el("span", { class: "meta" }, el("span", { class: "rank" }, "#" + hit.rank), score));
  card.addEventListener("click", () => onOpen(hit));
  return card;
}

async function runSearch(query, offset) {
  const status = document.getElementById("search-status");
  const grid = document.getElementById("results");
  const more = document.getElementById("more");
  if (offset === 0) grid.replaceChildren();
  status.textContent = "Searching…";
  more.hidden = true;
  try {
    const params = new URLSearchParams({ q: query, limit: PAGE, offset: offset });
    if (currentFolder) params.set("under", currentFolder);
    const page = await api("/api/search?" + params);
    for (const hit of page.results) grid.append(resultCard(hit, openDetail));
    const shown = offset + page.results.length;
    status.textContent = shown ? `${shown} image${shown === 1 ? "" : "s"} for “${query}”` : `No images for “${query}”.`;
    nextOffset = offset + page.results.length;
    more.hidden = !page.has_more;
  } catch (err) {
    status.textContent = "Search failed: " + err.message;
  }
}

async function openDetail(hit) {
  const overlay = document.getElementById("detail");
  document.getElementById("detail-image").src = hit.preview;
  document.getElementById("detail-image").alt = baseName(hit.id);
  document.getElementById("detail-title").replaceChildren(el("strong", {}, baseName(hit.id)),
    hit.score !== null && hit.score !== undefined ? ` — score ${fmt(hit.score)}` : "",
    el("br"), el("span", { class: "muted small" }, hit.id));
  const similar = document.getElementById("similar");
  similar.replaceChildren(el("p", { class: "muted" }, "Loading…"));
  overlay.hidden = false;
  try {
    const page = await api("/api/similar?" + new URLSearchParams({ id: hit.id, limit: 12 }));
    similar.replaceChildren(...page.results.map((h) => resultCard(h, openDetail)));
    if (!page.results.length) similar.append(el("p", { class: "muted" }, "No similar images."));
  } catch (err) {
    similar.replaceChildren(el("p", { class: "error" }, "Similar images failed: " + err.message));
  }
}

function closeDetail() { document.getElementById("detail").hidden = true; }

// Bring the describe results into view: scroll just enough to show them whole (their top
// never above the window's top), so that they appear next to the drop zone.
function revealAnnotation(box) {
  const margin = 12;
  const r = box.getBoundingClientRect();
  let dy = 0;
  if (r.top < 0) dy = r.top - margin;
  else if (r.bottom > window.innerHeight) dy = Math.min(r.bottom - window.innerHeight + margin, r.top - margin);
  if (dy) window.scrollBy(0, dy);
}

async function annotate(file) {
  const run = ++describeRun;
  describedImage = file;
  const status = document.getElementById("annotate-status");
  const box = document.getElementById("annotation");
  const captionsList = document.getElementById("captions");
  const keywordsList = document.getElementById("keywords");
  status.textContent = "Describing " + file.name + "…";
  const preview = document.getElementById("upload-preview");
  if (previewUrl) URL.revokeObjectURL(previewUrl);
  previewUrl = URL.createObjectURL(file);
  preview.src = previewUrl;
  captionsList.replaceChildren();
  keywordsList.replaceChildren();
  box.hidden = false;
  const form = new FormData();
  form.append("image", file);
  form.append("limit", "10");
  const captionFile = document.getElementById("caption-file").files[0];
  if (captionFile) form.append("captions", captionFile);
  const tagForm = new FormData();
  tagForm.append("image", file);
  tagForm.append("limit", "10");
  const [described, tagged] = await Promise.allSettled([
    api("/api/describe", { method: "POST", body: form }),
    api("/api/tag", { method: "POST", body: tagForm }),
  ]);
  if (run !== describeRun) return;  // a newer image or caption file was chosen meanwhile
  if (described.status === "fulfilled") {
    const d = described.value;
    for (const c of d.captions) {
      captionsList.append(el("li", {}, el("span", {}, c.text), " ", el("span", { class: "score" }, fmt(c.score))));
    }
    status.textContent = `Ranked ${d.pool_size} captions from the ${d.pool === "upload" ? "uploaded caption file" : "indexed collection"}.`;
  } else {
    status.textContent = "Describe failed: " + described.reason.message;
    captionsList.append(el("li", { class: "error" }, described.reason.message));
  }
  if (tagged.status === "fulfilled") {
    for (const k of tagged.value.keywords) {
      keywordsList.append(el("li", { title: k.score === null ? "" : "score " + fmt(k.score) }, k.word));
    }
  } else {
    keywordsList.append(el("li", { class: "error" }, tagged.reason.message));
  }
  try { await preview.decode(); } catch (e) { /* not an image: nothing to wait for */ }
  if (run === describeRun) revealAnnotation(box);
}

function setup() {
  document.getElementById("search-form").addEventListener("submit", (event) => {
    event.preventDefault();
    currentQuery = document.getElementById("query").value.trim();
    currentFolder = document.getElementById("under").value.trim();
    if (currentQuery) runSearch(currentQuery, 0);
  });
  document.getElementById("more").addEventListener("click", () => runSearch(currentQuery, nextOffset));
  document.getElementById("detail-close").addEventListener("click", closeDetail);
  document.getElementById("detail").addEventListener("click", (e) => { if (e.target.id === "detail") closeDetail(); });
  document.addEventListener("keydown", (e) => { if (e.key === "Escape") closeDetail(); });

  const input = document.getElementById("image-file");
  input.addEventListener("change", () => { if (input.files[0]) annotate(input.files[0]); });
  // a caption file chosen (or changed, or cleared) after the image: describe that image again
  document.getElementById("caption-file").addEventListener("change", () => {
    if (describedImage) annotate(describedImage);
  });
  const zone = document.getElementById("dropzone");
  zone.addEventListener("dragover", (e) => { e.preventDefault(); zone.classList.add("over"); });
  zone.addEventListener("dragleave", () => zone.classList.remove("over"));
  zone.addEventListener("drop", (e) => {
    e.preventDefault();
    zone.classList.remove("over");
    if (e.dataTransfer.files[0]) annotate(e.dataTransfer.files[0]);
  });

  api("/api/stats").then((s) => {
    const n = s.indexed ?? s.n_images;
    if (n !== undefined) document.getElementById("stats").textContent = `${n.toLocaleString()} images indexed`;
  }).catch(() => {});
  const given = new URLSearchParams(location.search);
  const q = given.get("q");
  currentFolder = given.get("under") || "";
  document.getElementById("under").value = currentFolder;
  if (q) { document.getElementById("query").value = q; currentQuery = q; runSearch(q, 0); }
}

document.addEventListener("DOMContentLoaded", setup);
