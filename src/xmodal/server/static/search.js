// The search page: sentence search with filters, a sort order, example images and sentences to
// push away (kept in the URL, so a search can be bookmarked and reloaded), a detail view with
// similar images (under the same filters), and describe/tag for a dropped or chosen image.
"use strict";

const PAGE = 24;
// filter name (API parameter) -> id of its field: the server writes one field per registered
// filter into the filter bar (xmodal.index.filters)
const FILTERS = Object.fromEntries([...document.querySelectorAll("[data-filter]")].map((f) => [f.dataset.filter, f.id]));
const SORT_NAMES = { relevance: "best match first", date: "newest first", oldest: "oldest first" };
const NARROW = window.matchMedia("(max-width: 560px)");

// what is searched for: read from the form when a search starts, from the URL on load
const search = { q: "", not: "", filters: {}, sort: "relevance", minScore: null, likes: [], upload: null };
let nextOffset = 0;
let searchRun = 0;  // only the latest search may fill in the results
let pendingSearch = 0;  // a change and a submit in the same moment start one search
let uploadUrl = null;  // object URL of the uploaded example image, for its chip
let detailHit = null;
let detailOpener = null;  // what had the focus before the detail view opened: it gets it back
let defaultPlaceholder = "";
let describedImage = null;  // the last dropped or chosen image: described again when the caption file changes
let describeRun = 0;  // only the latest describe run may fill in the panel
let previewUrl = null;

function baseName(id) { return id.split(/[\\/]/).pop(); }

function plural(n, word, many) { return `${n} ${n === 1 ? word : (many || word + "s")}`; }

function hasQuery() { return Boolean(search.q || search.upload || search.likes.length); }

// an empty search with filters lists the photos that pass, by date (no query: nothing to rank)
function browsing() { return !hasQuery() && Object.keys(search.filters).length > 0; }

function shownSort() { return browsing() && search.sort === "relevance" ? "date" : search.sort; }

function notTerms() { return search.not.split(",").map((t) => t.trim()).filter(Boolean); }

// the filters and the sort order as API parameters (for searches and similar images)
function filterParams() {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(search.filters)) params.set(name, value);
  if (search.sort !== "relevance") params.set("sort", search.sort);
  return params;
}

// everything but the uploaded image and the page: the URL's parameters and the API's
function searchParams() {
  const params = new URLSearchParams();
  if (search.q) params.set("q", search.q);
  for (const id of search.likes) params.append("like", id);
  for (const t of notTerms()) params.append("not", t);
  for (const [k, v] of filterParams()) params.append(k, v);
  if (search.minScore !== null) params.set("min_score", search.minScore);
  return params;
}

function activeFilters() { return Object.keys(search.filters).length + (notTerms().length ? 1 : 0); }

function readForm() {
  search.q = document.getElementById("query").value.trim();
  search.not = document.getElementById("f-not").value.trim();
  search.filters = {};
  for (const [name, id] of Object.entries(FILTERS)) {
    const value = document.getElementById(id).value.trim();
    if (value) search.filters[name] = value;
  }
  renderFilterCount();
}

function fillForm() {
  document.getElementById("query").value = search.q;
  document.getElementById("f-not").value = search.not;
  for (const [name, id] of Object.entries(FILTERS)) document.getElementById(id).value = search.filters[name] || "";
  renderFilterCount();
}

function loadFromUrl() {
  const given = new URLSearchParams(location.search);
  search.q = given.get("q") || "";
  search.likes = given.getAll("like").filter(Boolean);
  search.not = given.getAll("not").join(", ");
  search.filters = {};
  for (const name of Object.keys(FILTERS)) {
    const value = (given.get(name) || "").trim();
    if (value) search.filters[name] = value;
  }
  search.sort = SORT_NAMES[given.get("sort")] ? given.get("sort") : "relevance";
  const minScore = given.get("min_score");
  search.minScore = minScore !== null && minScore !== "" && Number.isFinite(Number(minScore)) ? minScore : null;
  setUpload(null);
  fillForm();
  renderSort();
}

function syncUrl() {
  const query = searchParams().toString();
  const url = location.pathname + (query ? "?" + query : "");
  if (url !== location.pathname + location.search) history.pushState(null, "", url);
}

function renderFilterCount() {
  const n = activeFilters();
  document.getElementById("filter-count").textContent = n ? `(${n})` : "";
}

