"""What a worker may see of a HIT: opaque item ids, a per-assignment order, per-worker numbers,
and sessions that stand for a worker token.

Item ids are an HMAC of (assignment, pair) under the campaign's own secret (``meta`` key
``server_secret``, made on first use), so the same pair has another id in every assignment and
neither ids nor order say which pair is a known positive or negative; dataset ids never leave
the server. The order within a HIT is the order of those ids: deterministic for one assignment
(a reload shows the same order), different between workers.

A session cookie is ``WORKER_ID.MAC`` where MAC is an HMAC of the worker id, the page and the
hash of the worker's current token: it carries no token, and a revoked or reissued token ends
every session made from it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import secrets
import time
import weakref
from typing import Any

from xmodal.errors import XmodalError
from xmodal.mitl.store import (LIVE, REVOKED, Campaign, CampaignConflict, Worker,
                                entry_test, qualification_gate)

SECRET_KEY = "server_secret"
ID_CHARS = 16
_SECRETS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # campaign -> key, read once


def secret(campaign: Campaign) -> bytes:
    """The campaign's HMAC key, created on first use (kept in ``meta``)."""
    cached = _SECRETS.get(campaign)
    if cached is not None:
        return cached
    value = campaign.meta(SECRET_KEY)
    if value is None:
        try:
            with campaign.write() as c:
                c.execute("INSERT OR IGNORE INTO meta VALUES(?, json(?))",
                          (SECRET_KEY, f'"{secrets.token_hex(32)}"'))
            value = campaign.meta(SECRET_KEY)
        except Exception:  # noqa: BLE001 - a read-only campaign: ids last as long as the process
            value = secrets.token_hex(32)
    _SECRETS[campaign] = key = bytes.fromhex(value)
    return key


def item_id(campaign: Campaign, assignment: int, pair: int) -> str:
    mac = hmac.new(secret(campaign), f"item:{assignment}:{pair}".encode(), hashlib.sha256)
    return mac.hexdigest()[:ID_CHARS]


def hit_pairs(campaign: Campaign, assignment: int) -> list[int]:
    return [p for (p,) in campaign.q(
        "SELECT hi.pair_id FROM hit_items hi JOIN assignments a ON a.hit_id = hi.hit_id "
        "WHERE a.id = ?", (assignment,))]


def id_map(campaign: Campaign, assignment: int) -> dict[str, int]:
    """Opaque item id -> pair id for one assignment, in the order the worker sees."""
    ids = {item_id(campaign, assignment, p): p for p in hit_pairs(campaign, assignment)}
    return dict(sorted(ids.items()))


def pair_of(campaign: Campaign, assignment: int, item: str) -> int | None:
    return id_map(campaign, assignment).get(item)


def hit_number(campaign: Campaign, worker: Worker, assignment: int) -> dict[str, Any]:
    """``number``: this HIT's place among the worker's own HITs (1 for a newcomer's first),
    ``left``: HITs the worker could still take after it, ``of``: number + left. The entry test
    (``hits --qualify``) is no HIT here: while it is open ``entry_test`` holds its size and pass
    mark (and ``number`` is 0); a worker who failed it has ``entry_test_failed`` and no HIT left.
    """
    q = entry_test(campaign.conn)
    gate = qualification_gate(campaign.conn, worker.id) if q else None
    number = campaign.q(
        "SELECT COUNT(*) FROM assignments a JOIN hits h ON h.id = a.hit_id WHERE "
        "a.worker_id = ? AND a.id <= ? AND h.replication > 0 AND "
        "(a.status != 'expired' OR a.submitted_at IS NOT NULL)", (worker.id, assignment))[0][0]
    live = ",".join(f"'{s}'" for s in LIVE)
    left = campaign.q(
        f"SELECT COUNT(*) FROM (SELECT h.id FROM hits h LEFT JOIN assignments a ON "
        f"a.hit_id = h.id AND a.status IN ({live}) WHERE h.replication > 0 AND h.id NOT IN "
        f"(SELECT hit_id FROM assignments WHERE worker_id = ?) GROUP BY h.id "
        f"HAVING COUNT(a.id) < h.replication)", (worker.id,))[0][0]
    out: dict[str, Any] = {}
    if gate == -1:  # failed the entry test: nothing is left for them, and they are told so
        return {"number": 0, "of": 0, "left": 0, "entry_test_failed": True}
    on_entry = q is not None and gate is not None and campaign.q(
        "SELECT 1 FROM assignments WHERE id = ? AND hit_id = ?", (assignment, q["hit"]))
    if gate is not None or on_entry:
        out["entry_test"] = {"pairs": q["n"], "pass_mark": q["min_accuracy"],
                             "need": math.ceil(q["min_accuracy"] * q["n"] - 1e-9)}
    if on_entry or (gate is not None and assignment == 0):
        return {"number": 0, "of": left, "left": left, **out}
    number = max(number, 1)
    return {"number": number, "of": number + left, "left": left, **out}


