"""One search pipeline for every back-end: parse -> embed -> candidate ids ->
``backend.search(q, k, among)`` -> calibrate -> cut off -> sort -> page -> :class:`SearchAnswer`.

A :class:`Searcher` reads the photos' paths, content hashes and metadata from a
:class:`~xmodal.index.store.Store` (the photo index itself, or the catalog an ``xmodal ann
build`` folder keeps beside its shards) and ranks vectors through a :class:`VectorBackend`: the
photo index's FAISS index (:class:`~xmodal.index.ann.AnnIndex`) or the sharded IVF index
(:class:`~xmodal.scale.ann_search.ShardBackend`). Filters, the calibrated cutoff, the sort
orders and the answer are the same for both. A query without terms browses: the photos that
pass the filters, newest (or oldest) first, paged.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from xmodal.errors import XmodalError
from xmodal.index.filters import PhotoFilter
from xmodal.index.metadata import place_name
from xmodal.index import phrasing
from xmodal.index.query import Term, combine, parse_query
from xmodal.index.scan import load_checked
from xmodal.index.store import Store

DATE_SORT_POOL = 100  # sorted by date: the best this many matches (past the cutoff), by date
SORTS = ("relevance", "date", "oldest")


class VectorBackend(Protocol):
    """What a :class:`Searcher` asks of a vector index: the ``k`` best inner products with the
    query rows, among the given ids only when ``among`` is set; (scores, ids), ids -1 past the
    end. The ids are the catalog's file ids."""

    def search(self, queries: np.ndarray, k: int, among: np.ndarray | None = None
               ) -> tuple[np.ndarray, np.ndarray]: ...


@dataclass
class SearchResult:
    path: str
    score: float
    # other indexed files with the same content (same SHA-1): shown once, under one path
    duplicates: list[str] = field(default_factory=list)
    # the calibrated probability that a person calls the photo a match for the query's
    # sentence (None without a calibration for the model, or for a query without a sentence)
    relevance: float | None = None
    taken_at: str | None = None  # local time, ISO; date_source says where it came from
    date_source: str | None = None
    place: str | None = None
    camera: str | None = None
    width: int | None = None
    height: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """``{"path", "score"}``, plus ``"duplicates"`` when other files hold the same photo,
        ``"relevance"`` when calibrated, and the photo's date, place and camera when known."""
        return {k: v for k, v in asdict(self).items()
                if k in ("path", "score") or v not in (None, [])}


@dataclass
class SearchAnswer:
    """A page of results and what was hidden. ``min_relevance`` is the cutoff in force (a
    calibrated probability; for a model without a calibration, a raw score), ``hidden`` how
    many of the best ``considered`` matches fell below it (``offset + k``; the best 100 when
    sorting by date), ``closest`` the best of those. Browsing (no query terms) has no scores:
    every result's score is 0 and nothing is hidden."""

    results: list[SearchResult]
    terms: list[str] = field(default_factory=list)
    filter: dict[str, Any] = field(default_factory=dict)
    sort: str = "relevance"
    min_relevance: float | None = None
    calibrated: bool = False
    hidden: int = 0
    closest: SearchResult | None = None
    candidates: int | None = None  # photos that passed the filter (None: no filter)
    more: bool = False  # whether a next page (offset + k onwards) has results
    considered: int = 0  # how many of the best matches the cutoff was applied to
    offset: int = 0  # results skipped before this page
    # browsing: the places of every photo that passes the filter ({place, count}, most first)
    places: list[dict] | None = None

    @property
    def no_good_match(self) -> bool:
        return not self.results and self.hidden > 0

    @property
    def browsing(self) -> bool:
        return not self.terms

    def to_dict(self) -> dict[str, Any]:
        return {
            "results": [r.to_dict() for r in self.results],
            "terms": self.terms, "filter": self.filter, "sort": self.sort,
            "min_relevance": self.min_relevance, "calibrated": self.calibrated,
            "hidden": self.hidden, "no_good_match": self.no_good_match,
            "closest": self.closest.to_dict() if self.closest else None,
            "candidates": self.candidates, "more": self.more, "considered": self.considered,
            "offset": self.offset,
            **({} if self.places is None else {"places": self.places}),
        }


