"""Near-duplicate photos of a photo index: find groups, move the extra copies aside, undo a move.

A pair of indexed photos is a near-duplicate (a resized, cropped, re-encoded, brightened or
mirrored copy; a burst shot) when both files hold the same bytes (same SHA-1), or when

    cosine - hash_weight * hash_distance / 64  >=  threshold

where ``cosine`` is the similarity of their stored embeddings and ``hash_distance`` the number of
differing bits of their 64-bit perceptual hashes (DCT hash, ``imagehash.phash``): the smaller of
plain-to-plain and plain-to-mirrored, so a mirrored copy matches. Two photos whose hashes agree
need a cosine of ``threshold``; each differing bit raises that by ``hash_weight / 64``. The
embedding tolerates crops (which move the hash) and the hash tolerates resizing and heavy
re-encoding (which move the embedding) and tells apart distinct shots of one scene that the
embedding finds alike (measured in ``benchmarks/near_duplicates.py``).

Candidate pairs come from a blocked product of the unit vectors (only rows against later rows,
at most ``BLOCK_FLOATS`` similarities in memory at once), so a 100,000-photo collection never
holds an n x n matrix. Pairs are joined into groups by union-find (transitively). Perceptual
hashes are computed on demand, only for photos in a candidate pair, and cached in the table
``photo_hashes`` of the index database keyed by content SHA-1 (a moved or renamed file keeps
its hash). The defaults were chosen on the dev half of the constructed set of
``benchmarks/near_duplicates.py`` and measured once on its report half (see
``benchmarks/results/near_duplicates.json``).

Nothing is deleted. :func:`move_duplicates` moves the photos that are not the suggested keep
into a folder (their absolute path mirrored below it, so names never collide), logging each
move to a JSON Lines file *before* it happens; :func:`undo_moves` moves them back from that log,
also after a crash mid-way, and never overwrites a file.
"""

from __future__ import annotations

import datetime as dt
import errno
import hashlib
import json
import os
import shutil
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from xmodal.errors import XmodalError
from xmodal.index.scan import load_checked, read_bytes
from xmodal.index.store import Store

# Defaults chosen on the dev half of benchmarks/near_duplicates.py (default model): of the hash
# weights tried, 1.5 has the longest run of thresholds that reach precision 0.98 and recall 0.95
# on dev (0.51-0.64); 0.58 is its middle. The embeddings alone (weight 0) reach neither.
THRESHOLD = 0.58  # the cosine two photos with the same perceptual hash need
HASH_WEIGHT = 1.5  # how much each differing hash bit raises it (times 1/64)
MAX_NEIGHBOURS = 64  # candidates kept per photo (a guard against huge near-identical sets)
BLOCK_FLOATS = 1 << 24  # similarities computed at once (64 MB of float32)
HASH_BATCH = 64  # hashes written per transaction

LOG_KIND = "xmodal-duplicates-moves"


@dataclass
class Member:
    """One photo of a group. ``date``: when it was taken (``photo_meta.taken_at``) where
    known, else the file's modification time (``date_source = "mtime"``)."""

    file_id: int
    path: str
    bytes: int
    width: int | None
    height: int | None
    date: str | None
    date_source: str
    sha1: str | None
    similarity: float = 1.0  # cosine to the suggested keep
    identical: bool = False  # the same bytes as the suggested keep
    keep: bool = False

    @property
    def pixels(self) -> int:
        return (self.width or 0) * (self.height or 0)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class DuplicateGroup:
    """Photos that show the same picture; ``members[0]`` is the suggested keep."""

    members: list[Member]

    @property
    def keep(self) -> Member:
        return self.members[0]

    @property
    def extra(self) -> list[Member]:
        """The members that are not the suggested keep (what ``--move-to`` moves)."""
        return self.members[1:]

    @property
    def extra_bytes(self) -> int:
        return sum(m.bytes for m in self.extra)

    def to_dict(self) -> dict[str, Any]:
        return {"keep": self.keep.path, "size": len(self.members),
                "extra_bytes": self.extra_bytes, "members": [m.to_dict() for m in self.members]}


