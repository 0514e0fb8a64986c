"""Search by sentence (with filters, example images and terms to push away), similar images,
the facets the filters can select, and thumbnails of indexed images.

Example images are indexed photos, named by id (``like=``, or a path inside the ``q``
expression), or one uploaded file (``POST /api/search``): the server never reads a file of its
disk that the index does not hold.
"""

from __future__ import annotations

import inspect
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Optional

from fastapi import APIRouter, Depends, File, Form, Query, UploadFile
from fastapi.responses import FileResponse

from xmodal.errors import XmodalError
from xmodal.server.errors import ApiError
from xmodal.server.serialize import hit_json, json_safe
from xmodal.server.state import ServerState, get_state
from xmodal.server.thumbnails import THUMBNAIL_SIZES
from xmodal.server.uploads import read_image

router = APIRouter(prefix="/api", tags=["search"])

Sort = Literal["relevance", "date", "oldest"]
MAX_TERMS = 16  # sentences and images in one query, pushed-away ones included
MAX_TERM_CHARS = 1000

DATE_HELP = "a year, month or day: 2023, 2023-06 or 2023-06-14"
MIN_SCORE_HELP = (
    "hide results below this calibrated match probability (0-1; 0 shows everything); omitted: "
    "the model's calibrated threshold. For a model without a calibration: a minimum raw score "
    "(and nothing is hidden when omitted)"
)


@dataclass(frozen=True)
class SearchOptions:
    """The filters (by name, as given; blank fields left out) and the sort order of a search."""

    filters: dict[str, Any] = field(default_factory=dict)
    sort: str = "relevance"

    @property
    def under(self) -> str | None:
        return self.filters.get("under")

    def photo_filter(self):
        """The library's :class:`~xmodal.index.filters.PhotoFilter`; 400 when a value is
        malformed (a date that is no date, a position that is no LAT,LON, ...)."""
        from xmodal.index.filters import PhotoFilter

        try:
            return PhotoFilter(**self.filters)
        except XmodalError as exc:
            raise ApiError(400, api_message(str(exc))) from None


def api_message(message: str) -> str:
    """A library message as the API says it: parameters by their name, not as CLI options."""
    from xmodal.index.filters import names

    flag = re.compile(r"--(" + "|".join(map(re.escape, names())) + r")\b")
    message = flag.sub(r"\1", message)
    return message.replace("'xmodal photos --facets' lists", "/api/facets lists")


def _blank_to_none(value: Any) -> Any:
    if isinstance(value, str):
        return value.strip() if value.strip() else None
    return value


def _filter_param(param: Callable[..., Any], spec: Any) -> inspect.Parameter:
    """One filter of the registry as a query parameter or form field."""
    bounds = ({"gt": spec.minimum, "le": spec.maximum} if spec.type is float
              else {"max_length": spec.max_length})
    return inspect.Parameter(
        spec.name, inspect.Parameter.KEYWORD_ONLY, annotation=Optional[spec.type],  # noqa: UP045
        default=param(None, description=f"{spec.help} Example: {spec.example}", **bounds))


def _options_reader(param: Callable[..., Any]) -> Callable[..., SearchOptions]:
    """A dependency that reads the filters (one parameter per registered filter) and the sort
    order from query parameters (``param=Query``) or multipart form fields (``param=Form``):
    one definition for both, regenerated when a filter is registered."""
    from xmodal.index import filters as registry

    def read(**given: Any) -> SearchOptions:
        sort = given.pop("sort", "relevance")
        values = {k: _blank_to_none(v) for k, v in given.items()}
        return SearchOptions({k: v for k, v in values.items() if v is not None}, sort)

    def refresh() -> None:
        sort = inspect.Parameter(
            "sort", inspect.Parameter.KEYWORD_ONLY, annotation=Sort,
            default=param("relevance", description="relevance (best match first), date "
                          "(newest first) or oldest"))
        params = [_filter_param(param, s) for s in registry.FILTERS] + [sort]
        read.__signature__ = inspect.Signature(params, return_annotation=SearchOptions)
        read.__annotations__ = {p.name: p.annotation for p in params}

    refresh()
    registry.on_change(refresh)
    return read


query_options = _options_reader(Query)
form_options = _options_reader(Form)


def _check_page(state: ServerState, limit: int, offset: int) -> None:
    if limit > state.limits.max_k:
        raise ApiError(400, f"limit must be at most {state.limits.max_k}")
    if offset > state.limits.max_offset:
        raise ApiError(400, f"offset must be at most {state.limits.max_offset}")


