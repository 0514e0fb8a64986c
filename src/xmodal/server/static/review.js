// Reviewing a machine-in-the-loop campaign (/review): the HITs whose check pairs were answered
// wrongly, each pair with the worker's answer and reason; accept or reject each HIT.
// Uses the session and API helpers of judge.js (loaded first). Reject asks for confirmation; every
// decision can be undone from the notice that replaces the HIT. A reviewer's own HITs are not here.
"use strict";

const review = { labels: {}, left: 0 };

const GOLD = {
  gold_pos: { name: "known positive", right: "1 or 2 (a yes answer)", ok: (a) => a <= 2 },
  gold_neg: { name: "known negative", right: "3 or 4 (a no answer)", ok: (a) => a >= 3 },
};

function answerText(answer) {
  if (answer === null || answer === undefined) return "no answer";
  return `${answer} · ${review.labels[answer] || review.labels[String(answer)] || ""}`;
}

function reviewItem(item) {
  const gold = GOLD[item.kind];
  const judged = item.answer !== null && item.answer !== undefined;
  const wrong = Boolean(gold && judged && !gold.ok(item.answer));
  const classes = ["review-item"];
  if (gold) classes.push("gold", wrong ? "wrong" : "right");
  return el("li", { class: classes.join(" "), "data-pair": item.pair_id, "data-kind": item.kind },
    el("img", { src: item.image, alt: `image ${item.image_id}`, loading: "lazy" }),
    el("div", {},
      el("p", { class: "caption-text" }, item.text),
      el("p", {}, "Answer: ", el("strong", { class: "answer" }, answerText(item.answer))),
      item.reason ? el("p", { class: "reason" }, "Reason: ", el("em", {}, item.reason)) : null,
      gold ? el("p", { class: "gold-note " + (wrong ? "error" : "better") },
        `Check pair, ${gold.name}: the right answer is ${gold.right}. `,
        el("strong", {}, wrong ? "Answered wrongly." : judged ? "Answered rightly." : "Not answered.")) : null));
}

function reviewEntry(entry) {
  const wrong = entry.items.filter((it) => GOLD[it.kind] && it.answer !== null && it.answer !== undefined
    && !GOLD[it.kind].ok(it.answer)).length;
  const checks = entry.items.filter((it) => GOLD[it.kind]).length;
  const when = entry.submitted_at ? new Date(entry.submitted_at * 1000).toLocaleString() : "";
  const titleId = `entry-${entry.assignment}-title`;
  const noteId = `entry-${entry.assignment}-note`;
  const article = el("article", { class: "review-entry", "data-assignment": entry.assignment, "aria-labelledby": titleId });
  const note = el("input", { id: noteId, class: "note", type: "text", maxlength: "2000", autocomplete: "off" });
  const accept = el("button", { type: "button", class: "accept" }, "Accept");
  const reject = el("button", { type: "button", class: "reject danger" }, "Reject");
  const cancel = el("button", { type: "button", class: "cancel secondary", hidden: "" }, "Cancel");
  accept.addEventListener("click", () => decide(article, entry, "accept", note, [accept, reject]));
  // Reject drops the worker's answers: the first click asks, the second confirms
  reject.addEventListener("click", () => {
    if (reject.dataset.confirm !== "yes") {
      reject.dataset.confirm = "yes";
      reject.textContent = "Confirm reject";
      cancel.hidden = false;
      reject.focus();
      return;
    }
    decide(article, entry, "reject", note, [accept, reject, cancel]);
  });
  cancel.addEventListener("click", () => {
    delete reject.dataset.confirm;
    reject.textContent = "Reject";
    cancel.hidden = true;
  });
  article.append(
    el("h2", { id: titleId }, `HIT ${entry.hit} · ${entry.worker}`),
    el("p", { class: "muted small" }, `Assignment ${entry.assignment}, submitted ${when}; `,
      `${wrong} of ${checks} check pair${checks === 1 ? "" : "s"} answered wrongly; ${entry.items.length} pairs.`),
    el("ol", { class: "review-items" }, ...entry.items.map(reviewItem)),
    el("div", { class: "decision" },
      el("label", { for: noteId }, "Note (optional)"), note, accept, reject, cancel));
  return article;
}

