// Reviewing a machine-in-the-loop campaign (/review): the HITs whose check pairs were answered
// wrongly, each pair with the worker's answer and reason; accept or reject each HIT.
// Uses the token and API helpers of judge.js (loaded first).
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
    el("img", { src: mitl.imageUrl(item.pair_id), alt: `image ${item.image_id}`, loading: "lazy" }),
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
  accept.addEventListener("click", () => decide(article, entry, "accept", note, [accept, reject]));
  reject.addEventListener("click", () => decide(article, entry, "reject", note, [accept, reject]));
  article.append(
    el("h2", { id: titleId }, `HIT ${entry.hit} · ${entry.worker}`),
    el("p", { class: "muted small" }, `Assignment ${entry.assignment}, submitted ${when}; `,
      `${wrong} of ${checks} check pair${checks === 1 ? "" : "s"} answered wrongly; ${entry.items.length} pairs.`),
    el("ol", { class: "review-items" }, ...entry.items.map(reviewItem)),
    el("div", { class: "decision" },
      el("label", { for: noteId }, "Note (optional)"), note, accept, reject));
  return article;
}

function setCount() {
  $("review-status").textContent = review.left
    ? `${review.left} HIT${review.left === 1 ? "" : "s"} waiting for review.`
    : "No HITs waiting for review.";
}

async function decide(article, entry, decision, note, buttons) {
  for (const b of buttons) b.disabled = true;
  try {
    await mitl.call("POST", `/review/${entry.assignment}`, { decision: decision, note: note.value.trim() });
    mitl.showMessage(`HIT ${entry.hit} by ${entry.worker} ${decision === "accept" ? "accepted" : "rejected"}.`, "info");
  } catch (err) {
    if (err.status !== 409) {
      for (const b of buttons) b.disabled = false;
      reviewError(err, "The decision was not saved");
      return;
    }
    mitl.showMessage(`HIT ${entry.hit} by ${entry.worker} was already decided: ${err.message}`, "info");
  }
  article.remove();
  review.left -= 1;
  setCount();
}

function reviewError(err, context) {
  if (err.status === 401 || err.status === 403) {
    mitl.remember("");
    const what = err.status === 403 ? "enter a reviewer token." : "enter your reviewer token.";
    mitl.askToken(`${err.message} — ${what}`, ["review"]);
    return;
  }
  mitl.showMessage((context ? context + ": " : "") + err.message);
}

async function loadQueue() {
  mitl.clearMessage();
  if (!mitl.token) {
    mitl.askToken("A reviewer token is needed: open the link you were given, or enter the token below.", ["review"]);
    return;
  }
  $("review-status").textContent = "Loading…";
  try {
    mitl.showWho(await mitl.call("GET", "/me"));
    const data = await mitl.call("GET", "/review");
    review.labels = data.answers || {};
    review.left = data.queue.length;
    $("queue").replaceChildren(...data.queue.map(reviewEntry));
    $("review").hidden = false;
    setCount();
  } catch (err) {
    $("review").hidden = true;
    reviewError(err, "The review queue cannot be loaded");
  }
}

function setupReview() {
  mitl.takeToken("review");
  mitl.setupTokenForm(loadQueue);
  $("refresh").addEventListener("click", loadQueue);
  loadQueue();
}

document.addEventListener("DOMContentLoaded", () => { if (document.getElementById("review")) setupReview(); });
