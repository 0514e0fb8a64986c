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
import re
import shutil
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from xmodal.errors import XmodalError
from xmodal.index.metadata import Origin, read_metadata, read_origin
from xmodal.index.photo_index import writer_lock
from xmodal.index.scan import load_checked, read_bytes
from xmodal.index.store import Store

# Defaults chosen on the dev half of benchmarks/near_duplicates.py (default model): of the hash
# weights tried, 1.5 has the longest run of thresholds that reach precision 0.98 and recall 0.95
# on dev (0.51-0.64); 0.58 is its middle. The embeddings alone (weight 0) reach neither.
THRESHOLD = 0.58  # the cosine two photos with the same perceptual hash need
HASH_WEIGHT = 1.5  # how much each differing hash bit raises it (times 1/64)
# A pair whose pictures' pHashes differ in at most this many bits, in some orientation, is the
# same picture (a copy turned 90°, 180° or 270°, whose embedding moves far: on the dev half of
# benchmarks/near_duplicates.py 22 of 120 turned copies fell below cosine 0.58 with the default
# model, 5 below 0.40) once its cosine reaches the floor that benchmark collects pairs from;
# there, distinct photos differed in 12 or more bits (62,730 candidate pairs at cosine >= 0.40
# on dev; 10 or more on the report half).
SAME_PICTURE_BITS = 4
SAME_PICTURE_COSINE = 0.40
MAX_NEIGHBOURS = 64  # candidates kept per photo (a guard against huge near-identical sets)
BLOCK_FLOATS = 1 << 24  # similarities computed at once (64 MB of float32)
HASH_BATCH = 64  # hashes written per transaction

LOG_KIND = "xmodal-duplicates-moves"


@dataclass
class Member:
    """One photo of a group. ``date``: when it was taken (``photo_meta.taken_at``) where
    known, else the file's modification time (``date_source = "mtime"``). ``content_width`` x
    ``content_height``: its picture without uniform borders; ``date_original``, ``camera``,
    ``software``: what its EXIF says of its origin. ``why``: for the suggested keep, why it is
    kept; for the others, why not (see :func:`choose_keep`)."""

    file_id: int
    path: str
    bytes: int
    width: int | None
    height: int | None
    date: str | None
    date_source: str
    sha1: str | None
    mtime_ns: int = 0
    content_width: int | None = None
    content_height: int | None = None
    date_original: str | None = None
    camera: str | None = None
    software: str | None = None
    turned: str = ""  # how it is turned or mirrored relative to the keep ("rotated 90°")
    similarity: float = 1.0  # cosine to the suggested keep
    identical: bool = False  # the same bytes as the suggested keep
    keep: bool = False
    why: str = ""

    @property
    def pixels(self) -> int:
        return (self.width or 0) * (self.height or 0)

    @property
    def content_pixels(self) -> int:
        """Pixels of the picture inside any uniform border (the whole image when unknown)."""
        if self.content_width and self.content_height:
            return self.content_width * self.content_height
        return self.pixels

    @property
    def bordered(self) -> bool:
        """Whether uniform borders take more than 2% of the image (a letterboxed copy)."""
        return self.pixels > 0 and self.content_pixels < 0.98 * self.pixels

    @property
    def edited(self) -> bool:
        return is_editor(self.software)

    @property
    def camera_original(self) -> bool:
        """EXIF date taken (DateTimeOriginal) and camera present, no editor named."""
        return bool(self.date_original and self.camera) and not self.edited

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "camera_original": self.camera_original,
                "bordered": self.bordered}


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
        return {"keep": self.keep.path, "reason": self.keep.why, "size": len(self.members),
                "extra_bytes": self.extra_bytes, "members": [m.to_dict() for m in self.members]}


