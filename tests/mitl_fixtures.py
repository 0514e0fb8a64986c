"""A small machine-in-the-loop campaign over generated photos: folder protocol + score files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

N_PHOTOS, CAPS_PER_PHOTO = 24, 2


def make_folder(root: Path) -> tuple[Path, Path]:
    """``root/photos`` with N_PHOTOS JPEGs and ``root/caps.csv`` with 2 captions each."""
    photos = root / "photos"
    photos.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    lines = ["image,caption"]
    for i in range(N_PHOTOS):
        colour = tuple(int(c) for c in rng.integers(0, 256, 3))
        Image.new("RGB", (40, 30), colour).save(photos / f"p{i:02d}.jpg")
        lines += [f"p{i:02d}.jpg,photo number {i} view {j}" for j in range(CAPS_PER_PHOTO)]
    caps = root / "caps.csv"
    caps.write_text("\n".join(lines) + "\n")
    return photos, caps


def folder_protocol(root: Path):
    from xmodal.eval.protocols import get_protocol

    photos, caps = make_folder(root)
    return get_protocol("folder", photos, captions=caps)


def score_files(root: Path, n: int = 3, seed: int = 0) -> list[Path]:
    """``n`` seeded random score matrices (images x texts) saved as .npy."""
    rng = np.random.default_rng(seed)
    out = []
    for k in range(n):
        p = root / f"annotator{k}.npy"
        np.save(p, rng.random((N_PHOTOS, N_PHOTOS * CAPS_PER_PHOTO)))
        out.append(p)
    return out


def build_campaign(root: Path, size: int = 4, replication: int = 2, n_queries: int = 8,
                   judge_originals: bool = False, qualify: int = 0, hits: bool = True):
    """A campaign with HITs ready: (Campaign, protocol); ``qualify`` N makes an entry test of N
    check pairs first (as ``hits --qualify N`` does), ``hits=False`` leaves out the HITs."""
    from xmodal.mitl.hits import make_hits
    from xmodal.mitl.propose import load_annotator, propose
    from xmodal.mitl.store import Campaign

    protocol = folder_protocol(root)
    annotators = [load_annotator(str(p), protocol) for p in score_files(root)]
    campaign = Campaign(root / "campaign.db", create=True)
    campaign.set_meta_now("protocol", {"name": "folder", "data": str(root / "photos"),
                                       "captions": str(root / "caps.csv")})
    propose(campaign, protocol, annotators, n_queries=n_queries, k=5,
            judge_originals=judge_originals)
    if qualify:
        from xmodal.mitl.hits import make_qualification

        make_qualification(campaign, protocol, qualify, 0.8)
    if hits:
        make_hits(campaign, protocol, size=size, replication=replication)
    return campaign, protocol


def gold_answers(campaign, payload, wrong: bool = False) -> dict[int, tuple[int, None]]:
    """Answers for a HIT (an assignment payload): golden pairs right (or wrong), the pairs to
    judge "partially yes"."""
    roles = dict(campaign.q("SELECT pair_id, role FROM hit_items WHERE hit_id = ?",
                            (payload["hit"],)))
    out = {}
    for it in payload["items"]:
        role = roles[it["pair_id"]]
        if role == "gold_pos":
            out[it["pair_id"]] = (4 if wrong else 1, None)
        elif role == "gold_neg":
            out[it["pair_id"]] = (1 if wrong else 4, None)
        else:
            out[it["pair_id"]] = (2, None)
    return out


def judged_campaign(root: Path, before_hits: Path | None = None) -> Path:
    """``root/campaign.db``: proposed by three random annotators, HITs of 4 pairs made (a copy
    of the database from before them saved to ``before_hits``), worker ``alice`` registered and
    every HIT judged by two workers, ``w1`` and ``w2`` (golden pairs right: all accepted)."""
    import shutil

    from xmodal.mitl.hits import make_hits
    from xmodal.mitl.propose import load_annotator, propose
    from xmodal.mitl.store import Campaign

    protocol = folder_protocol(root)
    annotators = [load_annotator(str(p), protocol) for p in score_files(root)]
    db = root / "campaign.db"
    with Campaign(db, create=True) as c:
        c.set_meta_now("protocol", {"name": "folder", "data": str(root / "photos"),
                                    "captions": str(root / "caps.csv")})
        propose(c, protocol, annotators, n_queries=8, k=5)
    if before_hits is not None:
        shutil.copy(db, before_hits)
    with Campaign(db) as c:
        make_hits(c, protocol, size=4, replication=2)
        c.add_worker("alice")
        for name in ("w1", "w2"):
            worker = c.worker_for(c.add_worker(name))
            while (a := c.next_assignment(worker)) is not None:
                c.submit(a, worker, gold_answers(c, c.assignment(a, worker)))
    return db


def judging_app(root: Path, campaign: Path):
    """The judging server's app over ``campaign`` (no photo index), files under ``root``."""
    from xmodal.server import create_app

    return create_app(root / "none.db", reports_dir=root, thumbnail_dir=root / "t",
                      campaign=campaign)