def _page(hits: list[Any], offset: int, limit: int) -> dict[str, Any]:
    """One page from ``hits``, the results starting at ``offset`` plus (maybe) one more."""
    page = hits[:limit]
    return {
        "offset": offset,
        "limit": limit,
        "has_more": len(hits) > limit,
        "results": [hit_json(h, offset + i + 1) for i, h in enumerate(page)],
    }


def _answer(answer: Any, offset: int, limit: int) -> dict[str, Any]:
    """A page of a ``SearchAnswer`` and what was hidden."""
    closest = answer.closest
    return {
        **_page(list(answer.results), offset, limit),
        "has_more": bool(answer.more),
        "hidden": int(answer.hidden),
        "considered": int(answer.considered),
        "no_good_match": bool(answer.no_good_match),
        "closest": hit_json(closest, None) if closest is not None else None,
        "min_relevance": answer.min_relevance,
        "calibrated": bool(answer.calibrated),
        "filter": answer.filter,
        "sort": answer.sort,
        "terms": answer.terms,
        **({} if answer.places is None else {"places": answer.places}),
    }


def _plain(hits: list[Any], offset: int, limit: int, options: SearchOptions,
           terms: list[str]) -> dict[str, Any]:
    """The same answer for a collection that only ranks (no filters, no cutoff)."""
    return {**_page(hits, offset, limit), "hidden": 0, "considered": len(hits),
            "no_good_match": False, "closest": None,
            "min_relevance": None, "calibrated": False,
            "filter": {"under": options.under} if options.under else {}, "sort": "relevance",
            "terms": terms}


def _plain_only(options: SearchOptions, extra: bool) -> None:
    """400 when a collection without ``find`` (an ANN folder) is asked for more than ranking."""
    if extra or options.sort != "relevance" or any(k != "under" for k in options.filters):
        raise ApiError(400, "this collection answers plain sentence searches only: filters, "
                       "sorting, example images and terms to push away need a photo database, "
                       "or an 'xmodal ann build' folder with its catalog ('xmodal ann build "
                       "SHARDS OUT --stage catalog' adds it)")


def _image_reference(term: Any) -> bool:
    """Whether a query term names an image file (it must then be an indexed photo): the parser
    found the file, or the text is a path or a file name with an image extension. The second
    case makes existing and missing files answer alike."""
    from xmodal.data.folder import IMAGE_EXTENSIONS

    if term.kind == "image":
        return True
    value = str(term.value)
    if Path(value).suffix.lower() not in IMAGE_EXTENSIONS:
        return False
    return value.startswith(("/", "~")) or not any(c.isspace() for c in value)


def _query_terms(lib: Any, q: str, like: list[str], unlike: list[str]) -> list[Any]:
    """The terms of a search: ``q`` parsed as an expression (sentences and indexed photos joined
    by + and -, each with an optional W: weight), the ``like`` photos and the ``unlike``
    sentences. Image files the index does not hold are refused, never read."""
    from xmodal.index.query import Term, parse_query

    index, terms = lib.index(), []
    for t in parse_query(q, check_files=False) if q.strip() else []:
        if _image_reference(t):
            path = os.path.abspath(os.path.expanduser(str(t.value)))
            if not index.contains(path):
                raise ApiError(400, f"{t.value!r} is not a photo in the index: example images "
                               "in a query must be indexed photos (or upload one with POST "
                               "/api/search)")
            t = Term(path, "image", t.weight)
        terms.append(t)
    for item in like:
        lib.indexed_path(item)  # 404 unless indexed
        terms.append(Term(item, "image", 1.0))
    terms += [Term(text.strip(), "text", -1.0) for text in unlike if text.strip()]
    if len(terms) > MAX_TERMS:
        raise ApiError(400, f"the query has {len(terms)} terms: the limit is {MAX_TERMS}")
    return terms


def _check_terms(like: list[str], unlike: list[str]) -> None:
    if len(like) + len(unlike) > MAX_TERMS:
        raise ApiError(400, f"at most {MAX_TERMS} example images and terms to push away")
    if any(len(t) > MAX_TERM_CHARS for t in [*like, *unlike]):
        raise ApiError(400, f"a like or not term is longer than {MAX_TERM_CHARS} characters")


def _find(index: Any, terms: list[Any], limit: int, offset: int, options: SearchOptions,
          min_score: float | None) -> dict[str, Any]:
    """One page of ``index.find``."""
    filters = options.photo_filter()
    try:
        answer = index.find(terms, limit, offset, filters=filters, sort=options.sort,
                            min_relevance=min_score)
    except XmodalError as exc:
        raise ApiError(400, api_message(str(exc))) from None
    return _answer(answer, offset, limit)