@dataclass
class Request:
    """A checked search request: terms (none: browse), page, sort order, cutoff."""

    terms: list[Term]
    k: int
    offset: int
    sort: str
    min_relevance: float | None
    filters: PhotoFilter

    @property
    def pool(self) -> int:
        """How many of the best matches are ranked (by date: the best DATE_SORT_POOL)."""
        k, offset = self.k, self.offset
        return max(k + offset, DATE_SORT_POOL) if self.sort != "relevance" else k + offset + 1


@dataclass
class Query:
    """The embedded query: its vector, the sentence's own vector (what the calibration
    judges; None without a sentence) and the indexed example photos the results leave out."""

    vector: np.ndarray
    sentence: np.ndarray | None
    skip: set[int] = field(default_factory=set)
    skip_hashes: set[str] = field(default_factory=set)


def parse_request(query: Any, k: int, offset: int, filters: PhotoFilter | None, sort: str,
                  min_relevance: float | None, like=(), unlike=()) -> Request:
    """Check the arguments of :meth:`Searcher.find` and gather the terms."""
    if k < 1 or offset < 0:
        raise XmodalError("k must be at least 1 and offset at least 0")
    if sort not in SORTS:
        raise XmodalError(f"sort must be one of {', '.join(SORTS)}, not {sort!r}")
    if min_relevance is not None and not -1 <= min_relevance <= 1:  # NaN fails too
        raise XmodalError(f"the cutoff (--min-score) must be from 0 to 1 (a probability: "
                          f"0.2 is 20%; a raw score from -1 to 1), not {min_relevance}")
    terms = query if query and isinstance(query[0], Term) else \
        (parse_query(query) if query else [])
    terms = [*terms, *(image_term(x) for x in like), *(Term(t, "text", -1.0)
                                                       for t in unlike if t.strip())]
    if terms and not any(t.weight > 0 for t in terms):
        raise XmodalError("the search query is empty: give a sentence such as 'a dog on a beach'")
    return Request(terms, k, offset, sort, min_relevance, filters or PhotoFilter())


def image_term(image: Any) -> Term:
    if isinstance(image, str):
        from xmodal.index.query import term

        return term(image, kind="image")
    return Term(image, "image")