function renderSort() {
  for (const b of document.querySelectorAll("#sort button")) {
    b.setAttribute("aria-pressed", String(b.dataset.sort === shownSort()));
  }
}

// the filters open on wide screens; on phones folded into "Filters" (the summary counts them)
function fitFilters() { document.getElementById("filters").open = !NARROW.matches; }

function filterWords() {
  return Object.entries(search.filters).map(([k, v]) => (k === "under" ? `in ${v}` : `${k} ${v}`));
}

function describeFilters() {
  const parts = filterWords();
  if (search.sort !== "relevance") parts.push(SORT_NAMES[search.sort]);
  return parts.join(", ");
}

function queryLabel() {
  const parts = [search.q, ...search.likes.map(baseName), search.upload && search.upload.name];
  const label = parts.filter(Boolean).join(" + ");
  const away = notTerms();
  return away.length ? `${label} − ${away.join(" − ")}` : label;
}

// -- example images: uploaded (one) or indexed photos (by id), shown as removable chips -----------
function setUpload(file) {
  if (uploadUrl) URL.revokeObjectURL(uploadUrl);
  search.upload = file || null;
  uploadUrl = file ? URL.createObjectURL(file) : null;
  renderExamples();
}

function exampleChip(src, name, onRemove) {
  return el("li", { class: "example", title: name },
    el("img", { src: src, alt: "" }), el("span", { class: "name" }, name),
    el("button", { type: "button", class: "chip-remove", "aria-label": `remove ${name} from the search`,
      title: "remove from the search", onclick: onRemove }, "×"));
}

function renderExamples() {
  const list = document.getElementById("query-examples");
  const chips = search.likes.map((id) => exampleChip(
    `/api/thumbnail?id=${encodeURIComponent(id)}&size=small`, baseName(id), () => {
      search.likes = search.likes.filter((x) => x !== id);
      renderExamples();
      scheduleSearch();
    }));
  if (search.upload) {
    chips.push(exampleChip(uploadUrl, search.upload.name || "image", () => {
      setUpload(null);
      scheduleSearch();
    }));
  }
  list.replaceChildren(...chips);
  list.hidden = !chips.length;
  document.getElementById("query").placeholder = chips.length
    ? "Add words, or search with the image alone" : defaultPlaceholder;
}

function addLike(id) {
  if (!search.likes.includes(id)) search.likes.push(id);
  renderExamples();
  closeDetail();
  scheduleSearch();
}

// -- results ---------------------------------------------------------------------------------------
function formatDate(takenAt) {
  const [y, m, d] = takenAt.slice(0, 10).split("-").map(Number);
  return new Date(y, m - 1, d).toLocaleDateString(undefined, { year: "numeric", month: "short", day: "numeric" });
}

// "Lisbon, Lisbon, Portugal" -> "Lisbon, Portugal": the city and the country, each once
function shortPlace(place) {
  const parts = [...new Set(place.split(",").map((p) => p.trim()).filter(Boolean))];
  return parts.length > 2 ? `${parts[0]}, ${parts[parts.length - 1]}` : parts.join(", ");
}

// date (marked when it is only the file's time) and place of a photo, when known
function photoInfo(hit) {
  const parts = [];
  if (hit.taken_at) {
    const fromFile = hit.date_source === "mtime";
    parts.push(el("span", {
      class: fromFile ? "date file-date" : "date",
      title: fromFile ? "the file's date: the photo does not say when it was taken"
        : "taken " + hit.taken_at.replace("T", " "),
    }, formatDate(hit.taken_at), fromFile ? el("span", { class: "tag" }, "file") : null));
  }
  if (hit.place) parts.push(el("span", { class: "place", title: hit.place }, shortPlace(hit.place)));
  return parts.length ? el("span", { class: "info" }, ...parts) : null;
}

// below 1% with one decimal, as the CLI: a result never reads the same as the cutoff
function percent(p) { return p < 0.1 ? `${(p * 100).toFixed(1)}%` : `${Math.round(p * 100)}%`; }

function scoreBadge(hit) {
  if (hit.relevance !== undefined && hit.relevance !== null) {
    return el("span", { class: "score", title: `calibrated probability that this is a match (score ${fmt(hit.score)})` },
      percent(hit.relevance) + " match");
  }
  return el("span", { class: "score" }, fmt(hit.score));
}