@dataclass(frozen=True)
class Thresholds:
    """The pair rule: ``cosine - hash_weight * hash_distance / 64 >= threshold``
    (``hash_weight`` 0: the embeddings alone decide)."""

    threshold: float = THRESHOLD
    hash_weight: float = HASH_WEIGHT

    def __post_init__(self) -> None:
        if not -1.0 <= self.threshold <= 1.0:
            raise XmodalError(f"the threshold is a cosine similarity in [-1, 1], not "
                              f"{self.threshold}")
        if not 0.0 <= self.hash_weight <= 4.0:
            raise XmodalError(f"the hash weight must be between 0 and 4, not {self.hash_weight}")

    @property
    def hash_needed_below(self) -> float:
        """Pairs with a cosine at least this pass whatever their hashes: not hashed."""
        return self.threshold + self.hash_weight


# ----- candidate pairs ----------------------------------------------------------------------------
def candidate_pairs(vecs: np.ndarray, threshold: float, max_neighbours: int = MAX_NEIGHBOURS,
                    progress: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rows i, rows j, cosine) of every pair i < j of unit vectors with cosine >= threshold,
    at most ``max_neighbours`` (the most similar) per row i. Blocked: memory stays near
    ``BLOCK_FLOATS`` similarities whatever the number of vectors."""
    from tqdm.auto import tqdm

    n = len(vecs)
    vecs = np.ascontiguousarray(vecs, dtype=np.float32)
    rows = int(min(max(BLOCK_FLOATS // max(n, 1), 16), 4096))
    out_i, out_j, out_s = [], [], []
    bar = tqdm(total=n, desc="comparing", unit="photo", disable=not progress or n < 2000)
    for start in range(0, n, rows):
        stop = min(start + rows, n)
        sims = vecs[start:stop] @ vecs[start:].T  # this block against itself and later rows
        local = np.arange(stop - start)
        sims[local, local] = -np.inf  # a photo is not its own pair (nor are earlier rows)
        sims[np.tril_indices(stop - start, -1)] = -np.inf
        ii, jj = np.nonzero(sims >= threshold)
        if len(ii):
            ss = sims[ii, jj]
            if max_neighbours and np.bincount(ii).max() > max_neighbours:
                order = np.lexsort((-ss, ii))  # by row, most similar first
                ii, jj, ss = ii[order], jj[order], ss[order]
                first = np.searchsorted(ii, ii)  # index of each row's first pair
                keep = (np.arange(len(ii)) - first) < max_neighbours
                ii, jj, ss = ii[keep], jj[keep], ss[keep]
            out_i.append(ii + start)
            out_j.append(jj + start)
            out_s.append(ss)
        bar.update(stop - start)
    bar.close()
    if not out_i:
        empty = np.zeros(0, np.int64)
        return empty, empty, np.zeros(0, np.float32)
    return (np.concatenate(out_i).astype(np.int64), np.concatenate(out_j).astype(np.int64),
            np.concatenate(out_s).astype(np.float32))


# ----- perceptual hashes --------------------------------------------------------------------------
def perceptual_hashes(image: Any) -> tuple[str, str]:
    """(pHash, pHash of the mirror image) of a PIL image, as 16 hex digits each."""
    import imagehash
    from PIL import ImageOps

    grey = image.convert("L")
    return str(imagehash.phash(grey)), str(imagehash.phash(ImageOps.mirror(grey)))


def hash_file(path: str) -> tuple[str | None, str | None, str | None, str | None]:
    """(content sha1, phash, mirrored phash, reason when it cannot be hashed) of a file."""
    data, reason = read_bytes(path)
    if data is None:
        return None, None, None, reason
    sha1 = hashlib.sha1(data).hexdigest()
    image, reason = load_checked(path, data)
    if image is None:
        return sha1, None, None, reason
    return sha1, *perceptual_hashes(image), None


def photo_hashes(store: Store, file_ids: Iterable[int], progress: bool = False,
                 workers: int | None = None) -> dict[int, tuple[int, int]]:
    """{file id: (pHash, mirrored pHash) as integers} of indexed photos; computed from the files
    where the cache lacks them and written back in transactions of ``HASH_BATCH``. Photos that
    cannot be read now are left out.

    The cache writes do not bump the store's generation (``Store.transaction`` would): the
    hashes are no input of the vectors or of the ANN index, which would be rebuilt for nothing.
    """
    from tqdm.auto import tqdm

    ids = sorted({int(i) for i in file_ids})
    if not ids:
        return {}
    info = _file_rows(store, ids, "id, path, sha1")
    cached: dict[str, tuple[str | None, str | None]] = {}
    sha1s = sorted({row[2] for row in info if row[2]})
    for chunk in _chunks(sha1s, 900):
        marks = ",".join("?" * len(chunk))
        for sha1, ph, pm in store.conn.execute(
                f"SELECT sha1, phash, phash_mirror FROM photo_hashes WHERE sha1 IN ({marks})",
                chunk):
            cached[sha1] = (ph, pm)
    out: dict[int, tuple[int, int]] = {}
    todo = []
    for fid, path, sha1 in info:
        hit = cached.get(sha1) if sha1 else None
        if hit is None:
            todo.append((fid, path, sha1))
        elif hit[0] and hit[1]:
            out[fid] = (int(hit[0], 16), int(hit[1], 16))
    if not todo:
        return out
    bar = tqdm(total=len(todo), desc="hashing", unit="photo", disable=not progress)
    workers = workers or min(4, os.cpu_count() or 1)
    with ThreadPoolExecutor(max_workers=workers) as pool:  # decoding releases the GIL
        for batch in _chunks(todo, HASH_BATCH):
            results = list(pool.map(lambda item: hash_file(item[1]), batch))
            now = time.time()
            with store.conn:  # one transaction per batch: an interruption keeps the rest
                for (fid, _, _), (sha1, ph, pm, reason) in zip(batch, results):
                    if sha1 is None:  # unreadable now (moved, deleted): nothing to cache
                        continue
                    store.conn.execute(
                        "INSERT OR REPLACE INTO photo_hashes(sha1, phash, phash_mirror, reason, "
                        "computed_at) VALUES(?, ?, ?, ?, ?)", (sha1, ph, pm, reason, now))
                    if ph and pm:
                        out[fid] = (int(ph, 16), int(pm, 16))
            bar.update(len(batch))
    bar.close()
    return out


def hash_distances(hashes: dict[int, tuple[int, int]], a: np.ndarray,
                   b: np.ndarray) -> np.ndarray:
    """Hamming distance of the pHashes of file ids ``a[k]`` and ``b[k]``: the smaller of
    plain-to-plain and plain-to-mirrored; 65 where either has no hash."""
    missing = (1 << 64) - 1
    plain_a = np.array([hashes.get(int(i), (missing, 0))[0] for i in a], dtype=np.uint64)
    plain_b = np.array([hashes.get(int(i), (missing, 0))[0] for i in b], dtype=np.uint64)
    mirror_b = np.array([hashes.get(int(i), (0, missing))[1] for i in b], dtype=np.uint64)
    d = np.minimum(np.bitwise_count(plain_a ^ plain_b), np.bitwise_count(plain_a ^ mirror_b))
    known = np.array([int(i) in hashes and int(j) in hashes for i, j in zip(a, b)], dtype=bool)
    return np.where(known, d.astype(np.int64), 65)


# ----- groups -------------------------------------------------------------------------------------
@dataclass
class PairEvidence:
    """Every candidate pair with its evidence (for benchmarks and threshold choice)."""

    file_ids: np.ndarray  # row -> file id
    i: np.ndarray
    j: np.ndarray
    cosine: np.ndarray
    hash_distance: np.ndarray
    same_bytes: list[tuple[int, int]] = field(default_factory=list)  # rows

    def confirmed(self, t: Thresholds) -> np.ndarray:
        """Which candidate pairs are duplicates under thresholds ``t``."""
        bits = np.minimum(self.hash_distance, 64)  # unknown (65): as different as can be
        return self.cosine - t.hash_weight * bits / 64 >= t.threshold


def _index_vectors(index: Any, under: str | os.PathLike | None):
    """(store, file ids, unit vectors) of an index's current model, without loading it."""
    store: Store = index if isinstance(index, Store) else index.store
    model = store.get_meta("model")
    dim = int(store.get_meta("dim", "0") or 0)
    if not model or not dim:
        raise XmodalError(f"the photo index {store.path} holds no indexed photos: run "
                          f"'xmodal index FOLDER --db {store.path}' first")
    ids, vecs = store.vectors(model, dim)
    if under is not None:
        inside = store.ids_under(os.path.abspath(Path(under).expanduser()))
        keep = np.isin(ids, inside)
        ids, vecs = ids[keep], vecs[keep]
    if len(vecs):
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        vecs = vecs / np.maximum(norms, 1e-12)
    return store, ids, vecs