@dataclass(frozen=True)
class Thresholds:
    """The pair rule: ``cosine - hash_weight * hash_distance / 64 >= threshold``, or the same
    picture: a hash distance of at most ``same_picture_bits`` (in any of the eight orientations)
    and a cosine of at least ``same_picture_cosine`` (a copy turned by 90°, whose embedding
    moves far, or heavily edited). ``hash_weight`` 0: the embeddings alone decide."""

    threshold: float = THRESHOLD
    hash_weight: float = HASH_WEIGHT
    same_picture_bits: int = SAME_PICTURE_BITS
    same_picture_cosine: float = SAME_PICTURE_COSINE

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

    @property
    def candidates_from(self) -> float:
        """The lowest cosine of a pair either rule can accept."""
        if self.hash_weight == 0:  # the embeddings alone: no hashes, no same-picture rule
            return self.threshold
        return min(self.threshold, self.same_picture_cosine)


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
# the eight ways to turn or mirror a picture, in the order of Fingerprint.dihedral
TURNS = (None, "ROTATE_90", "ROTATE_180", "ROTATE_270", "FLIP_LEFT_RIGHT", "TRANSPOSE",
         "FLIP_TOP_BOTTOM", "TRANSVERSE")
# what a copy whose picture matches the keep's after TURNS[k] is, relative to the keep
TURN_NAMES = ("", "turned 90° clockwise", "turned 180°", "turned 90° anticlockwise", "mirrored",
              "mirrored and turned", "flipped upside down", "mirrored and turned")
BORDER_TOLERANCE = 16  # grey levels from the border colour that still count as border
BORDER_SHARE = 0.98  # of a row's (column's) pixels within it: that row is border
# Names in a Software (or XMP CreatorTool) tag that say an editor wrote the file; cameras put
# their firmware there ("HDR+ 1.0.3", "17.1", "Ver.1.00"), which does not count.
EDITORS = re.compile(
    r"photoshop|lightroom|gimp|snapseed|picasa|windows photo|^photos \d|affinity|pixelmator|"
    r"darktable|rawtherapee|capture one|acdsee|paint\.net|imagemagick|graphicsmagick|"
    r"instagram|vsco|luminar|facetune|canva|polarr|dxo|fotor|paintshop|corel|irfanview|"
    r"xnview|shotwell|digikam|aperture|iphoto|photoscape|pixlr|picsart|photo ?editor|"
    r"lightzone|on1 photo|skylum|photopea|krita", re.IGNORECASE)


def is_editor(software: str | None) -> bool:
    """Whether a Software tag names an image editor (not a camera's firmware)."""
    return bool(software) and EDITORS.search(software) is not None


@dataclass
class Fingerprint:
    """What ``xmodal duplicates`` reads from one file: its content SHA-1, 16 pHashes (the
    picture inside any added uniform border in its eight orientations, :data:`TURNS`, then the
    whole image in its eight: a border found in one copy and not in another, e.g. after a
    brightness change, must not tell them apart), that picture's size in the file's pixels, and
    the file's EXIF origin. ``reason``: why it has no hashes."""

    sha1: str | None
    dihedral: tuple[int, ...] | None = None
    content: tuple[int, int] | None = None
    origin: Origin = field(default_factory=Origin)
    reason: str | None = None

    @property
    def plain(self) -> int | None:
        return self.dihedral[0] if self.dihedral else None


def content_box(image: Any) -> tuple[int, int, int, int]:
    """(left, top, right, bottom) of the picture inside added uniform borders (letterbox or
    pillarbox bars, a plain frame), in ``image``'s pixels. A border is a band of rows (columns)
    where :data:`BORDER_SHARE` of the pixels lie within :data:`BORDER_TOLERANCE` grey levels of
    the edges' median colour, on both opposite sides (each at least 2% of the image, the
    smaller at least half the larger), so a dark sky along one edge is no border. The whole image where trimming leaves under a third."""
    from PIL import Image

    w, h = image.size
    scale = max(w, h) / 256
    grey = image.convert("L")
    if scale > 1:
        grey = grey.resize((max(1, round(w / scale)), max(1, round(h / scale))), Image.BILINEAR)
    a = np.asarray(grey, dtype=np.int16)
    edge = np.median(np.concatenate([a[0], a[-1], a[:, 0], a[:, -1]]))
    flat = np.abs(a - edge) <= BORDER_TOLERANCE
    top, bottom = _bands(flat.mean(1) >= BORDER_SHARE)
    left, right = _bands(flat.mean(0) >= BORDER_SHARE)
    if (bottom - top) * (right - left) < a.size / 3:
        return 0, 0, w, h
    sy, sx = h / a.shape[0], w / a.shape[1]
    return (int(round(left * sx)), int(round(top * sy)), int(round(right * sx)),
            int(round(bottom * sy)))