# ----- sessions ----------------------------------------------------------------------------
def _session_mac(campaign: Campaign, worker_id: int, token_sha256: str, page: str) -> str:
    msg = f"session:{page}:{worker_id}:{token_sha256}".encode()
    return hmac.new(secret(campaign), msg, hashlib.sha256).hexdigest()


def make_session(campaign: Campaign, worker: Worker, page: str) -> str:
    (sha,), = campaign.q("SELECT token_sha256 FROM workers WHERE id = ?", (worker.id,))
    return f"{worker.id}.{_session_mac(campaign, worker.id, sha, page)}"


def session_worker(campaign: Campaign, value: str | None, page: str) -> Worker | None:
    if not value or "." not in value:
        return None
    wid, _, mac = value.partition(".")
    if not wid.isdigit():
        return None
    row = campaign.q("SELECT id, name, role, token_sha256 FROM workers WHERE id = ?", (int(wid),))
    if not row or row[0][3].startswith(REVOKED):  # a revoked worker has no session
        return None
    expected = _session_mac(campaign, row[0][0], row[0][3], page)
    return Worker(*row[0][:3]) if hmac.compare_digest(mac, expected) else None


# ----- one-time sign-in links --------------------------------------------------------------
SIGNIN_PREFIX = "signin:"
SIGNIN_TTL_S = 14 * 24 * 3600


def make_signin_code(campaign: Campaign, name: str, page: str | None = None) -> tuple[str, str]:
    """A one-time sign-in code for worker ``name`` and the page it opens (``judge``, or
    ``review`` for a reviewer): ``/PAGE?code=CODE`` signs a browser in once and is then burned,
    so the address a browser keeps in its history opens nothing. Only the code's hash is kept
    (``meta``); it lasts 14 days. Returns (code, page)."""
    row = campaign.q("SELECT id, role FROM workers WHERE name = ?", (name,))
    if not row:
        known = ", ".join(w["name"] for w in campaign.workers()) or "none"
        raise XmodalError(f"no worker named {name!r} in {campaign.path} (workers: {known})")
    wid, role = row[0]
    page = page or ("review" if role == "reviewer" else "judge")
    if page not in ("judge", "review"):
        raise XmodalError(f"page must be 'judge' or 'review', not {page!r}")
    code = secrets.token_urlsafe(18)
    digest = hashlib.sha256(code.encode()).hexdigest()
    with campaign.write() as c:
        c.execute("DELETE FROM meta WHERE key LIKE ? AND json_extract(value, '$.until') < ?",
                  (SIGNIN_PREFIX + "%", time.time()))
        campaign.set_meta(c, SIGNIN_PREFIX + digest, {"worker": wid, "page": page,
                                                      "until": time.time() + SIGNIN_TTL_S})
    return code, page