function resultCard(hit, onOpen, listed) {
  const img = el("img", { src: hit.thumbnail, alt: hit.caption || baseName(hit.id), loading: "lazy" });
  const meta = listed ? el("span", { class: "meta" }, el("span", { class: "rank" }, "#" + hit.rank))
    : el("span", { class: "meta" }, el("span", { class: "rank" }, "#" + hit.rank), scoreBadge(hit));
  const card = el("button", { class: "card", type: "button", title: hit.id, "data-id": hit.id },
    img, meta, photoInfo(hit));
  card.addEventListener("click", () => onOpen(hit));
  return card;
}

// -- browsing: the photos that pass the filters, by date, under a heading per month -------------
let lastMonth = null;  // the month of the last card listed (a new heading when it changes)

function monthOf(hit) {
  if (!hit.taken_at) return "No date";
  const [year, month] = hit.taken_at.split("-").map(Number);
  return new Date(year, month - 1, 1).toLocaleDateString("en", { month: "long", year: "numeric" });
}

function listPhotos(grid, page) {
  for (const hit of page.results) {
    const month = monthOf(hit);
    if (month !== lastMonth) grid.append(el("h3", { class: "month" }, month));
    lastMonth = month;
    grid.append(resultCard(hit, openDetail, true));
  }
}

// the places of every photo that passes, with counts: choosing one narrows the listing to it
function showPlaces(places) {
  const box = document.getElementById("browse-places");
  const items = (places || []).map((p) => {
    const button = el("button", { type: "button", class: "linklike", title: `only photos taken in ${p.place}` },
      `${shortPlace(p.place)} (${p.count})`);
    button.addEventListener("click", () => {
      document.getElementById("f-place").value = p.place;
      scheduleSearch();
    });
    return el("li", {}, button);
  });
  document.getElementById("browse-places-list").replaceChildren(...items);
  box.hidden = !items.length;
}

function showListing(page, offset) {
  const total = page.candidates ?? offset + page.results.length;
  const order = page.sort === "oldest" ? "oldest first" : "newest first";
  const status = document.getElementById("search-status");
  const filters = filterWords().join(", ");
  status.textContent = total ? `${plural(total, "photo")} · ${filters} · ${order}`
    : `No photo passes ${filters}.`;
  document.getElementById("search-notice").hidden = true;
}

// the status line, and what the cutoff hid (with a button that shows it anyway)
function showOutcome(page, offset) {
  const status = document.getElementById("search-status");
  const notice = document.getElementById("search-notice");
  const label = queryLabel();
  const shown = offset + page.results.length;
  let hint = "";
  if (page.no_good_match) {
    status.textContent = `No photo matches “${label}” well.`;
    const c = page.closest;
    if (c) {
      hint = `The closest, ${baseName(c.id)}, ` + (c.relevance !== undefined && c.relevance !== null
        ? `has a ${percent(c.relevance)} match probability.` : `scores ${fmt(c.score)}.`);
    }
  } else {
    status.textContent = shown ? `${plural(shown, "image")} for “${label}”` : `No images for “${label}”.`;
    if (page.hidden > 0 && !page.has_more) {
      hint = `${page.hidden} of the best ${page.considered} matches hidden as weaker.`;
    }
  }
  document.getElementById("notice-text").textContent = hint;
  document.getElementById("show-closest").textContent =
    page.no_good_match ? "Show the closest" : "Show them";
  notice.hidden = !hint;
}

async function runSearch(offset) {
  const run = ++searchRun;
  const status = document.getElementById("search-status");
  const grid = document.getElementById("results");
  const more = document.getElementById("more");
  more.hidden = true;
  const listing = browsing();
  if (offset === 0) {
    grid.replaceChildren();
    lastMonth = null;
    document.getElementById("search-notice").hidden = true;
    if (!listing) showPlaces([]);
  }
  renderSort();
  if (!hasQuery() && !listing) {
    status.textContent = "";
    return;
  }
  status.textContent = "Searching…";
  status.classList.remove("error");
  try {
    const params = searchParams();
    params.set("limit", PAGE);
    params.set("offset", offset);
    let page;
    if (search.upload || (!search.q && search.likes.length)) {  // an image, or photos without words
      const form = new FormData();
      for (const [k, v] of params) form.append(k, v);
      if (search.upload) form.append("image", search.upload);
      page = await api("/api/search", { method: "POST", body: form });
    } else {
      page = await api("/api/search?" + params);
    }
    if (run !== searchRun) return;  // a newer search started meanwhile
    if (listing) listPhotos(grid, page);
    else for (const hit of page.results) grid.append(resultCard(hit, openDetail));
    nextOffset = offset + page.results.length;
    more.hidden = !page.has_more;
    if (listing) {
      showListing(page, offset);
      if (offset === 0) showPlaces(page.places);
    } else showOutcome(page, offset);
  } catch (err) {
    if (run !== searchRun) return;
    // the API points at /api/facets; on the page the filter fields suggest the same values
    const message = err.message.replace(/; \/api\/facets lists .*$/, "");
    status.textContent = "Search failed: " + message;
    status.classList.add("error");
    if (offset > 0) more.hidden = false;  // the results so far stay; "More" tries again
  }
}