def pair_evidence(index: Any, threshold: float = THRESHOLD, under: str | os.PathLike | None = None,
                  max_neighbours: int = MAX_NEIGHBOURS, progress: bool = False,
                  hash_below: float | None = None) -> PairEvidence:
    """Candidate pairs (cosine >= ``threshold``) of a PhotoIndex (or Store) with their cosine and
    perceptual-hash distance (65: not computed), plus the pairs of byte-identical files. Hashes
    are computed only for pairs with cosine < ``hash_below`` (None: every candidate pair)."""
    store, ids, vecs = _index_vectors(index, under)
    if len(ids) == 0:
        raise XmodalError(f"the photo index {store.path} holds no indexed photos"
                          + (f" under {under}" if under is not None else "")
                          + f": run 'xmodal index FOLDER --db {store.path}' first")
    i, j, cos = candidate_pairs(vecs, threshold, max_neighbours, progress)
    need = np.ones(len(i), bool) if hash_below is None else cos < hash_below
    hashes = photo_hashes(store, np.concatenate([ids[i[need]], ids[j[need]]]), progress)
    dist = np.full(len(i), 65, dtype=np.int64)
    if need.any():
        dist[need] = hash_distances(hashes, ids[i[need]], ids[j[need]])
    row_of = {int(f): r for r, f in enumerate(ids)}
    same = []
    for group in _same_sha1(store, ids):
        rows = [row_of[f] for f in group]
        same += [(rows[0], r) for r in rows[1:]]
    return PairEvidence(ids, i, j, cos, dist, same)