def drop_signin_codes(campaign: Campaign, name: str) -> int:
    """Burn every unused sign-in code of worker ``name`` (a reissued token: its old links go
    with it); returns how many."""
    with campaign.write() as c:
        return c.execute("DELETE FROM meta WHERE key LIKE ? AND json_extract(value, '$.worker') "
                         "= (SELECT id FROM workers WHERE name = ?)",
                         (SIGNIN_PREFIX + "%", name)).rowcount


def redeem_signin_code(campaign: Campaign, code: str, page: str) -> Worker | None:
    """The worker of a one-time sign-in code for ``page``, burning it (one transaction: two
    browsers opening the same link, only one signs in); None for an unknown, used or expired
    code."""
    digest = hashlib.sha256(code.strip().encode()).hexdigest()
    with campaign.write() as c:
        row = c.execute("SELECT value FROM meta WHERE key = ?",
                        (SIGNIN_PREFIX + digest,)).fetchone()
        if row is None:
            return None
        c.execute("DELETE FROM meta WHERE key = ?", (SIGNIN_PREFIX + digest,))
        info = json.loads(row[0])
        if info["page"] != page or info["until"] < time.time():
            return None
        w = c.execute("SELECT id, name, role, token_sha256 FROM workers WHERE id = ?",
                      (info["worker"],)).fetchone()
    if w is None or w[3].startswith(REVOKED):
        return None
    return Worker(*w[:3])


# ----- review ------------------------------------------------------------------------------
def undo_decision(campaign: Campaign, assignment: int, reviewer: Worker) -> str:
    """Put a HIT this reviewer accepted or rejected back into the review queue. A rejected HIT
    whose freed slot was meanwhile given to another worker cannot come back."""
    with campaign.write() as c:
        row = c.execute("SELECT r.reviewer_id, a.status, a.hit_id FROM reviews r JOIN "
                        "assignments a ON a.id = r.assignment_id WHERE r.assignment_id = ?",
                        (assignment,)).fetchone()
        if row is None or row[1] not in ("accepted", "rejected"):
            raise CampaignConflict(f"assignment {assignment} has no decision to undo")
        if row[0] != reviewer.id:
            raise XmodalError("only the reviewer who decided may undo the decision")
        if row[1] == "rejected":
            live = ",".join(f"'{s}'" for s in LIVE)
            taken, replication = c.execute(
                f"SELECT (SELECT COUNT(*) FROM assignments WHERE hit_id = ? AND status IN "
                f"({live})), replication FROM hits WHERE id = ?", (row[2], row[2])).fetchone()
            if taken >= replication:
                raise CampaignConflict("the rejected HIT's slot was given to another worker "
                                       "meanwhile; the rejection stays")
        c.execute("UPDATE assignments SET status = 'review' WHERE id = ?", (assignment,))
        c.execute("DELETE FROM reviews WHERE assignment_id = ?", (assignment,))
        return "review"


def public_view(campaign: Campaign, worker: Worker, raw: dict[str, Any],
                image_url: str) -> dict[str, Any]:
    """A store assignment payload as the worker sees it: opaque ids in per-assignment order,
    the same fields for every item, no pair / dataset ids, no HIT id, the draft re-keyed."""
    aid = raw["assignment"]
    ids = id_map(campaign, aid)
    back = {p: i for i, p in ids.items()}
    texts = {it["pair_id"]: it["text"] for it in raw["items"]}
    draft = raw.get("draft") or {}
    answers = {}
    for key, value in (draft.get("answers") or {}).items():
        try:
            pid = int(key)
        except (TypeError, ValueError):
            continue
        if pid in back:
            answers[back[pid]] = value
    # waiting for review and accepted read the same: no verdict on the check pairs
    status = "submitted" if raw["status"] in ("review", "accepted") else raw["status"]
    out = {"assignment": aid, "status": status,
           "items": [{"id": i, "text": texts[p], "image": image_url.format(aid=aid, item=i)}
                     for i, p in ids.items()],
           "draft": {"answers": answers, "position": draft.get("position", 0)},
           "version": raw.get("version", 0)}
    out.update(hit_number(campaign, worker, aid))
    return out