def _bands(border: np.ndarray) -> tuple[int, int]:
    """(start, stop) of what lies between the border bands at both ends of a row of flags;
    (0, n) unless both ends have a band of at least 2% of n and the smaller band is at least
    half the larger (bars are centred; a dark edge of the picture itself is not)."""
    n = len(border)
    inside = np.flatnonzero(~border)
    if not len(inside):
        return 0, n
    start, stop = int(inside[0]), int(inside[-1]) + 1
    low, high = sorted((start, n - stop))
    return (start, stop) if low >= max(1, 0.02 * n) and low >= high / 2 else (0, n)


def perceptual_hashes(image: Any) -> tuple[int, ...]:
    """The pHashes (64-bit DCT hash, ``imagehash.phash``) of a PIL image in its eight
    orientations (:data:`TURNS`): the first is the image's own, the fifth its mirror image's."""
    import imagehash
    from PIL import Image

    small = image.convert("L").resize((32, 32), Image.LANCZOS)  # what phash reads anyway
    out = []
    for turn in TURNS:
        turned = small if turn is None else small.transpose(getattr(Image.Transpose, turn))
        out.append(int(str(imagehash.phash(turned)), 16))
    return tuple(out)


def fingerprint(path: str, data: bytes) -> Fingerprint:
    """The :class:`Fingerprint` of a file's bytes."""
    sha1 = hashlib.sha1(data).hexdigest()
    origin = read_origin(path, data)
    image, reason = load_checked(path, data)
    if image is None:
        return Fingerprint(sha1, origin=origin, reason=reason)
    box = content_box(image)
    full_w, full_h = image.info.get("original_size", image.size)
    content = (round((box[2] - box[0]) * full_w / image.width),
               round((box[3] - box[1]) * full_h / image.height))
    whole = perceptual_hashes(image)
    picture = whole if box == (0, 0, *image.size) else perceptual_hashes(image.crop(box))
    return Fingerprint(sha1, picture + whole, content, origin)


def hash_file(path: str) -> Fingerprint:
    """The :class:`Fingerprint` of a file (``sha1`` None when it cannot be read now)."""
    data, reason = read_bytes(path)
    if data is None:
        return Fingerprint(None, reason=reason)
    return fingerprint(path, data)


_CACHE_COLUMNS = "sha1, dihedral, content_width, content_height, date_original, exif_camera, " \
                 "software, reason"


def _from_cache(row: tuple) -> Fingerprint | None:
    sha1, dihedral, cw, ch, date, camera, software, reason = row
    if (dihedral is None and reason is None) or (dihedral and dihedral.count(",") != 15):
        return None  # cached by an older xmodal: hash it again
    return Fingerprint(sha1, tuple(int(x, 16) for x in dihedral.split(",")) if dihedral else
                       None, (cw, ch) if cw and ch else None, Origin(date, camera, software),
                       reason)


def _to_cache(conn, f: Fingerprint, now: float) -> None:
    d = f.dihedral
    conn.execute(
        "INSERT OR REPLACE INTO photo_hashes(sha1, phash, phash_mirror, reason, computed_at, "
        "dihedral, content_width, content_height, date_original, exif_camera, software) "
        "VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (f.sha1, f"{d[0]:016x}" if d else None, f"{d[4]:016x}" if d else None, f.reason, now,
         ",".join(f"{x:016x}" for x in d) if d else None,
         *(f.content or (None, None)), f.origin.date_original, f.origin.camera,
         f.origin.software))