function setCount() {
  $("review-status").textContent = review.left
    ? `${review.left} HIT${review.left === 1 ? "" : "s"} waiting for review.`
    : "No HITs waiting for review.";
}

async function decide(article, entry, decision, note, buttons) {
  for (const b of buttons) b.disabled = true;
  const done = decision === "accept" ? "accepted" : "rejected";
  try {
    await mitl.call("POST", `/review/${entry.assignment}`, { decision: decision, note: note.value.trim() });
    mitl.showMessage(`HIT ${entry.hit} by ${entry.worker} ${done}.`, "info");
  } catch (err) {
    if (err.status !== 409) {
      for (const b of buttons) b.disabled = false;
      reviewError(err, "The decision was not saved");
      return;
    }
    mitl.showMessage(`HIT ${entry.hit} by ${entry.worker} was already decided: ${err.message}`, "info");
    article.remove();
    review.left -= 1;
    setCount();
    return;
  }
  // the HIT folds into a notice with Undo, which puts it back into the queue
  const undo = el("button", { type: "button", class: "undo secondary" }, "Undo");
  const notice = el("div", { class: "review-entry decided", "data-assignment": entry.assignment, role: "status" },
    `HIT ${entry.hit} by ${entry.worker} ${done}. `, undo);
  undo.addEventListener("click", async () => {
    undo.disabled = true;
    try {
      await mitl.call("POST", `/review/${entry.assignment}/undo`);
    } catch (err) {
      reviewError(err, "The decision cannot be undone");
      return;
    }
    const fresh = reviewEntry(entry);
    notice.replaceWith(fresh);
    review.left += 1;
    setCount();
    mitl.showMessage(`The decision on HIT ${entry.hit} by ${entry.worker} was undone; it waits for review again.`, "info");
  });
  article.replaceWith(notice);
  review.left -= 1;
  setCount();
}

function reviewError(err, context) {
  if (err.status === 401 || err.status === 403) {
    const what = err.status === 403 ? "enter a reviewer token." : "enter your reviewer token.";
    mitl.askToken(`${err.message} — ${what}`, ["review"]);
    return;
  }
  mitl.showMessage((context ? context + ": " : "") + err.message);
}

async function loadQueue(refused) {
  mitl.clearMessage();
  $("review-status").textContent = "Loading…";
  try {
    const data = await mitl.call("GET", "/review");
    mitl.showWho(data.me);
    review.labels = data.answers || {};
    review.left = data.queue.length;
    $("queue").replaceChildren(...data.queue.map(reviewEntry));
    $("review").hidden = false;
    setCount();
    loadDisagreements();
  } catch (err) {
    $("review").hidden = true;
    if (err.status === 401) {
      mitl.askToken(mitl.signInMessage(refused, "reviewer"), ["review"]);
      return;
    }
    reviewError(err, "The review queue cannot be loaded");
  }
}

function disagreement(pair) {
  return el("li", { class: "review-item", "data-pair": pair.pair },
    el("img", { src: pair.image, alt: `image ${pair.image_id}`, loading: "lazy" }),
    el("div", {},
      el("p", { class: "caption-text" }, pair.text),
      el("p", {}, el("strong", {}, `${pair.yes} yes, ${pair.no} no`)),
      el("ul", {}, ...pair.answers.map((a) => el("li", {},
        `${a.worker}: `, el("strong", { class: "answer" }, answerText(a.answer)),
        a.reason ? el("em", { class: "reason" }, ` — ${a.reason}`) : null)))));
}

async function loadDisagreements() {
  try {
    const data = await mitl.call("GET", "/review/disagreements");
    $("disagree-list").replaceChildren(...data.pairs.map(disagreement));
    $("disagree-status").textContent = data.pairs.length
      ? `${data.pairs.length} pair${data.pairs.length === 1 ? "" : "s"}`
      : "None yet: every pair judged so far has agreeing answers.";
    $("disagree").hidden = false;
  } catch (err) {
    $("disagree").hidden = true;
  }
}

function setupReview() {
  const refused = mitl.takeToken("review");
  mitl.setupTokenForm(() => loadQueue(null));
  $("refresh").addEventListener("click", () => loadQueue(null));
  loadQueue(refused);
}

document.addEventListener("DOMContentLoaded", () => { if (document.getElementById("review")) setupReview(); });