class Searcher:
    """Search a catalog (``store``) through a vector ``backend`` with the query vectors of the
    model that ``model()`` gives (called when a query is embedded: browsing needs no model).
    ``calibrator()``: the model's :class:`~xmodal.index.calibration.Calibrator` or None (no
    cutoff by default)."""

    def __init__(self, store: Store, backend: VectorBackend, model: Callable[[], Any],
                 model_id: str, calibrator: Callable[[], Any] | None = None):
        self.store, self.backend, self.model_id = store, backend, model_id
        self._model = model
        self.calibrator = calibrator or (lambda: None)

    @property
    def model(self) -> Any:
        return self._model()

    def find(self, query: Any, k: int = 10, offset: int = 0, *, filters: PhotoFilter | None = None,
             sort: str = "relevance", min_relevance: float | None = None, like=(), unlike=()
             ) -> SearchAnswer:
        """See :meth:`xmodal.index.PhotoIndex.find`; without any query term, browse."""
        request = parse_request(query, k, offset, filters, sort, min_relevance, like, unlike)
        if not request.terms and not (request.filters.active or sort != "relevance"):
            raise XmodalError("the search query is empty: give a sentence such as 'a dog on a "
                              "beach', or a filter (e.g. --place Lisbon) to list its photos")
        among = self.candidates(request.filters)
        if not request.terms:
            return self.browse(request, among)
        embedded = self.embed(request.terms)
        ranked = self.rank(embedded, request, among)
        calibrated, cutoff = self.calibrate(ranked, embedded, request)
        return self.answer(ranked, request, among, calibrated, cutoff)

    # ----- the steps ------------------------------------------------------------------------
    def candidates(self, filters: PhotoFilter) -> np.ndarray | None:
        """The ids of the photos that pass the filter (None: no filter)."""
        among = filters.ids(self.store)
        if among is not None and not len(among):
            raise filters.nothing_passes(self.store)
        return among

    def embed(self, terms: list[Term]) -> Query:
        """The query vector: the terms' unit vectors, weighed and summed."""
        from xmodal.index.threads import one_thread

        with one_thread(self.model):
            vectors, skip, skip_hashes = self.term_vectors(terms)
        q = combine(vectors, [t.weight for t in terms])
        texts = [i for i, t in enumerate(terms) if t.kind == "text" and t.weight > 0]
        sentence = combine(vectors[texts], [terms[i].weight for i in texts]) if texts else None
        return Query(q, sentence, skip, skip_hashes)

    def rank(self, query: Query, request: Request, among: np.ndarray | None
             ) -> list[SearchResult]:
        """The best matches in score order, copies of one photo collapsed into the first."""
        depth = 2 * request.pool + 10 + len(query.skip)
        scores, ids = self.backend.search(query.vector, depth, among=among)
        return self.hits(scores[0], ids[0], query.skip, query.skip_hashes)

    def calibrate(self, ranked: list[SearchResult], query: Query, request: Request
                  ) -> tuple[bool, float | None]:
        """Set each result's calibrated relevance (the sentence's match probability); returns
        (calibrated, the cutoff in force). Without a calibration the cutoff is a raw score."""
        calibrator = self.calibrator() if query.sentence is not None else None
        if calibrator is None:
            return False, request.min_relevance or None
        exact = len(request.terms) == 1  # the ranking score is the sentence's own cosine
        sims = [r.score for r in ranked] if exact else self.cosines(query.sentence, ranked)
        for r, p in zip(ranked, calibrator.probability(np.asarray(sims, np.float64))):
            r.relevance = round(float(p), 4)
        # the calibration judges the sentence alone: with an example image in the query the
        # ranking follows the image too, so nothing is hidden unless asked
        example = any(t.kind == "image" and t.weight > 0 for t in request.terms)
        best = max((r.relevance for r in ranked), default=0.0)
        default = None if example else round(calibrator.default_cutoff(best), 6)
        return True, default if request.min_relevance is None else request.min_relevance

    def answer(self, ranked: list[SearchResult], request: Request, among: np.ndarray | None,
               calibrated: bool, cutoff: float | None) -> SearchAnswer:
        """Cut off, sort, page."""
        k, offset, pool = request.k, request.offset, request.pool
        passing = ranked if cutoff is None else [r for r in ranked if _value(r) >= cutoff]
        window = ranked[:offset + k] if request.sort == "relevance" else ranked[:pool]
        shown = {id(r) for r in passing}
        failed = [r for r in window if id(r) not in shown]
        if request.sort != "relevance":
            self.attach_metadata(passing[:pool])
            passing = by_date(passing[:pool], newest=request.sort == "date")
        page = passing[offset:offset + k]
        self.attach_metadata(page + failed[:1])
        return SearchAnswer(
            page, [t.describe() for t in request.terms], request.filters.to_dict(),
            request.sort, cutoff, calibrated, len(failed), failed[0] if failed else None,
            None if among is None else len(among), len(passing) > offset + k, len(window),
            offset)

    def browse(self, request: Request, among: np.ndarray | None) -> SearchAnswer:
        """The photos that pass the filters by date (newest first unless sorted "oldest";
        undated last), one page; no query, so no score and no cutoff."""
        sort = "oldest" if request.sort == "oldest" else "date"
        ids = self.store.ids_by_date(among, newest=sort == "date", offset=request.offset,
                                     limit=request.k + 1)
        page = self.hits(np.zeros(len(ids), np.float32), ids)[:request.k]
        self.attach_metadata(page)
        return SearchAnswer(page, [], request.filters.to_dict(), sort,
                            candidates=None if among is None else len(among),
                            more=len(ids) > request.k, offset=request.offset,
                            places=self.places(among))

    def places(self, among: np.ndarray | None) -> list[dict]:
        """The places of the photos among ``among`` (all: None) with photo counts."""
        from xmodal.index.filters import PLACES

        counts: dict[str, int] = {}
        for r in PLACES.rows(self.store, among):
            name = place_name(r["city"], r["region"], r["country"])
            counts[name] = counts.get(name, 0) + r["count"]
        return [{"place": p, "count": n} for p, n in sorted(counts.items(), key=lambda x: -x[1])]

    # ----- reading the catalog --------------------------------------------------------------
    def hits(self, scores: np.ndarray, ids: np.ndarray, skip: set[int] = frozenset(),
             skip_hashes: set[str] = frozenset()) -> list[SearchResult]:
        """Hits in the given order; copies of one photo (same SHA-1) collapse into the first."""
        valid = [int(i) for i in ids if i >= 0]
        paths, hashes = self.store.paths(valid), self.store.hashes(valid)
        copies = self.store.copies(h for h in hashes.values() if h)
        out, seen = [], set(skip_hashes)
        for s, i in zip(scores, ids):
            i = int(i)
            if i < 0 or i in skip or i not in paths:
                continue
            sha1 = hashes.get(i)
            if sha1 is not None and sha1 in seen:
                continue  # a copy of a photo already listed
            others = []
            if sha1 is not None:
                seen.add(sha1)
                others = [p for p in copies.get(sha1, []) if p != paths[i]]
            out.append(SearchResult(paths[i], float(s), others))
        return out

    def term_vectors(self, terms: list[Term]) -> tuple[np.ndarray, set[int], set[str]]:
        """Unit vectors of the terms (texts in one batch; indexed images from the store), and
        the indexed example photos (ids, contents) that the results leave out."""
        vectors: list[np.ndarray | None] = [None] * len(terms)
        texts = [i for i, t in enumerate(terms) if t.kind == "text"]
        if texts:
            embedded = self.model.embed_texts(
                [phrasing.search_text(terms[i].value) for i in texts], progress=False)
            for i, v in zip(texts, np.asarray(embedded, np.float32)):
                vectors[i] = v
        skip: set[int] = set()
        skip_hashes: set[str] = set()
        for i, t in enumerate(terms):
            if t.kind != "image":
                continue
            fid, vec = self.indexed_vector(t.value)
            if fid is not None and t.weight > 0:
                skip.add(fid)
                own = self.store.hashes([fid]).get(fid)
                if own:
                    skip_hashes.add(own)
            vectors[i] = vec if vec is not None else self.embed_image(t.value)
        return np.stack(vectors).astype(np.float32), skip, skip_hashes

    def embed_image(self, image: Any) -> np.ndarray:
        """The vector of an example image that is not indexed (a path or a PIL image)."""
        if not hasattr(image, "convert"):
            path = str(Path(image).expanduser())
            loaded, reason = (load_checked(path) if Path(path).is_file()
                              else (None, "file not found"))
            if loaded is None:
                raise XmodalError(f"cannot use {image} as an example: {reason}")
            image = loaded
        embedded = self.model.embed_images([image], progress=False, cache=False)
        return np.asarray(embedded, np.float32)[0]

    def indexed_vector(self, image: Any) -> tuple[int | None, np.ndarray | None]:
        """(file id, stored vector) of an indexed photo given by path; (None, None) else. A
        catalog without vectors (an ANN folder's) gives the id, and the image is embedded."""
        if hasattr(image, "convert"):
            return None, None
        given = Path(image).expanduser()
        fid = self.store.file_id(os.path.abspath(given))
        if fid is None and given.exists():
            fid = self.store.file_id(str(given.resolve()))
        vec = self.store.vector_of(fid, self.model_id) if fid is not None else None
        return fid, vec

    def cosines(self, query: np.ndarray, results: list[SearchResult]) -> list[float]:
        """Each result's cosine with ``query`` (its score where the catalog has no vector)."""
        ids = {r.path: self.store.file_id(r.path) for r in results}
        vecs = self.store.vectors_of([i for i in ids.values() if i is not None], self.model_id)
        return [float(vecs[ids[r.path]] @ query[0]) if ids[r.path] in vecs else r.score
                for r in results]

    def attach_metadata(self, results: list[SearchResult]) -> None:
        by_path = {r.path: r for r in results}
        ids = {self.store.file_id(p): p for p in by_path}
        for row in self.store.metadata([i for i in ids if i is not None]).values():
            r = by_path[row["path"]]
            r.taken_at, r.date_source = row["taken_at"], row["date_source"]
            r.camera, r.width, r.height = row["camera"], row["width"], row["height"]
            r.place = place_name(row["city"], row["region"], row["country"])


def _value(result: SearchResult) -> float:
    """What the cutoff compares: the calibrated relevance when there is one, else the score."""
    return result.relevance if result.relevance is not None else result.score


def by_date(results: list[SearchResult], newest: bool) -> list[SearchResult]:
    """Results ordered by the date taken (dateless photos last), ties by relevance."""
    dated = [r for r in results if r.taken_at]
    dated.sort(key=lambda r: r.taken_at, reverse=newest)
    return dated + [r for r in results if not r.taken_at]