def photo_hashes(store: Store, file_ids: Iterable[int], progress: bool = False,
                 workers: int | None = None) -> dict[int, Fingerprint]:
    """{file id: :class:`Fingerprint`} of indexed photos; computed from the files where the
    cache (table ``photo_hashes``, by content SHA-1) lacks them and written back in
    transactions of ``HASH_BATCH``. Photos that cannot be read now are left out.

    The cache writes do not bump the store's generation (``Store.transaction`` would): the
    hashes are no input of the vectors or of the ANN index, which would be rebuilt for nothing.
    """
    from tqdm.auto import tqdm

    ids = sorted({int(i) for i in file_ids})
    if not ids:
        return {}
    info = _file_rows(store, ids, "id, path, sha1")
    cached: dict[str, Fingerprint | None] = {}
    sha1s = sorted({row[2] for row in info if row[2]})
    for chunk in _chunks(sha1s, 900):
        marks = ",".join("?" * len(chunk))
        for row in store.conn.execute(
                f"SELECT {_CACHE_COLUMNS} FROM photo_hashes WHERE sha1 IN ({marks})", chunk):
            cached[row[0]] = _from_cache(row)
    out: dict[int, Fingerprint] = {}
    todo = []
    for fid, path, sha1 in info:
        hit = cached.get(sha1) if sha1 else None
        if hit is None:
            todo.append((fid, path))
        else:
            out[fid] = hit
    if not todo:
        return out
    bar = tqdm(total=len(todo), desc="hashing", unit="photo", disable=not progress)
    workers = workers or min(4, os.cpu_count() or 1)
    with ThreadPoolExecutor(max_workers=workers) as pool:  # decoding releases the GIL
        for batch in _chunks(todo, HASH_BATCH):
            results = list(pool.map(lambda item: hash_file(item[1]), batch))
            now = time.time()
            with store.conn:  # one transaction per batch: an interruption keeps the rest
                for (fid, _), f in zip(batch, results):
                    if f.sha1 is None:  # unreadable now (moved, deleted): nothing to cache
                        continue
                    _to_cache(store.conn, f, now)
                    out[fid] = f
            bar.update(len(batch))
    bar.close()
    return out


def _dihedral_matrix(hashes: dict[int, Fingerprint], ids: np.ndarray) -> np.ndarray:
    """(len(ids), 16) uint64 pHashes; all bits set where a photo has none."""
    missing = (1 << 64) - 1
    rows = [hashes[int(i)].dihedral if int(i) in hashes and hashes[int(i)].dihedral else
            (missing,) * 16 for i in ids]
    return np.array(rows, dtype=np.uint64).reshape(-1, 16)


def hash_distances(hashes: dict[int, Fingerprint], a: np.ndarray, b: np.ndarray,
                   turns: bool = False) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Hamming distance of the pHashes of file ids ``a[k]`` and ``b[k]``: the smallest between
    ``a``'s picture and ``b``'s in any of its eight orientations (pictures inside added borders,
    or whole images), so a mirrored copy, one turned by 90°, 180° or 270° (stored turned,
    without an EXIF orientation) and a letterboxed one match; 65 where either has no hash.
    With ``turns``, also which orientation of ``b`` matched (an index into :data:`TURNS`)."""
    da, db = _dihedral_matrix(hashes, a), _dihedral_matrix(hashes, b)
    bits = np.minimum(np.bitwise_count(da[:, :1] ^ db[:, :8]),
                      np.bitwise_count(da[:, 8:9] ^ db[:, 8:])).astype(np.int64)  # (n, 8)
    best = bits.argmin(axis=1) if len(bits) else np.zeros(0, np.int64)
    d = bits[np.arange(len(bits)), best] if len(bits) else np.zeros(0, np.int64)
    known = np.array([hashes.get(int(i)) is not None and hashes[int(i)].dihedral is not None
                      and hashes.get(int(j)) is not None and hashes[int(j)].dihedral is not None
                      for i, j in zip(a, b)], dtype=bool).reshape(-1)
    d = np.where(known, d, 65)
    return (d, best) if turns else d


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
        ok = self.cosine - t.hash_weight * bits / 64 >= t.threshold
        if t.hash_weight > 0:
            ok |= (self.hash_distance <= t.same_picture_bits) & \
                (self.cosine >= t.same_picture_cosine)
        return ok


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

    Each group is sorted with the suggested keep first (:func:`choose_keep`: the camera
    original, then the earliest date taken, the most pixels inside uniform borders ...), each
    member saying why it is or is not kept. Files that no longer exist at their indexed path
    (moved aside by :func:`move_duplicates`, deleted) are left out."""
    t = Thresholds(threshold, hash_weight)
    ev = pair_evidence(index, t.candidates_from, under, max_neighbours, progress,
                       hash_below=t.hash_needed_below)
    return groups_from_evidence(index, ev, t)


