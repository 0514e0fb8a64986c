// Judging a machine-in-the-loop campaign (/judge), one image–caption pair at a time.
// The first part (the worker token, API calls, the message area) is shared with the review page,
// which loads this file before review.js; the judging page itself starts only where #judge exists.
// No framework, no build step, nothing loaded from outside the server.
"use strict";

class MitlError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

const mitl = {
  page: "",   // "judge" or "review": each page has its own session cookie

  // A sign-in link /judge?code=… (one-time) was exchanged by the server for an HttpOnly session
  // cookie and a 303 to the clean page; a used or expired code comes back as #used-link, a token
  // in an address (never taken from there) as #token-in-address (both removed here at once).
  // The page never sees a token except one typed into the form, sent once in a POST body.
  takeToken(page) {
    this.page = page;
    const reason = { "#used-link": "used", "#token-in-address": "address" }[location.hash] || null;
    if (location.hash) history.replaceState(null, "", location.pathname + location.search);
    return reason;
  },

  // What to say when nobody is signed in, after a refused link (reason) or on a plain visit.
  signInMessage(reason, who) {
    if (reason === "used") {
      return "This sign-in link was used already or has expired (a link signs in once): ask for a new one, or enter your token below.";
    }
    if (reason === "address") {
      return "A token in a link does not sign in (the browser would keep it in its history): enter the token below, or ask for a sign-in link.";
    }
    return `A ${who} token is needed: open the sign-in link you were given, or enter the token below.`;
  },

  headers(json) {
    const h = { "X-Mitl-Page": this.page };
    if (json) h["Content-Type"] = "application/json";
    return h;
  },

  async call(method, path, body) {
    let response;
    try {
      response = await fetch("/api/mitl" + path, {
        method: method,
        headers: this.headers(body !== undefined),
        credentials: "same-origin",
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

  // The token form: shown with a message; the token goes once, in a POST body, for a cookie.
  setupTokenForm(onToken) {
    const form = document.getElementById("token-form");
    const input = document.getElementById("token-input");
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const token = input.value.trim();
      if (!token) return;
      input.value = "";
      try {
        await this.call("POST", "/session", { token: token, page: this.page });
      } catch (err) {
        this.askToken(`${err.message} — enter your token.`);
        return;
      }
      form.hidden = true;
      onToken();
    });
    document.getElementById("change-token").addEventListener("click", async () => {
      try { await this.call("DELETE", "/session"); } catch (e) { /* the form still shows */ }
      this.askToken("");
    });
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
  number: 0,     // this HIT's place among the worker's own HITs
  of: 0,         // number + HITs left for this worker
  left: 0,
  items: [],     // {id (opaque, per assignment), text, image}: the same fields for every item
  labels: {},    // answer number -> the paper's wording
  answers: {},   // item id -> {answer: 1-4, reason: "..."}
  position: 0,   // 0..items.length-1 a pair, items.length the summary
  version: 0,    // the draft version this page last saved or loaded (409: another tab saved)
  limits: { reason_chars: 2000, draft_bytes: 65536 },
  view: "none",  // "pair", "summary", "outcome", "done" or "none"
  busy: false,
  conflict: false,
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

function entryOf(item) { return judge.answers[item.id] || {}; }
const hasAnswer = (e) => Boolean(e) && Number.isInteger(e.answer);  // 0 (can't tell) is an answer
function answeredCount() { return judge.items.filter((it) => hasAnswer(entryOf(it))).length; }
function labelOf(n) { return `${n} · ${judge.labels[n] || judge.labels[String(n)] || ""}`; }
function reasonLimit() { return judge.limits.reason_chars || 2000; }
function tooLong() {
  return judge.items.map((it, i) => [i, (entryOf(it).reason || "").trim().length])
    .filter(([, n]) => n > reasonLimit());
}

// Keep only what belongs to this HIT: answers 1-4 and reasons, keyed by item id.
function cleanAnswers(raw) {
  const out = {};
  if (!raw || typeof raw !== "object") return out;
  for (const item of judge.items) {
    const value = raw[item.id];
    if (!value || typeof value !== "object") continue;
    const entry = {};
    const answer = value.answer === null || value.answer === undefined ? NaN : Number(value.answer);
    if ([0, 1, 2, 3, 4].includes(answer)) entry.answer = answer;  // 0: can't tell
    if (typeof value.reason === "string" && value.reason) entry.reason = value.reason;
    if (Object.keys(entry).length) out[item.id] = entry;
  }
  return out;
}

function handleError(err, context) {
  if (err.status === 401) {
    show("none");
    judge.assignment = null;
    mitl.askToken(`${err.message} — enter your worker token.`, VIEWS);
    return;
  }
  mitl.showMessage((context ? context + ": " : "") + err.message);
}

async function start(refused) {
  mitl.clearMessage();
  show("loading");
  try {
    mitl.showWho(await mitl.call("GET", "/me"));
    await loadNext();
  } catch (err) {
    show("none");
    if (err.status === 401) {
      judge.assignment = null;
      mitl.askToken(mitl.signInMessage(refused, "worker"), VIEWS);
      return;
    }
    handleError(err, "Could not start");
  }
}

function setNumbers(data) {
  judge.number = data.number || 0;
  judge.of = data.of || 0;
  judge.left = data.left || 0;
  judge.entry = data.entry_test || null;  // {pairs, pass_mark, need} while the entry test is open
  const note = $("entry-note");
  note.hidden = !judge.entry;
  if (judge.entry) {
    note.textContent = `Entry test: ${judge.entry.pairs} pairs. Answer at least ${judge.entry.need} ` +
      `of them right (${Math.round(100 * judge.entry.pass_mark)}%) to get the HITs; ` +
      "the test is taken once.";
  }
}

function showDone(data) {
  const failed = Boolean(data.entry_test_failed);
  $("done").dataset.reason = failed ? "entry-test" : "no-hits";
  $("done-title").textContent = failed
    ? "You did not pass the entry test — thank you for taking it."
    : "No HITs left — thank you!";
  $("done-text").textContent = failed
    ? "Too few of its pairs were answered as expected, so this study has no HITs for you. " +
      "If you came from a crowd platform, return the study there; you will not get a completion code."
    : "Every HIT has enough judgments or was already judged by you.";
  show("done");
}

async function loadNext() {
  show("loading");
  const data = await mitl.call("POST", "/next");
  judge.labels = Object.assign({ 0: data.skip || "can't tell" }, data.answers || {});
  if (data.limits) judge.limits = data.limits;
  setNumbers(data);
  if (data.assignment === null || data.assignment === undefined) {
    judge.assignment = null;
    showDone(data);
    return;
  }
  adopt(data);
  setSaveStatus("", "");
  buildAnswerButtons();
  render();
}

function adopt(data) {
  judge.assignment = data.assignment;
  judge.items = data.items || [];
  judge.version = data.version || 0;
  const draft = data.draft || {};
  judge.answers = cleanAnswers(draft.answers);
  const pos = Number.parseInt(draft.position, 10);
  judge.position = Number.isFinite(pos) ? Math.min(Math.max(pos, 0), judge.items.length) : 0;
}

function buildAnswerButtons() {
  const group = $("answer-buttons");
  group.replaceChildren();
  for (const n of [1, 2, 3, 4, 0]) {  // 0: can't tell (no judgment)
    group.append(el("button", {
      type: "button", class: "answer", "data-answer": n, "aria-pressed": "false",
      "aria-keyshortcuts": String(n), onclick: () => choose(n, true),  // one tap: answer, go on
    }, el("kbd", {}, n), " ", judge.labels[n] || judge.labels[String(n)] || ""));
  }
}

function hitText() {
  if (judge.entry && !judge.number) return "Entry test";
  return judge.of ? `HIT ${judge.number} of ${judge.of}` : `HIT ${judge.number}`;
}

function render() {
  const n = judge.items.length;
  const answered = answeredCount();
  $("progress-bar").max = Math.max(n, 1);
  $("progress-bar").value = answered;
  $("hits-left").textContent = judge.entry && !judge.number
    ? `${judge.left} HIT${judge.left === 1 ? "" : "s"} after it if you pass`
    : `${judge.left} more HIT${judge.left === 1 ? "" : "s"} after this one`;
  if (judge.position >= n) return renderSummary();
  const item = judge.items[judge.position];
  const entry = entryOf(item);
  $("progress-text").textContent = `${hitText()} · pair ${judge.position + 1} of ${n} · ${answered} answered`;
  const image = $("pair-image");
  if (image.getAttribute("src") !== item.image) {
    $("image-error").hidden = true;
    image.src = item.image;
  }
  image.alt = `the photo of pair ${judge.position + 1}`;
  $("caption").textContent = item.text;
  for (const button of $("answer-buttons").querySelectorAll("button")) {
    button.setAttribute("aria-pressed", String(Number(button.dataset.answer) === entry.answer));
  }
  const reason = $("reason");
  if (document.activeElement !== reason || reason.dataset.item !== item.id) {
    reason.value = entry.reason || "";
  }
  reason.dataset.item = item.id;
  showReasonCount();
  $("prev").disabled = judge.position === 0;
  $("next").textContent = judge.position === n - 1 ? "Summary →" : "Next →";
  show("pair");
  const following = judge.items[judge.position + 1];
  if (following) new Image().src = following.image;  // preload (by cookie, no token)
}

// The reason field counts its characters; beyond the limit it says so and nothing is cut.
function showReasonCount() {
  const length = $("reason").value.trim().length;
  const limit = reasonLimit();
  const count = $("reason-count");
  count.textContent = `${length.toLocaleString("en")} / ${limit.toLocaleString("en")}`;
  const over = length > limit;
  count.classList.toggle("error", over);
  $("reason").setAttribute("aria-invalid", String(over));
  $("reason-error").hidden = !over;
  if (over) $("reason-error").textContent = `Too long: at most ${limit.toLocaleString("en")} characters, this reason has ${length.toLocaleString("en")}. Shorten it; it is not saved until then.`;
}

function renderSummary() {
  const n = judge.items.length;
  const answered = answeredCount();
  $("progress-text").textContent = `${hitText()} · summary · ${answered} of ${n} answered`;
  const list = $("summary-list");
  list.replaceChildren();
  const long = new Set(tooLong().map(([i]) => i));
  judge.items.forEach((item, i) => {
    const entry = entryOf(item);
    list.append(el("li", { class: hasAnswer(entry) && !long.has(i) ? "" : "error" },
      el("button", { type: "button", class: "linkbutton", onclick: () => goTo(i) }, `pair ${i + 1}`), ": ",
      hasAnswer(entry) ? labelOf(entry.answer) : "not answered yet",
      long.has(i) ? ` — the reason is longer than ${reasonLimit().toLocaleString("en")} characters` : null,
      entry.reason && !long.has(i) ? el("span", { class: "muted" }, ` — ${entry.reason}`) : null));
  });
  const complete = answered === n && !long.size;
  $("summary-text").textContent = complete
    ? `All ${n} pairs are answered. Submit the HIT, or go back to change an answer.`
    : answered < n ? `${n - answered} of ${n} pairs still need an answer before the HIT can be submitted.`
      : `A reason is too long (at most ${reasonLimit().toLocaleString("en")} characters): shorten it before submitting.`;
  $("submit").hidden = !complete;
  show("summary");
}

function setSaveStatus(state, text) {
  const status = $("save-status");
  status.dataset.state = state;
  status.textContent = text;
}

function draftBody() { return { answers: judge.answers, position: judge.position, version: judge.version }; }

// Every change saves the draft: at once for answers and moves, a moment later while typing.
// One PUT at a time; the latest state always goes last.
function scheduleSave(delay) {
  if (judge.assignment === null || judge.conflict) return;
  save.dirty = true;
  setSaveStatus("unsaved", "Not saved yet");
  clearTimeout(save.timer);
  save.timer = setTimeout(flushSave, delay || 0);
}

async function flushSave() {
  clearTimeout(save.timer);
  save.timer = null;
  if (save.inflight || !save.dirty || judge.assignment === null || judge.conflict) return;
  if (tooLong().length) {
    setSaveStatus("error", `Not saved: a reason is longer than ${reasonLimit().toLocaleString("en")} characters`);
    return;
  }
  save.dirty = false;
  const assignment = judge.assignment;
  setSaveStatus("saving", "Saving…");
  save.inflight = mitl.call("PUT", `/assignments/${assignment}/draft`, draftBody())
    .then((data) => { if (assignment === judge.assignment) judge.version = data.version; return null; }, (err) => err);
  const err = await save.inflight;
  save.inflight = null;
  if (assignment !== judge.assignment) return;  // submitted or replaced meanwhile
  if (err && err.status === 409 && /another tab/.test(err.message)) {
    setSaveStatus("error", "Not saved: changed in another tab");
    await showConflict(err.message);
  } else if (err) {
    setSaveStatus("error", "Not saved");
    handleError(err, "Your answers could not be saved");
  } else if (save.dirty) {
    flushSave();
  } else if (!save.timer) {
    setSaveStatus("saved", "Saved");
  }
}

// Another tab saved this HIT since this page loaded it: show the pairs whose answers differ and
// let the worker keep this tab's or take the other's, per pair, or reload everything.
async function showConflict(message) {
  let theirs;
  try {
    theirs = await mitl.call("GET", `/assignments/${judge.assignment}`);
  } catch (err) { handleError(err, "The other tab's answers cannot be loaded"); return; }
  const other = cleanAnswers((theirs.draft || {}).answers);
  const differ = judge.items.map((item, i) => [item, i]).filter(([item]) =>
    JSON.stringify(judge.answers[item.id] || {}) !== JSON.stringify(other[item.id] || {}));
  judge.version = theirs.version || 0;
  if (!differ.length) { scheduleSave(0); return; }
  judge.conflict = true;
  const merged = Object.assign({}, judge.answers);
  const chosen = new Set();
  const describe = (e) => (hasAnswer(e) ? labelOf(e.answer) : "no answer") + (e && e.reason ? ` — “${e.reason}”` : "");
  const lock = (locked) => { for (const b of $("answer-buttons").querySelectorAll("button")) b.disabled = locked; };
  const finish = () => {
    lock(false);
    judge.answers = merged;
    judge.conflict = false;
    $("conflict").hidden = true;
    mitl.clearMessage();
    render();
    scheduleSave(0);
  };
  const rows = differ.map(([item, i]) => {
    const row = el("li", { "data-item": item.id });
    const pick = (take) => {
      if (take) { if (other[item.id]) merged[item.id] = other[item.id]; else delete merged[item.id]; }
      chosen.add(item.id);
      row.classList.add("resolved");
      for (const b of row.querySelectorAll("button")) b.disabled = true;
      if (chosen.size === differ.length) finish();
    };
    row.append(el("strong", {}, `Pair ${i + 1}: `), "this tab: ", describe(judge.answers[item.id]),
      " · other tab: ", describe(other[item.id]), " ",
      el("button", { type: "button", class: "secondary keep-mine", onclick: () => pick(false) }, "Keep this tab's"), " ",
      el("button", { type: "button", class: "secondary take-theirs", onclick: () => pick(true) }, "Take the other tab's"));
    return row;
  });
  $("conflict-list").replaceChildren(...rows);
  $("conflict-reload").onclick = () => { lock(false); adopt(theirs); judge.conflict = false; $("conflict").hidden = true; mitl.clearMessage(); render(); setSaveStatus("saved", "Reloaded"); };
  $("conflict-mine").onclick = () => { for (const [item] of differ) chosen.add(item.id); finish(); };
  $("conflict").hidden = false;
  lock(true);  // answers wait until the pairs that differ are settled
  mitl.showMessage("Your answers were changed in another tab or window. Choose per pair which answer to keep, or reload.", "info");
}

function choose(answer, advance) {
  if (judge.view !== "pair" || judge.conflict) return;
  const key = judge.items[judge.position].id;
  judge.answers[key] = Object.assign({}, judge.answers[key], { answer: answer });
  if (advance) judge.position += 1;
  render();
  scheduleSave(0);
}

function goTo(position) {
  if (judge.conflict) return;
  const target = Math.min(Math.max(position, 0), judge.items.length);
  if (target === judge.position && judge.view === "pair") return;
  judge.position = target;
  render();
  scheduleSave(0);
}

function onReasonInput() {
  if (judge.view !== "pair") return;
  const key = judge.items[judge.position].id;
  const entry = Object.assign({}, judge.answers[key]);
  const text = $("reason").value;
  if (text.trim()) entry.reason = text;
  else delete entry.reason;
  if (Object.keys(entry).length) judge.answers[key] = entry;
  else delete judge.answers[key];
  showReasonCount();
  scheduleSave(500);
}

async function submitHit() {
  const n = judge.items.length;
  if (judge.busy || judge.conflict || judge.assignment === null || answeredCount() < n || tooLong().length) return;
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
    body.answers[item.id] = entry.reason
      ? { answer: entry.answer, reason: entry.reason.trim() } : { answer: entry.answer };
  }
  try {
    await mitl.call("POST", `/assignments/${assignment}/submit`, body);
    judge.assignment = null;
    mitl.clearMessage();
    // the same words whatever the check pairs got: no verdict before review
    $("outcome-text").textContent = judge.entry && !judge.number
      ? "Entry test submitted — thank you!"
      : judge.left
      ? `Submitted — thank you! ${judge.left} more HIT${judge.left === 1 ? "" : "s"} for you.`
      : "Submitted — thank you!";
    $("outcome").dataset.status = "submitted";
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
    if (["0", "1", "2", "3", "4"].includes(event.key)) { event.preventDefault(); choose(Number(event.key), true); } else if (event.key === "ArrowRight") { event.preventDefault(); goTo(judge.position + 1); } else if (event.key === "ArrowLeft") { event.preventDefault(); goTo(judge.position - 1); }
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
  if (judge.assignment === null || judge.conflict || tooLong().length || !(save.dirty || save.timer)) return;
  try {
    fetch(`/api/mitl/assignments/${judge.assignment}/draft`, {
      method: "PUT", keepalive: true, credentials: "same-origin", headers: mitl.headers(true), body: JSON.stringify(draftBody()),
    });
  } catch (e) { /* nothing more to do while the page unloads */ }
}

function setupJudge() {
  const refused = mitl.takeToken("judge");
  mitl.setupTokenForm(() => start(null));
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
  start(refused);
}

document.addEventListener("DOMContentLoaded", () => { if (document.getElementById("judge")) setupJudge(); });