def find_duplicates(index: Any, threshold: float = THRESHOLD, hash_weight: float = HASH_WEIGHT,
                    under: str | os.PathLike | None = None,
                    max_neighbours: int = MAX_NEIGHBOURS,
                    progress: bool = False) -> list[DuplicateGroup]:
    """Groups of near-duplicate photos in a PhotoIndex (or its Store), largest groups first.

    Each group is sorted with the suggested keep first: the largest resolution, then the
    oldest date, then the largest file, then the path. Files that no longer exist at their
    indexed path (moved aside by :func:`move_duplicates`, deleted) are left out."""
    t = Thresholds(threshold, hash_weight)
    ev = pair_evidence(index, t.threshold, under, max_neighbours, progress,
                       hash_below=t.hash_needed_below)
    return groups_from_evidence(index, ev, t)


def groups_from_evidence(index: Any, ev: PairEvidence, t: Thresholds) -> list[DuplicateGroup]:
    """The groups that thresholds ``t`` make of the evidence (connected components)."""
    store: Store = index if isinstance(index, Store) else index.store
    ok = ev.confirmed(t)
    components = connected_components(
        len(ev.file_ids), list(zip(ev.i[ok].tolist(), ev.j[ok].tolist())) + list(ev.same_bytes))
    rows = sorted(r for members in components for r in members)
    if not rows:
        return []
    details = _member_details(store, [int(ev.file_ids[r]) for r in rows])
    vecs = _vectors_of(store, [int(ev.file_ids[r]) for r in rows])
    groups = []
    for members in components:
        ids = [int(ev.file_ids[r]) for r in members]
        found = [details[f] for f in ids if f in details and os.path.exists(details[f].path)]
        if len(found) < 2:
            continue
        found.sort(key=_keep_order)
        keep = found[0]
        keep.keep = True
        for m in found:
            m.similarity = round(float(vecs[keep.file_id] @ vecs[m.file_id]), 4) \
                if m.file_id in vecs and keep.file_id in vecs else 1.0
            m.identical = m is not keep and m.sha1 is not None and m.sha1 == keep.sha1
        groups.append(DuplicateGroup(found))
    groups.sort(key=lambda g: (-len(g.members), g.keep.path))
    return groups