def groups_from_evidence(index: Any, ev: PairEvidence, t: Thresholds) -> list[DuplicateGroup]:
    """The groups that thresholds ``t`` make of the evidence (connected components), each
    with its suggested keep first (:func:`choose_keep`)."""
    store: Store = index if isinstance(index, Store) else index.store
    ok = ev.confirmed(t)
    components = connected_components(
        len(ev.file_ids), list(zip(ev.i[ok].tolist(), ev.j[ok].tolist())) + list(ev.same_bytes))
    rows = sorted(r for members in components for r in members)
    if not rows:
        return []
    ids = [int(ev.file_ids[r]) for r in rows]
    details = _member_details(store, ids)
    present = [f for f in ids if f in details and os.path.exists(details[f].path)]
    prints = photo_hashes(store, present)  # cached: hashed while pairing, mostly
    for f in present:
        _add_fingerprint(details[f], prints.get(f))
    vecs = _vectors_of(store, present)
    groups = []
    for members in components:
        found = [details[f] for f in (int(ev.file_ids[r]) for r in members)
                 if f in details and os.path.exists(details[f].path)]
        if len(found) < 2:
            continue
        found = choose_keep(found)
        keep = found[0]
        turns = hash_distances(prints, np.full(len(found), keep.file_id),
                               np.array([m.file_id for m in found]), turns=True)[1]
        for m, turn in zip(found, turns):
            m.similarity = round(float(vecs[keep.file_id] @ vecs[m.file_id]), 4) \
                if m.file_id in vecs and keep.file_id in vecs else 1.0
            m.identical = m is not keep and m.sha1 is not None and m.sha1 == keep.sha1
            m.turned = TURN_NAMES[int(turn)] if m is not keep else ""
        _explain(found)
        groups.append(DuplicateGroup(found))
    groups.sort(key=lambda g: (-len(g.members), g.keep.path))
    return groups


def _add_fingerprint(m: Member, f: Fingerprint | None) -> None:
    if f is None:
        return
    if f.content:
        m.content_width, m.content_height = f.content
    m.date_original, m.camera, m.software = (f.origin.date_original, f.origin.camera,
                                             f.origin.software)


PIXEL_STEP = 1.04  # pixel counts within one such factor count as the same size


def _pixel_step(m: Member) -> int:
    return -int(np.floor(np.log(max(m.content_pixels, 1)) / np.log(PIXEL_STEP)))


# The keep rule, in order: the first criterion on which two photos differ decides. Each is
# (name, key: smaller is kept, why a photo that loses on it is not kept).
KEEP_RULE: list[tuple[str, Any, Any]] = [
    ("the camera original (EXIF date taken and camera, no editor)",
     lambda m: not m.camera_original,
     lambda m, k: (f"edited with {m.software}" if m.edited else
                   "no camera date in its EXIF" if not m.date_original else
                   "no camera in its EXIF")),
    ("taken first", lambda m: m.date_original or "9999",
     lambda m, k: f"taken later ({m.date_original})"),
    ("the least added border", lambda m: _border_step(m),
     lambda m, k: (f"letterboxed: a {m.content_width}x{m.content_height} picture in "
                   f"{m.width}x{m.height}")),
    ("the most pixels", _pixel_step,
     lambda m, k: f"fewer pixels ({_picture_size(m)} against {_picture_size(k)})"),
    ("the oldest date", lambda m: m.date or "9999",
     lambda m, k: f"a later date ({(m.date or '?').replace('T', ' ')})"),
    ("the oldest file", lambda m: m.mtime_ns, lambda m, k: "a newer file"),
    ("the largest file", lambda m: -m.bytes, lambda m, k: "a smaller file"),
    ("the first path", lambda m: m.path, lambda m, k: "alike in every respect; a later path"),
]