async def _search(
    state: ServerState, q: str, limit: int, offset: int, options: SearchOptions,
    min_score: float | None, like: list[str], unlike: list[str], upload: Any = None,
) -> dict[str, Any]:
    """Run one search on the library thread: ``find`` on a photo index, plain ranking on a
    collection without it. ``upload``: an uploaded example image (a Term)."""
    lib = state.backends

    def work() -> dict[str, Any]:
        index = lib.index()
        if not hasattr(index, "find"):
            _plain_only(options, bool(like or unlike or upload is not None
                                      or min_score is not None))
            where = {"under": options.under} if options.under else {}
            hits = list(index.search(q, limit + 1, offset, **where))
            return _plain(hits, offset, limit, options, [f"+ {q}"])
        terms = _query_terms(lib, q, like, unlike)
        if upload is not None:
            terms.append(upload)
        return _find(index, terms, limit, offset, options, min_score)

    return json_safe({"query": q, **await lib.run(work)})


@router.get("/search", summary="Rank indexed images by a sentence, with filters")
async def search(
    q: str = Query("", max_length=MAX_TERM_CHARS,
                   description="the sentence to search for; or an expression of sentences and "
                   "indexed photos joined by + and - with optional weights, e.g. "
                   "'2:golden retriever + /photos/pool.jpg - people'. Left out with a filter "
                   "or sort=date|oldest: the photos that pass, by date (browsing)"),
    limit: int = Query(24, ge=1, description="results per page"),
    offset: int = Query(0, ge=0, description="results to skip (paging)"),
    like: list[str] = Query([], description="id of an indexed photo to add to the query as an "
                            "example (repeatable)"),
    unlike: list[str] = Query([], alias="not", description="a sentence to push away "
                              "(repeatable)"),
    min_score: float | None = Query(None, ge=-1, le=1, description=MIN_SCORE_HELP),
    options: SearchOptions = Depends(query_options),
    state: ServerState = Depends(get_state),
) -> dict[str, Any]:
    """Images ranked by how well they match ``q`` among those that pass the filters.
    ``has_more`` says whether a next page exists; ``hidden`` how many of the best matches fell
    below the cutoff (``min_relevance``), ``closest`` the best of those, and ``no_good_match``
    that nothing passed it (ask again with ``min_score=0`` to see them). Without ``q`` (and
    ``like``), with a filter or ``sort=date|oldest``: the photos that pass by date, newest first
    unless ``sort=oldest`` (``terms`` empty, every ``score`` 0, nothing hidden), and ``places``:
    the places of all of them with photo counts."""
    if not q.strip() and not like and not (options.filters or options.sort != "relevance"):
        raise ApiError(400, "the query is empty: type a sentence to search for, or choose a "
                       "filter to list its photos by date")
    _check_page(state, limit, offset)
    _check_terms(like, unlike)
    return await _search(state, q, limit, offset, options, min_score, like, unlike)


@router.post("/search", summary="Search with a sentence and an uploaded example image")
async def search_with_image(
    q: str = Form("", max_length=MAX_TERM_CHARS,
                  description="the sentence (or expression, as for GET); may be empty when an "
                  "image is sent"),
    image: UploadFile | None = File(None, description="an example image (JPEG, PNG, ...): "
                                    "photos like it rank higher"),
    image_weight: float = Form(1.0, gt=0, le=100, description="the weight of the image "
                               "against the sentence (1: equal)"),
    limit: int = Form(24, ge=1, description="results per page"),
    offset: int = Form(0, ge=0, description="results to skip (paging)"),
    like: list[str] = Form([], description="id of an indexed photo to add (repeatable)"),
    unlike: list[str] = Form([], alias="not", description="a sentence to push away "
                             "(repeatable)"),
    min_score: float | None = Form(None, ge=-1, le=1, description=MIN_SCORE_HELP),
    options: SearchOptions = Depends(form_options),
    state: ServerState = Depends(get_state),
) -> dict[str, Any]:
    """``GET /api/search`` with an uploaded image next to the text: the image is embedded and
    added to the query with ``image_weight`` (it is not stored or indexed)."""
    from xmodal.index.query import Term

    _check_page(state, limit, offset)
    _check_terms(like, unlike)
    if image is None and not q.strip() and not like:
        raise ApiError(400, "nothing to search for: give a sentence, an image, or both")
    upload = None
    if image is not None:
        picture = await read_image(image, state.limits, state.decode_gate)
        upload = Term(picture, "image", image_weight)
    return await _search(state, q, limit, offset, options, min_score, like, unlike, upload)