// a new search from the form (the cutoff back to the model's default, unless only the order
// changed: the closest ones shown on request stay shown in the new order)
function submitSearch(keepCutoff) {
  readForm();
  if (!keepCutoff) search.minScore = null;
  syncUrl();
  runSearch(0);
}

function scheduleSearch(keepCutoff) {
  clearTimeout(pendingSearch);
  pendingSearch = setTimeout(() => submitSearch(keepCutoff === true), 0);
}

function showClosest() {
  readForm();
  search.minScore = "0";
  syncUrl();
  runSearch(0);
}

// -- detail view with similar images -------------------------------------------------------------
function detailFacts(hit) {
  const facts = [];
  if (hit.taken_at) facts.push(hit.taken_at.replace("T", " ") + (hit.date_source === "mtime" ? " (file date)" : ""));
  if (hit.place) facts.push([...new Set(hit.place.split(",").map((p) => p.trim()))].join(", "));
  if (hit.camera) facts.push(hit.camera);
  if (hit.width && hit.height) facts.push(`${hit.width} × ${hit.height}`);
  return facts.join(" · ");
}

async function openDetail(hit) {
  detailHit = hit;
  const overlay = document.getElementById("detail");
  document.getElementById("detail-image").src = hit.preview;
  document.getElementById("detail-image").alt = baseName(hit.id);
  const facts = detailFacts(hit);
  const score = hit.relevance !== undefined && hit.relevance !== null
    ? ` — ${percent(hit.relevance)} match (score ${fmt(hit.score)})`
    : (hit.score !== null && hit.score !== undefined ? ` — score ${fmt(hit.score)}` : "");
  document.getElementById("detail-title").replaceChildren(el("strong", {}, baseName(hit.id)), score,
    facts ? el("br") : null, facts ? el("span", { class: "small" }, facts) : null,
    el("br"), el("span", { class: "muted small" }, hit.id));
  const filtered = describeFilters();
  document.getElementById("similar-filter").textContent = filtered ? `(${filtered})` : "";
  const similar = document.getElementById("similar");
  similar.replaceChildren(el("p", { class: "muted" }, "Loading…"));
  if (overlay.hidden) detailOpener = document.activeElement;
  overlay.hidden = false;
  setBackgroundInert(true);  // Tab stays in the dialog
  document.getElementById("detail-close").focus();
  try {
    const params = filterParams();
    params.set("id", hit.id);
    params.set("limit", 12);
    const page = await api("/api/similar?" + params);
    if (detailHit !== hit) return;
    similar.replaceChildren(...page.results.map((h) => resultCard(h, openDetail)));
    if (!page.results.length) similar.append(el("p", { class: "muted" }, "No similar images."));
  } catch (err) {
    if (detailHit === hit) similar.replaceChildren(el("p", { class: "error" }, "Similar images failed: " + err.message));
  }
}

function setBackgroundInert(inert) {
  for (const part of document.querySelectorAll("body > header, body > main")) part.inert = inert;
}

function closeDetail() {
  const overlay = document.getElementById("detail");
  if (overlay.hidden) return;
  overlay.hidden = true;
  setBackgroundInert(false);
  if (detailOpener && detailOpener.isConnected) detailOpener.focus();
  detailOpener = null;
}

// -- what the filters can choose from: years, places, cameras, ... of the collection --------------
function fillList(id, options) {
  document.getElementById(id).replaceChildren(...options.map(([value, label]) => el("option", { value: value, label: label })));
}