def connected_components(n: int, pairs: Iterable[tuple[int, int]]) -> list[list[int]]:
    """The groups (of two or more, sorted) that ``pairs`` of items 0..n-1 join (union-find)."""
    parent = list(range(n))

    def root(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    touched = set()
    for a, b in pairs:
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
        touched.update((a, b))
    groups: dict[int, list[int]] = {}
    for r in sorted(touched):
        groups.setdefault(root(r), []).append(r)
    return [g for g in groups.values() if len(g) > 1]


def _keep_order(m: Member) -> tuple:
    return (-m.pixels, m.date or "9999", -m.bytes, m.path)


def _chunks(items: list, n: int) -> Iterator[list]:
    for k in range(0, len(items), n):
        yield items[k:k + n]


def _file_rows(store: Store, ids: list[int], columns: str) -> list[tuple]:
    rows: list[tuple] = []
    for chunk in _chunks(ids, 900):
        marks = ",".join("?" * len(chunk))
        rows += store.conn.execute(
            f"SELECT {columns} FROM files WHERE id IN ({marks}) ORDER BY id", chunk).fetchall()
    return rows


def _same_sha1(store: Store, ids: np.ndarray) -> list[list[int]]:
    """Groups (of two or more) of the given file ids that hold the same bytes."""
    wanted = {int(i) for i in ids}
    by_sha: dict[str, list[int]] = {}
    for fid, sha1 in store.conn.execute(
            "SELECT id, sha1 FROM files WHERE sha1 IN (SELECT sha1 FROM files WHERE sha1 IS NOT "
            "NULL GROUP BY sha1 HAVING COUNT(*) > 1) ORDER BY id"):
        if fid in wanted:
            by_sha.setdefault(sha1, []).append(fid)
    return [g for g in by_sha.values() if len(g) > 1]


def _member_details(store: Store, ids: list[int]) -> dict[int, Member]:
    """Path, size, resolution and date of each file id."""
    out: dict[int, Member] = {}
    for chunk in _chunks(ids, 900):
        marks = ",".join("?" * len(chunk))
        for fid, path, size, mtime_ns, sha1, w, h, taken_at, source in store.conn.execute(
                f"SELECT f.id, f.path, f.size, f.mtime_ns, f.sha1, f.width, f.height, "
                f"m.taken_at, m.date_source FROM files f "
                f"LEFT JOIN photo_meta m ON m.file_id = f.id WHERE f.id IN ({marks})", chunk):
            if taken_at:  # photo_meta says where its date came from (EXIF, or the mtime)
                date, source = str(taken_at), str(source or "taken")
            else:
                date = dt.datetime.fromtimestamp(mtime_ns / 1e9).isoformat(timespec="seconds")
                source = "mtime"
            out[fid] = Member(fid, path, size, w, h, date, source, sha1)
    return out


def _vectors_of(store: Store, ids: list[int]) -> dict[int, np.ndarray]:
    model = store.get_meta("model")
    vecs = store.vectors_of(ids, model) if model else {}
    return {fid: v / max(float(np.linalg.norm(v)), 1e-12) for fid, v in vecs.items()}


# ----- moving aside and back ----------------------------------------------------------------------
@dataclass
class MoveReport:
    log: str
    dest: str
    moved: list[dict[str, str]] = field(default_factory=list)  # {"from", "to", "sha1"}
    skipped: list[dict[str, str]] = field(default_factory=list)  # {"path", "reason"}

    @property
    def moved_bytes(self) -> int:
        return sum(os.path.getsize(m["to"]) for m in self.moved if os.path.exists(m["to"]))

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "moved_bytes": self.moved_bytes}