@router.get("/similar", summary="Images similar to an indexed image, with filters")
async def similar(
    id: str = Query(..., min_length=1, description="id of an indexed image"),
    limit: int = Query(12, ge=1),
    offset: int = Query(0, ge=0),
    options: SearchOptions = Depends(query_options),
    state: ServerState = Depends(get_state),
) -> dict[str, Any]:
    """Indexed images ranked by similarity to image ``id`` (the image itself and its copies
    excluded) among those that pass the filters."""
    _check_page(state, limit, offset)
    lib = state.backends

    def work() -> dict[str, Any]:
        lib.indexed_path(id)  # 404 unless indexed: never embed an arbitrary file
        index = lib.index()
        if not hasattr(index, "find"):
            _plain_only(options, options.under is not None)
            hits = [h for h in index.similar(id, offset + limit + 1) if hit_json(h, 0)["id"] != id]
            return _plain(hits[offset:], offset, limit, options, [f"+ {id}"])
        from xmodal.index.query import Term

        return _find(index, [Term(id, "image")], limit, offset, options, None)

    return json_safe({"id": id, **await lib.run(work)})


@router.get("/facets", summary="Years, places and cameras of the indexed photos")
async def facets(state: ServerState = Depends(get_state)) -> dict[str, Any]:
    """What the filters can select, with photo counts: ``years`` ([{year, count}], newest
    first), ``places`` ([{city, region, country, count}]) and ``cameras`` ([{camera, count}])."""
    lib = state.backends

    def work() -> dict[str, Any]:
        index = lib.index()
        if not hasattr(index, "facets"):
            return {"years": [], "places": [], "cameras": []}
        return index.facets()

    return json_safe(await lib.run(work))


@router.get("/filters", summary="The search filters, with the values each can select")
async def filter_list(state: ServerState = Depends(get_state)) -> list[dict[str, Any]]:
    """The registered filters (each is a query parameter of ``/api/search`` and
    ``/api/similar``): ``name``, ``label``, ``help``, ``example``, input ``type`` and bounds, and
    ``suggest``: the values of the indexed photos the filter can select, with photo counts
    ([[value, count], ...]; absent for a collection without metadata)."""
    from xmodal.index.filters import describe

    lib = state.backends

    def work() -> list[dict[str, Any]]:
        index = lib.index()
        return describe(getattr(index, "store", None) if hasattr(index, "facets") else None)

    return json_safe(await lib.run(work))


def filter_bar_html() -> str:
    """The search page's filter fields, one per registered filter, and the lists of values
    they suggest (filled from ``/api/filters``)."""
    from html import escape

    from xmodal.index.filters import all_facets, describe

    fields = []
    for f in describe():
        attrs = {"id": f"f-{f['name']}", "name": f["name"], "data-filter": f["name"],
                 "placeholder": f"e.g. {f['example']}", "title": f["title"], "autocomplete": "off",
                 "aria-label": f["help"]}
        if f["facet"]:
            attrs["list"] = f["facet"]
        if f["type"] == "number":
            attrs.update(type="number", step="any", min=f["min"], max=f["max"])
        text = " ".join(f'{k}="{escape(str(v))}"' for k, v in attrs.items() if v is not None)
        css = f"field {f['css']}".strip()
        fields.append(f'<label class="{css}">{escape(f["label"])}<input {text}></label>')
    lists = "".join(f'<datalist id="{escape(x.key)}"></datalist>' for x in all_facets())
    return "\n".join(fields) + "\n" + lists


def search_page(path: Path) -> Callable[..., Any]:
    """The search page with the filter bar of the registered filters filled in."""
    from fastapi.responses import HTMLResponse

    async def serve_search_page() -> HTMLResponse:
        html = path.read_text().replace("<!-- filter fields -->", filter_bar_html(), 1)
        return HTMLResponse(html)

    return serve_search_page


@router.get(
    "/thumbnail",
    summary="JPEG thumbnail of an indexed image",
    response_class=FileResponse,
    responses={200: {"content": {"image/jpeg": {}}}},
)
async def thumbnail(
    id: str = Query(..., min_length=1, description="id of an indexed image"),
    size: str = Query("small", description="small (256 px) or large (768 px)"),
    state: ServerState = Depends(get_state),
) -> FileResponse:
    """A thumbnail generated on first request and served from the disk cache afterwards."""
    if size not in THUMBNAIL_SIZES:
        raise ApiError(400, f"size must be one of {', '.join(THUMBNAIL_SIZES)}")
    lib = state.backends
    path = await lib.run(lib.indexed_path, id)
    if not path.is_file():
        raise ApiError(404, f"the image file of {id!r} is missing: {path}")
    try:
        from starlette.concurrency import run_in_threadpool

        thumb = await run_in_threadpool(state.thumbnails.get, path, THUMBNAIL_SIZES[size])
    except OSError as exc:
        raise ApiError(422, f"the image file of {id!r} cannot be decoded: {exc}") from None
    return FileResponse(thumb, media_type="image/jpeg", headers={"Cache-Control": "max-age=86400"})