// the values each filter field suggests, with photo counts (from the facets of the index)
async function loadSuggestions() {
  const filled = new Set();
  for (const f of await api("/api/filters")) {
    const list = f.facet;
    if (!list || !f.suggest || filled.has(list) || !document.getElementById(list)) continue;
    filled.add(list);
    fillList(list, f.suggest.map(([value, n]) => [value, plural(n, "photo")]));
  }
}

// -- describe and tag an image ---------------------------------------------------------------------
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

// files dropped on ``target`` go to ``onFile`` (the first image among them, else the first file)
function dropTarget(target, onFile) {
  target.addEventListener("dragover", (e) => { e.preventDefault(); target.classList.add("over"); });
  target.addEventListener("dragleave", () => target.classList.remove("over"));
  target.addEventListener("drop", (e) => {
    e.preventDefault();
    target.classList.remove("over");
    const files = [...e.dataTransfer.files];
    const file = files.find((f) => f.type.startsWith("image/")) || files[0];
    if (file) onFile(file);
  });
}

function setupSearch() {
  defaultPlaceholder = document.getElementById("query").placeholder;
  const form = document.getElementById("search-form");
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    scheduleSearch();
  });
  // a changed filter searches again at once when there is something to search for
  const fields = [...Object.values(FILTERS), "f-not"].map((id) => document.getElementById(id));
  for (const field of fields) {
    field.addEventListener("change", () => {
      // with words (or example images) a search; without, the photos that pass, by date
      if (document.getElementById("query").value.trim() || search.upload || search.likes.length
          || fields.some((f) => f.id !== "f-not" && f.value.trim())) scheduleSearch();
      else readForm();
    });
  }
  document.getElementById("filters-clear").addEventListener("click", () => {
    for (const field of fields) field.value = "";
    if (activeFilters()) scheduleSearch();
    else readForm();
  });
  for (const b of document.querySelectorAll("#sort button")) {
    b.addEventListener("click", () => {
      search.sort = b.dataset.sort;
      renderSort();
      if (hasQuery() || browsing() || document.getElementById("query").value.trim()) scheduleSearch(true);
    });
  }
  document.getElementById("show-closest").addEventListener("click", showClosest);
  document.getElementById("more").addEventListener("click", () => runSearch(nextOffset));

  // an example image next to the words: the camera button, or dropped on the search box
  const picker = document.getElementById("query-image");
  picker.addEventListener("change", () => {
    if (picker.files[0]) { setUpload(picker.files[0]); scheduleSearch(); }
    picker.value = "";  // the same file may be chosen again after removing it
  });
  document.getElementById("query-image-button").addEventListener("keydown", (e) => {
    if (e.key === "Enter" || e.key === " ") { e.preventDefault(); picker.click(); }
  });
  dropTarget(document.getElementById("query-box"), (file) => { setUpload(file); scheduleSearch(); });

  document.getElementById("detail-like").addEventListener("click", () => { if (detailHit) addLike(detailHit.id); });
  document.getElementById("detail-close").addEventListener("click", closeDetail);
  document.getElementById("detail").addEventListener("click", (e) => { if (e.target.id === "detail") closeDetail(); });
  document.addEventListener("keydown", (e) => { if (e.key === "Escape") closeDetail(); });

  fitFilters();
  NARROW.addEventListener("change", fitFilters);
  window.addEventListener("popstate", () => { loadFromUrl(); runSearch(0); });
  loadSuggestions().catch(() => {});  // without suggestions the fields still take any text
  loadFromUrl();
  if (hasQuery() || browsing()) runSearch(0);
}

function setupAnnotate() {
  const input = document.getElementById("image-file");
  input.addEventListener("change", () => { if (input.files[0]) annotate(input.files[0]); });
  // a caption file chosen (or changed, or cleared) after the image: describe that image again
  document.getElementById("caption-file").addEventListener("change", () => {
    if (describedImage) annotate(describedImage);
  });
  const zone = document.getElementById("dropzone");
  dropTarget(zone, annotate);
  zone.addEventListener("keydown", (e) => {
    if (e.target !== zone || (e.key !== "Enter" && e.key !== " ")) return;
    e.preventDefault();
    input.click();
  });
}

function setup() {
  setupSearch();
  setupAnnotate();
  api("/api/stats").then((s) => {
    const n = s.indexed ?? s.n_images;
    if (n !== undefined) document.getElementById("stats").textContent = `${n.toLocaleString()} images indexed`;
  }).catch(() => {});
}

document.addEventListener("DOMContentLoaded", setup);