def _border_step(m: Member) -> int:
    """The share of the image that added uniform borders take, in steps of 5%."""
    return int(round(20 * (1 - m.content_pixels / m.pixels))) if m.pixels else 0


def _picture_size(m: Member) -> str:
    if m.content_width and m.content_height:
        return f"{m.content_width}x{m.content_height}"
    return f"{m.width}x{m.height}" if m.width and m.height else "?"


def choose_keep(members: list[Member]) -> list[Member]:
    """The members sorted by :data:`KEEP_RULE`, the suggested keep first (marked ``keep``):
    the camera original (EXIF ``DateTimeOriginal`` and camera present, no editing software
    named in ``Software``), then the earliest date taken, the least added border (letterbox
    bars; shares within 5% are equal), the most pixels inside such borders (counts within 4%
    are equal), the oldest date, the oldest file, the largest file, the path."""
    ordered = sorted(members, key=lambda m: tuple(key(m) for _, key, _ in KEEP_RULE))
    for m in ordered:
        m.keep = m is ordered[0]
    return ordered


def _explain(members: list[Member]) -> None:
    """Fill ``why``: for each other member the first criterion it loses on (and how it is
    turned, when it is); for the keep, the criteria it won on."""
    keep, won, won_identical = members[0], set(), set()
    for m in members[1:]:
        n = next(n for n, (_, key, _) in enumerate(KEEP_RULE) if key(m) != key(keep))
        if m.identical:
            m.why = "the same bytes as the keep"
            won_identical.add(n)
            continue
        won.add(n)
        m.why = KEEP_RULE[n][2](m, keep)
        if m.turned:
            m.why = f"{m.turned}; {m.why}"
    keep.why = "kept: " + "; then ".join(KEEP_RULE[n][0] for n in sorted(won or won_identical))


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
            out[fid] = Member(fid, path, size, w, h, date, source, sha1, mtime_ns)
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
    db: str | None = None  # the photo index the moves were made from (the log's header)
    reindexed: int = 0  # restored files put back into that index with their kept vectors
    index_busy: str | None = None  # why they could not be put back (another writer)

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


def _open_log(dest: Path, log: Path):
    """The move log opened for appending (and the destination folder made)."""
    try:
        dest.mkdir(parents=True, exist_ok=True)
        log.parent.mkdir(parents=True, exist_ok=True)
        return open(log, "a", encoding="utf-8")
    except OSError as exc:
        raise XmodalError(f"cannot write the move log {log}: {exc.strerror}") from exc


def _move_check(m: Any, src: Path, to: Path, dest: Path) -> tuple[str | None, str | None]:
    """(why ``src`` cannot move to ``to``, or None; its SHA-1 when it can)."""
    if not src.is_file():
        return "missing", None
    if to.exists():
        return f"{to} exists already", None
    if dest == src or dest in src.parents:
        return "already inside the destination folder", None
    sha1 = file_sha1(src)
    if m.sha1 and sha1 != m.sha1:
        return "changed since it was indexed: run 'xmodal index' and look again", None
    return None, sha1