@dataclass
class UndoReport:
    log: str
    restored: list[dict[str, str]] = field(default_factory=list)  # {"from", "to"}: moved back
    skipped: list[dict[str, str]] = field(default_factory=list)  # {"path", "reason"}

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def destination(path: str | os.PathLike, dest_dir: str | os.PathLike) -> Path:
    """Where ``path`` goes inside ``dest_dir``: its whole absolute path below it
    (``/home/me/a.jpg`` -> ``DEST/home/me/a.jpg``), so two moved files never collide."""
    p = Path(os.path.abspath(path))
    return Path(os.path.abspath(dest_dir)) / p.relative_to(p.anchor)


def default_log_path(dest_dir: str | os.PathLike) -> Path:
    """``DEST/.xmodal-moves-<UTC time>.jsonl`` (hidden, so indexing DEST skips it)."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    return Path(os.path.abspath(dest_dir)) / f".xmodal-moves-{stamp}.jsonl"


def file_sha1(path: str | os.PathLike) -> str:
    h = hashlib.sha1()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def move_duplicates(groups: Iterable[DuplicateGroup], dest_dir: str | os.PathLike,
                    log_path: str | os.PathLike | None = None, progress: bool = False,
                    dry_run: bool = False) -> MoveReport:
    """Move every member of ``groups`` that is not the suggested keep into ``dest_dir``.

    Each move is appended to the JSON Lines log ``log_path`` (default
    :func:`default_log_path`) and flushed to disk before the file moves, so
    :func:`undo_moves` can put everything back even after a crash mid-way. A file whose bytes
    changed since it was indexed, or whose destination exists, is skipped with the reason;
    nothing is ever overwritten or deleted."""
    from tqdm.auto import tqdm

    dest = Path(os.path.abspath(Path(dest_dir).expanduser()))
    log = Path(os.path.abspath(Path(log_path).expanduser())) if log_path else \
        default_log_path(dest)
    if dest.exists() and not dest.is_dir():
        raise XmodalError(f"--move-to {dest} is a file, not a folder")
    todo = [m for g in groups for m in g.extra]
    report = MoveReport(str(log), str(dest))
    if dry_run:
        report.moved = [{"from": m.path, "to": str(destination(m.path, dest)),
                         "sha1": m.sha1 or ""} for m in todo]
        return report
    if not todo:
        return report
    try:
        dest.mkdir(parents=True, exist_ok=True)
        log.parent.mkdir(parents=True, exist_ok=True)
        handle = open(log, "a", encoding="utf-8")
    except OSError as exc:
        raise XmodalError(f"cannot write the move log {log}: {exc.strerror}") from exc
    with handle:
        _log_line(handle, {"kind": LOG_KIND, "version": 1, "dest": str(dest),
                           "started": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")})
        for m in tqdm(todo, desc="moving", unit="file", disable=not progress):
            src = Path(m.path)
            to = destination(src, dest)
            reason = None
            if not src.is_file():
                reason = "missing"
            elif to.exists():
                reason = f"{to} exists already"
            elif dest == src or dest in src.parents:
                reason = "already inside the destination folder"
            if reason is None:
                sha1 = file_sha1(src)
                if m.sha1 and sha1 != m.sha1:
                    reason = "changed since it was indexed: run 'xmodal index' and look again"
            if reason is not None:
                report.skipped.append({"path": str(src), "reason": reason})
                continue
            entry = {"from": str(src), "to": str(to), "sha1": sha1}
            _log_line(handle, entry)  # on disk before the move
            try:
                move_file(src, to)
            except OSError as exc:
                report.skipped.append({"path": str(src), "reason": f"cannot move: {exc}"})
                continue
            report.moved.append(entry)
    return report


def read_move_log(log_path: str | os.PathLike) -> list[dict[str, str]]:
    """The moves recorded in a log, in order; a last line cut short by a crash is ignored."""
    log = Path(log_path).expanduser()
    if not log.is_file():
        raise XmodalError(f"no move log at {log}: give the file that 'xmodal duplicates "
                          "--move-to' wrote (it prints its path)")
    moves, header = [], False
    lines = log.read_text(encoding="utf-8").splitlines()
    for n, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            if n == len(lines) - 1:  # written half when the process died: the move never began
                continue
            raise XmodalError(f"{log} line {n + 1} is not JSON: is it a move log of 'xmodal "
                              "duplicates'?") from None
        if isinstance(entry, dict) and entry.get("kind") == LOG_KIND:
            header = True
        elif isinstance(entry, dict) and {"from", "to"} <= entry.keys():
            moves.append(entry)
    if not header:
        raise XmodalError(f"{log} is not a move log of 'xmodal duplicates'")
    return moves


def undo_moves(log_path: str | os.PathLike, progress: bool = False) -> UndoReport:
    """Move the files recorded in a move log back where they were, newest first. A file whose
    original place is taken again, that is missing, or whose bytes changed is left where it is
    and reported; nothing is overwritten."""
    from tqdm.auto import tqdm

    moves = read_move_log(log_path)
    report = UndoReport(str(Path(log_path).expanduser()))
    for entry in tqdm(list(reversed(moves)), desc="restoring", unit="file",
                      disable=not progress):
        src, to = Path(entry["from"]), Path(entry["to"])
        reason = None
        if src.exists() and not to.exists():
            reason = "in place already (not moved, or restored before)"
        elif src.exists():
            reason = f"both {src} and {to} exist: left as they are"
        elif not to.is_file():
            reason = f"missing from {to}"
        elif entry.get("sha1") and file_sha1(to) != entry["sha1"]:
            reason = f"{to} changed since it was moved: left there"
        if reason is not None:
            report.skipped.append({"path": str(src), "reason": reason})
            continue
        try:
            move_file(to, src)
        except OSError as exc:
            report.skipped.append({"path": str(src), "reason": f"cannot move back: {exc}"})
            continue
        report.restored.append({"from": str(to), "to": str(src)})
    return report


def _log_line(handle, entry: dict[str, Any]) -> None:
    handle.write(json.dumps(entry) + "\n")
    handle.flush()
    os.fsync(handle.fileno())


def move_file(src: Path, to: Path) -> None:
    """Move one file, never over an existing one (also across file systems)."""
    to.parent.mkdir(parents=True, exist_ok=True)
    if to.exists():
        raise FileExistsError(errno.EEXIST, "destination exists", str(to))
    try:
        os.rename(src, to)
        return
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
    # another file system: copy under a temporary name, then rename, then remove the source
    part = to.with_name(to.name + ".xmodal-part")
    shutil.copy2(src, part)
    with open(part, "rb") as f:
        os.fsync(f.fileno())
    if to.exists():
        raise FileExistsError(errno.EEXIST, "destination exists", str(to))
    os.rename(part, to)
    os.unlink(src)
