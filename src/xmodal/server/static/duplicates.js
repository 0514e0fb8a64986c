// The near-duplicates page: groups from /api/duplicates, each group's photos side by side with
// size, date and resolution; the suggested keep marked. Read only: nothing is moved from here.
"use strict";

const GROUPS_PER_PAGE = 30;
let nextOffset = 0;

function baseName(id) { return id.split(/[\\/]/).pop(); }

function bytesText(n) {
  if (n === null || n === undefined) return "–";
  const units = ["B", "kB", "MB", "GB"];
  let i = 0;
  while (n >= 1000 && i < units.length - 1) { n /= 1000; i++; }
  return (i === 0 ? String(n) : n.toFixed(1)) + " " + units[i];
}

function dateText(m) {
  if (!m.date) return "date unknown";
  const text = m.date.replace("T", " ");
  return m.date_source === "mtime" ? text + " (file date)" : text;
}

function photoCard(m) {
  const name = el("span", { class: "name" }, baseName(m.id),
    m.keep ? el("span", { class: "badge", title: "suggested keep" }, "keep") : null,
    m.identical ? el("span", { class: "badge same", title: "the same bytes as the keep" }, "same file") : null);
  const resolution = m.width && m.height ? `${m.width} × ${m.height}` : "size unknown";
  const details = el("span", { class: "muted" }, `${resolution} · ${bytesText(m.bytes)}`);
  const date = el("span", { class: "muted date" }, dateText(m));
  const similarity = m.keep || typeof m.score !== "number" ? null
    : el("span", { class: "score" }, "similarity " + m.score.toFixed(2));
  return el("figure", { class: m.keep ? "dup-photo keep" : "dup-photo", "data-id": m.id, title: m.id },
    el("a", { href: m.preview, target: "_blank", rel: "noopener" },
      el("img", { src: m.thumbnail, alt: baseName(m.id), loading: "lazy" })),
    el("figcaption", {}, name, details, el("br"), date,
      similarity ? el("br") : null, similarity,
      m.why ? el("br") : null, m.why ? el("span", { class: "muted why" }, m.why) : null));
}

function groupCard(group, number) {
  const title = `Group ${number}: ${group.size} photos, ${bytesText(group.extra_bytes)} beside the keep`;
  return el("section", { class: "dup-group", "aria-label": title },
    el("h3", {}, title),
    el("div", { class: "dup-row" }, ...group.members.map(photoCard)));
}

async function loadGroups(offset) {
  const status = document.getElementById("dup-status");
  const list = document.getElementById("groups");
  const more = document.getElementById("more-groups");
  more.hidden = true;
  if (offset === 0) list.replaceChildren();
  status.textContent = "Looking for near-duplicates…";
  try {
    const page = await api("/api/duplicates?" + new URLSearchParams({ limit: GROUPS_PER_PAGE, offset: offset }));
    page.groups.forEach((g, i) => list.append(groupCard(g, offset + i + 1)));
    nextOffset = offset + page.groups.length;
    if (!page.total_groups) {
      status.textContent = "No near-duplicate photos in the index.";
    } else {
      status.textContent = `${page.total_groups} group${page.total_groups === 1 ? "" : "s"}: ` +
        `${page.total_extra} photo${page.total_extra === 1 ? "" : "s"} beside the suggested keeps ` +
        `(${bytesText(page.extra_bytes)}).`;
    }
    more.hidden = !page.has_more;
  } catch (err) {
    status.textContent = "Could not load the duplicates: " + err.message;
    status.classList.add("error");
  }
}

document.getElementById("more-groups").addEventListener("click", () => loadGroups(nextOffset));
loadGroups(0);