def move_duplicates(groups: Iterable[DuplicateGroup], dest_dir: str | os.PathLike,
                    log_path: str | os.PathLike | None = None, progress: bool = False,
                    dry_run: bool = False, db: str | os.PathLike | None = None) -> MoveReport:
    """Move every member of ``groups`` that is not the suggested keep into ``dest_dir``.

    Each move is appended to the JSON Lines log ``log_path`` (default
    :func:`default_log_path`) and flushed to disk before the file moves, so
    :func:`undo_moves` can put everything back even after a crash mid-way. A file whose bytes
    changed since it was indexed, or whose destination exists, is skipped with the reason;
    nothing is ever overwritten or deleted. ``db``: the photo index the groups come from,
    recorded in the log so that :func:`undo_moves` can put the files back into it."""
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
    with _open_log(dest, log) as handle:
        _log_line(handle, {"kind": LOG_KIND, "version": 1, "dest": str(dest),
                           "started": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                           **({"db": os.path.abspath(db)} if db else {})})
        for m in tqdm(todo, desc="moving", unit="file", disable=not progress):
            src = Path(m.path)
            to = destination(src, dest)
            reason, sha1 = _move_check(m, src, to, dest)
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
    return _read_log(log_path)[1]


def log_database(log_path: str | os.PathLike) -> str | None:
    """The photo index a move log's moves were made from (None for logs without one)."""
    return _read_log(log_path)[0].get("db")


def _read_log(log_path: str | os.PathLike) -> tuple[dict[str, Any], list[dict[str, str]]]:
    log = Path(log_path).expanduser()
    if not log.is_file():
        raise XmodalError(f"no move log at {log}: give the file that 'xmodal duplicates "
                          "--move-to' wrote (it prints its path)")
    moves, header = [], None
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
            header = header or entry
        elif isinstance(entry, dict) and {"from", "to"} <= entry.keys():
            moves.append(entry)
    if header is None:
        raise XmodalError(f"{log} is not a move log of 'xmodal duplicates'")
    return header, moves


def undo_moves(log_path: str | os.PathLike, progress: bool = False,
               index: Any = None) -> UndoReport:
    """Move the files recorded in a move log back where they were, newest first. A file whose
    original place is taken again, that is missing, or whose bytes changed is left where it is
    and reported; nothing is overwritten. ``index``: a PhotoIndex to put the restored files
    back into with the vectors they had (:func:`reindex_restored`)."""
    from tqdm.auto import tqdm

    header, moves = _read_log(log_path)
    report = UndoReport(str(Path(log_path).expanduser()), db=header.get("db"))
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
        report.restored.append({"from": str(to), "to": str(src), "sha1": entry.get("sha1", "")})
    if index is not None and report.restored:
        try:
            report.reindexed = reindex_restored(index, report.restored)
        except XmodalError as exc:  # the writer lock: an 'xmodal index' is at work
            report.index_busy = str(exc)
    return report


def reindex_restored(index: Any, restored: list[dict[str, str]]) -> int:
    """Put files moved back by :func:`undo_moves` into the photo index again with the vector
    their content had when ``--move-to`` took them out (kept by content SHA-1, see
    ``Store.retire_vectors``): nothing is embedded. Files whose vector is not kept (another
    model since) are left for the next ``xmodal index``. Returns how many went back."""
    store: Store = index.store
    model = store.get_meta("model")
    back = []
    for entry in restored:
        vec = store.vector_by_hash(entry["sha1"], model) if entry.get("sha1") and model else None
        if vec is not None and os.path.isfile(entry["to"]):
            st = os.stat(entry["to"])
            back.append((entry, vec, st, read_metadata(entry["to"], mtime_ns=st.st_mtime_ns)))
    if not back:
        return 0
    with writer_lock(index.db_path), store.transaction() as conn:
        for entry, vec, st, meta in back:
            w, h = store.size_by_hash(entry["sha1"])
            fid = store.upsert_file(conn, entry["to"], st.st_size, st.st_mtime_ns,
                                    entry["sha1"], w, h, "ok", None)
            store.put_vector(conn, fid, model, vec)
            store.put_metadata(conn, fid, meta)
        store.unretire(conn, [entry["sha1"] for entry, *_ in back])
    index.ann.rebuild()
    return len(back)


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
