// Judging a machine-in-the-loop campaign (/judge), one image–caption pair at a time.
// The first part (the worker token, API calls, the message area) is shared with the review page,
// which loads this file before review.js; the judging page itself starts only where #judge exists.
// No framework, no build step, nothing loaded from outside the server.
"use strict";

class MitlError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

const mitl = {
  page: "",   // "judge" or "review": each page remembers its own token
  token: "",
  memory: {}, // stands in for localStorage where the browser refuses it

  key() { return "xmodal-mitl-token:" + this.page; },

  remember(token) {
    this.token = token || "";
    try {
      if (this.token) localStorage.setItem(this.key(), this.token);
      else localStorage.removeItem(this.key());
    } catch (e) { this.memory[this.key()] = this.token; }
  },

  // The token from ?token= (remembered, then removed from the address bar), else the stored one.
  takeToken(page) {
    this.page = page;
    const params = new URLSearchParams(location.search);
    const given = (params.get("token") || "").trim();
    if (params.has("token")) {
      params.delete("token");
      const rest = params.toString();
      history.replaceState(null, "", location.pathname + (rest ? "?" + rest : "") + location.hash);
    }
    if (given) this.remember(given);
    else {
      try { this.token = localStorage.getItem(this.key()) || ""; } catch (e) { this.token = this.memory[this.key()] || ""; }
    }
    return this.token;
  },

  headers(json) {
    const h = { "X-Worker-Token": this.token };
    if (json) h["Content-Type"] = "application/json";
    return h;
  },

  async call(method, path, body) {
    let response;
    try {
      response = await fetch("/api/mitl" + path, {
        method: method,
        headers: this.headers(body !== undefined),
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (err) {
      throw new MitlError(0, "the server cannot be reached (" + err.message + ")");
    }
    let data = null;
    try { data = await response.json(); } catch (e) { data = null; }
    if (!response.ok) {
      const message = data && data.error ? data.error.message : `HTTP ${response.status}`;
      throw new MitlError(response.status, message);
    }
    return data;
  },

  imageUrl(pairId) {
    return `/api/mitl/image/${encodeURIComponent(pairId)}?token=${encodeURIComponent(this.token)}`;
  },

  showMessage(text, kind) {
    const box = document.getElementById("message");
    box.textContent = text;
    box.className = "message" + (kind ? " " + kind : "");
    box.hidden = false;
  },

  clearMessage() {
    const box = document.getElementById("message");
    box.textContent = "";
    box.hidden = true;
  },

  showWho(me) {
    document.getElementById("who").textContent = me ? `${me.name} (${me.role})` : "";
    document.getElementById("change-token").hidden = !me;
  },

  // The token form: shown with a message; submitting it remembers the token and calls onToken.
  setupTokenForm(onToken) {
    const form = document.getElementById("token-form");
    const input = document.getElementById("token-input");
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const token = input.value.trim();
      if (!token) return;
      input.value = "";
      form.hidden = true;
      this.remember(token);
      onToken();
    });
    document.getElementById("change-token").addEventListener("click", () => this.askToken(""));
  },

  askToken(message, hide) {
    for (const id of hide || []) document.getElementById(id).hidden = true;
    this.showWho(null);
    if (message) this.showMessage(message);
    else this.clearMessage();
    document.getElementById("token-form").hidden = false;
    document.getElementById("token-input").focus();
  },
};

// ----- the judging page ------------------------------------------------------------------------
const judge = {
  assignment: null,
  hit: null,
  items: [],
  labels: {},    // answer number -> the paper's wording
  answers: {},   // pair id (string) -> {answer: 1-4, reason: "..."}
  position: 0,   // 0..items.length-1 a pair, items.length the summary
  view: "none",  // "pair", "summary", "outcome", "done" or "none"
  busy: false,
};
const save = { timer: null, dirty: false, inflight: null };
const VIEWS = ["judge", "outcome", "done", "loading"];
const $ = (id) => document.getElementById(id);

function show(view) {
  judge.view = view;
  $("judge").hidden = !(view === "pair" || view === "summary");
  $("pair-view").hidden = view !== "pair";
  $("summary").hidden = view !== "summary";
  $("outcome").hidden = view !== "outcome";
  $("done").hidden = view !== "done";
  $("loading").hidden = view !== "loading";
}

function entryOf(item) { return judge.answers[String(item.pair_id)] || {}; }
function answeredCount() { return judge.items.filter((it) => entryOf(it).answer).length; }
function labelOf(n) { return `${n} · ${judge.labels[n] || judge.labels[String(n)] || ""}`; }

// Keep only what belongs to this HIT: answers 1-4 and reasons, keyed by pair id.
function cleanAnswers(raw) {
  const out = {};
  if (!raw || typeof raw !== "object") return out;
  for (const item of judge.items) {
    const value = raw[String(item.pair_id)];
    if (!value || typeof value !== "object") continue;
    const entry = {};
    const answer = Number(value.answer);
    if ([1, 2, 3, 4].includes(answer)) entry.answer = answer;
    if (typeof value.reason === "string" && value.reason) entry.reason = value.reason;
    if (Object.keys(entry).length) out[String(item.pair_id)] = entry;
  }
  return out;
}

function handleError(err, context) {
  if (err.status === 401) {
    show("none");
    judge.assignment = null;
    mitl.remember("");
    mitl.askToken(`${err.message} — enter your worker token.`, VIEWS);
    return;
  }
  mitl.showMessage((context ? context + ": " : "") + err.message);
}

async function start() {
  mitl.clearMessage();
  if (!mitl.token) {
    mitl.askToken("A worker token is needed to judge: open the link you were given, or enter the token below.", VIEWS);
    return;
  }
  show("loading");
  try {
    mitl.showWho(await mitl.call("GET", "/me"));
    await loadNext();
  } catch (err) {
    show("none");
    handleError(err, "Could not start");
  }
}

async function loadNext() {
  show("loading");
  const data = await mitl.call("POST", "/next");
  judge.labels = data.answers || {};
  if (data.assignment === null || data.assignment === undefined) {
    judge.assignment = null;
    show("done");
    return;
  }
  judge.assignment = data.assignment;
  judge.hit = data.hit;
  judge.items = data.items || [];
  const draft = data.draft || {};
  judge.answers = cleanAnswers(draft.answers);
  const pos = Number.parseInt(draft.position, 10);
  judge.position = Number.isFinite(pos) ? Math.min(Math.max(pos, 0), judge.items.length) : 0;
  setSaveStatus("", "");
  buildAnswerButtons();
  render();
}

function buildAnswerButtons() {
  const group = $("answer-buttons");
  group.replaceChildren();
  for (const n of [1, 2, 3, 4]) {
    group.append(el("button", {
      type: "button", class: "answer", "data-answer": n, "aria-pressed": "false",
      "aria-keyshortcuts": String(n), onclick: () => choose(n, false),
    }, el("kbd", {}, n), " ", judge.labels[n] || judge.labels[String(n)] || ""));
  }
}

function render() {
  const n = judge.items.length;
  const answered = answeredCount();
  $("progress-bar").max = Math.max(n, 1);
  $("progress-bar").value = answered;
  if (judge.position >= n) return renderSummary();
  const item = judge.items[judge.position];
  const entry = entryOf(item);
  $("progress-text").textContent = `HIT ${judge.hit} · pair ${judge.position + 1} of ${n} · ${answered} answered`;
  const image = $("pair-image");
  const src = mitl.imageUrl(item.pair_id);
  if (image.getAttribute("src") !== src) {
    $("image-error").hidden = true;
    image.src = src;
  }
  image.alt = `image ${item.image_id}`;
  $("caption").textContent = item.text;
  for (const button of $("answer-buttons").querySelectorAll("button")) {
    button.setAttribute("aria-pressed", String(Number(button.dataset.answer) === entry.answer));
  }
  const reason = $("reason");
  if (document.activeElement !== reason || reason.dataset.pair !== String(item.pair_id)) {
    reason.value = entry.reason || "";
  }
  reason.dataset.pair = String(item.pair_id);
  $("prev").disabled = judge.position === 0;
  $("next").textContent = judge.position === n - 1 ? "Summary →" : "Next →";
  show("pair");
  const following = judge.items[judge.position + 1];
  if (following) new Image().src = mitl.imageUrl(following.pair_id);  // preload
}

function renderSummary() {
  const n = judge.items.length;
  const answered = answeredCount();
  $("progress-text").textContent = `HIT ${judge.hit} · summary · ${answered} of ${n} answered`;
  const list = $("summary-list");
  list.replaceChildren();
  judge.items.forEach((item, i) => {
    const entry = entryOf(item);
    list.append(el("li", { class: entry.answer ? "" : "error" },
      el("button", { type: "button", class: "linkbutton", onclick: () => goTo(i) }, `pair ${i + 1}`), ": ",
      entry.answer ? labelOf(entry.answer) : "not answered yet",
      entry.reason ? el("span", { class: "muted" }, ` — ${entry.reason}`) : null));
  });
  const complete = answered === n;
  $("summary-text").textContent = complete
    ? `All ${n} pairs are answered. Submit the HIT, or go back to change an answer.`
    : `${n - answered} of ${n} pairs still need an answer before the HIT can be submitted.`;
  $("submit").hidden = !complete;
  show("summary");
}

function setSaveStatus(state, text) {
  const status = $("save-status");
  status.dataset.state = state;
  status.textContent = text;
}

function draftBody() { return { answers: judge.answers, position: judge.position }; }

// Every change saves the draft: at once for answers and moves, a moment later while typing.
// One PUT at a time; the latest state always goes last.
function scheduleSave(delay) {
  if (judge.assignment === null) return;
  save.dirty = true;
  setSaveStatus("unsaved", "Not saved yet");
  clearTimeout(save.timer);
  save.timer = setTimeout(flushSave, delay || 0);
}

async function flushSave() {
  clearTimeout(save.timer);
  save.timer = null;
  if (save.inflight || !save.dirty || judge.assignment === null) return;
  save.dirty = false;
  const assignment = judge.assignment;
  setSaveStatus("saving", "Saving…");
  save.inflight = mitl.call("PUT", `/assignments/${assignment}/draft`, draftBody())
    .then(() => null, (err) => err);
  const err = await save.inflight;
  save.inflight = null;
  if (assignment !== judge.assignment) return;  // submitted or replaced meanwhile
  if (err) {
    setSaveStatus("error", "Not saved");
    handleError(err, "Your answers could not be saved");
  } else if (save.dirty) {
    flushSave();
  } else if (!save.timer) {
    setSaveStatus("saved", "Saved");
  }
}

function choose(answer, advance) {
  if (judge.view !== "pair") return;
  const key = String(judge.items[judge.position].pair_id);
  judge.answers[key] = Object.assign({}, judge.answers[key], { answer: answer });
  if (advance) judge.position += 1;
  render();
  scheduleSave(0);
}

function goTo(position) {
  const target = Math.min(Math.max(position, 0), judge.items.length);
  if (target === judge.position && judge.view === "pair") return;
  judge.position = target;
  render();
  scheduleSave(0);
}

function onReasonInput() {
  if (judge.view !== "pair") return;
  const key = String(judge.items[judge.position].pair_id);
  const entry = Object.assign({}, judge.answers[key]);
  const text = $("reason").value;
  if (text.trim()) entry.reason = text;
  else delete entry.reason;
  if (Object.keys(entry).length) judge.answers[key] = entry;
  else delete judge.answers[key];
  scheduleSave(500);
}

async function submitHit() {
  const n = judge.items.length;
  if (judge.busy || judge.assignment === null || answeredCount() < n) return;
  judge.busy = true;
  $("submit").disabled = true;
  const assignment = judge.assignment;
  clearTimeout(save.timer);
  save.timer = null;
  save.dirty = false;
  if (save.inflight) await save.inflight;
  const body = { answers: {} };
  for (const item of judge.items) {
    const entry = entryOf(item);
    body.answers[String(item.pair_id)] = entry.reason
      ? { answer: entry.answer, reason: entry.reason.trim() } : { answer: entry.answer };
  }
  try {
    const result = await mitl.call("POST", `/assignments/${assignment}/submit`, body);
    judge.assignment = null;
    mitl.clearMessage();
    $("outcome-text").textContent = result.status === "review"
      ? "Submitted — sent to review because a check pair was answered wrongly."
      : "Submitted — thank you!";
    $("outcome").dataset.status = result.status;
    show("outcome");
    $("next-hit").focus();
  } catch (err) {
    if (err.status === 409) {  // submitted elsewhere, or its lease expired and the slot is taken
      judge.assignment = null;
      $("outcome-text").textContent = "This HIT was not submitted: " + err.message;
      $("outcome").dataset.status = "conflict";
      show("outcome");
      $("next-hit").focus();
    } else {
      handleError(err, "Submitting failed");
    }
  } finally {
    judge.busy = false;
    $("submit").disabled = false;
  }
}

async function nextHit() {
  if (judge.busy) return;
  judge.busy = true;
  mitl.clearMessage();
  try { await loadNext(); } catch (err) { show("none"); handleError(err, "Could not get a HIT"); } finally { judge.busy = false; }
}

function onKey(event) {
  if (event.ctrlKey || event.metaKey || event.altKey || event.isComposing) return;
  const target = event.target;
  if (target.id === "reason") {  // typing: no shortcuts, Enter goes on, Esc leaves the field
    if (event.key === "Enter") { event.preventDefault(); goTo(judge.position + 1); } else if (event.key === "Escape") target.blur();
    return;
  }
  if (target.closest && target.closest("input, textarea, select, [contenteditable=''], [contenteditable=true]")) return;
  if (judge.view === "pair") {
    if (["1", "2", "3", "4"].includes(event.key)) { event.preventDefault(); choose(Number(event.key), true); } else if (event.key === "ArrowRight") { event.preventDefault(); goTo(judge.position + 1); } else if (event.key === "ArrowLeft") { event.preventDefault(); goTo(judge.position - 1); }
  } else if (judge.view === "summary") {
    if (event.key === "Enter") {
      if (target.tagName === "BUTTON" && target.id !== "submit") return;  // a focused button acts itself
      event.preventDefault();
      submitHit();
    } else if (event.key === "ArrowLeft") { event.preventDefault(); goTo(judge.position - 1); }
  }
}

// A draft change still waiting when the page goes away is sent anyway.
function onPageHide() {
  if (judge.assignment === null || !(save.dirty || save.timer)) return;
  try {
    fetch(`/api/mitl/assignments/${judge.assignment}/draft`, {
      method: "PUT", keepalive: true, headers: mitl.headers(true), body: JSON.stringify(draftBody()),
    });
  } catch (e) { /* nothing more to do while the page unloads */ }
}

function setupJudge() {
  mitl.takeToken("judge");
  mitl.setupTokenForm(start);
  $("prev").addEventListener("click", () => goTo(judge.position - 1));
  $("next").addEventListener("click", () => goTo(judge.position + 1));
  $("summary-back").addEventListener("click", () => goTo(judge.items.length - 1));
  $("submit").addEventListener("click", submitHit);
  $("next-hit").addEventListener("click", nextHit);
  $("reason").addEventListener("input", onReasonInput);
  $("reason").addEventListener("change", () => { if (save.timer) flushSave(); });
  $("pair-image").addEventListener("error", () => { if ($("pair-image").getAttribute("src")) $("image-error").hidden = false; });
  $("pair-image").addEventListener("load", () => { $("image-error").hidden = true; });
  document.addEventListener("keydown", onKey);
  window.addEventListener("pagehide", onPageHide);
  start();
}

document.addEventListener("DOMContentLoaded", () => { if (document.getElementById("judge")) setupJudge(); });
