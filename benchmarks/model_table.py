"""One table of speed against quality per photo-search model (issue 32 item 6).

    python -m benchmarks.model_table                         # measure speed, read quality, write
    python -m benchmarks.model_table --photos 20 --camera-photos 2 --searches 1 \\
        --name model_table_smoke --no-docs                   # a smoke run (nothing shipped)
    python -m benchmarks.model_table --render                # README + docs from the stored JSON
    python -m benchmarks.model_table --quality dual fast     # a test look: model_quality.json
    python -m benchmarks.model_table --import-existing       # earlier test numbers, no new look
    python -m benchmarks.model_table --quality efficientnet-minilm-zeroshot --protocols skimage-ood

Rows: ``dual`` (the default; its image tower runs int8 when that tower ships, see
:func:`xmodal.features.towers.image_precision`, and then a row ``dual (fp32 tower)`` runs
with ``XMODAL_INT8=0``), ``fast`` and ``efficientnet-minilm-zeroshot`` (the training-free
bridge), each resolved by :func:`xmodal.factory.load_embedding_model`; a spec it cannot load
is skipped, with the reason in the JSON.

Speed, measured by this run, each in fresh ``python -m xmodal`` processes timed by wall clock
with their peak resident memory (``/usr/bin/time``, :func:`benchmarks.cold_search.timed`):

- images/s: ``xmodal index FOLDER --db NEW.db --model SPEC -q`` on 400 Flickr8K test photos
  (224 px) and on 100 12-MP JPEGs made as ``benchmarks.index_profile``'s ``camera12mp_grain``
  (upscaled photos with grain, about 3.8 MB each); empty feature cache, encoders exported by a
  warm-up index of a few photos first; the peak memory column is the 224-px run's;
- query ms: ``model.embed_texts([caption])`` in this process, distinct Flickr8K dev captions,
  median of 20 after a warm-up;
- cold search s: ``xmodal search TEXT --db DB --model SPEC -k 5`` on the 400-photo index, a
  new text each time (no cached query), median of the searches after the first;
- files MB: the model's saved directory (the bridge has none) plus the ONNX files it runs.

Quality is never computed by the table run: it is read from
``benchmarks/results/model_quality.json`` (the latest record of each row), which ``--quality``
writes by evaluating ``flickr8k-5cap``, ``cc-heldout`` and ``skimage-ood`` (what
``xmodal eval -p P -m SPEC`` computes, through :func:`benchmarks.ood_eval.evaluate`), counting
each row's looks at the test splits (``--protocols``: some of them; a later record replaces
the protocols it looked at); ``--import-existing`` copies the fp32 default's and the bridge's
numbers from ``dual_encoder.json`` and ``ood_eval_skimage.json`` instead (no new look; the
bridge has no skimage-ood numbers there).

Writes ``benchmarks/results/model_table.json`` and the Markdown table between the
``<!-- model-table:start -->`` / ``<!-- model-table:end -->`` markers of ``README.md`` and
``docs/photo-search.md``. A value that could not be had shows as "—", its reason in the JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks._record import RESULTS, record

REPO = Path(__file__).resolve().parents[1]
DOCS = (REPO / "README.md", REPO / "docs" / "photo-search.md")
START, END = "<!-- model-table:start -->", "<!-- model-table:end -->"
QUALITY = "model_quality"
TABLE = "model_table"
SPECS = ("dual", "fast", "efficientnet-minilm-zeroshot")
FP32_ROW = "dual (fp32 tower)"
QUALITY_PROTOCOLS = ("flickr8k-5cap", "cc-heldout", "skimage-ood")
# (key in a row's values, column header)
COLUMNS = (
    ("files_mb", "files MB"),
    ("peak_mb", "peak memory MB (index)"),
    ("images_per_s_224", "images/s 224-px"),
    ("images_per_s_12mp", "images/s 12 MP"),
    ("query_ms", "query ms"),
    ("cold_search_s", "cold search s"),
    ("flickr8k_r1", "flickr8k-5cap R@1 i2t / t2i"),
    ("cc_t2i_r10", "cc-heldout t2i R@10"),
    ("skimage_first_top5", "skimage-ood first / top-5"),
)
MISSING = "—"


@dataclass(frozen=True)
class Row:
    """One line of the table: its name, the ``--model`` spec, extra environment and the
    precision its image tower runs at (None: not a dual encoder)."""

    name: str
    spec: str
    env: dict[str, str] = field(default_factory=dict)
    precision: str | None = None

    @property
    def quality_key(self) -> str:
        """Quality records belong to a spec at a tower precision, not to a row's name."""
        return f"{self.spec}|{self.precision}"


# ----- rendering -------------------------------------------------------------------------------
def cell(key: str, value) -> str:
    """The Markdown text of one value (None: missing)."""
    if value is None:
        return MISSING
    if key == "flickr8k_r1":
        return f"{100 * value[0]:.1f} / {100 * value[1]:.1f}"
    if key == "cc_t2i_r10":
        return f"{100 * value:.1f}"
    if key == "skimage_first_top5":
        return f"{value[0]} / {value[1]} of {value[2]}"
    if key == "peak_mb":
        return f"{value:,.0f}"
    if key == "cold_search_s":
        return f"{value:.2f}"
    return f"{value:,.1f}"


def render_markdown(table: dict) -> str:
    """The Markdown table (and its one-line provenance) of a ``model_table.json``."""
    results = table["results"]
    lines = ["| model | " + " | ".join(h for _, h in COLUMNS) + " |",
             "|---" * (len(COLUMNS) + 1) + "|"]
    for row in results["rows"]:
        values = [cell(k, row["values"].get(k)) for k, _ in COLUMNS]
        lines.append(f"| `{row['model']}` | " + " | ".join(values) + " |")
    s = results["settings"]
    note = (f"Speed: `python -m benchmarks.model_table` at commit {table['commit']} "
            f"({table['date'][:10]}, {s['cpu']}): {s['photos']} Flickr8K test photos, "
            f"{s['camera_photos']} 12 MP JPEGs, fresh processes, encoders exported, empty "
            f"feature cache. Quality: read from `benchmarks/results/{QUALITY}.json` (test "
            f"splits). {MISSING}: not measured, the reason is in "
            f"`benchmarks/results/{table.get('benchmark', TABLE)}.json`.")
    skipped = [f"`{k['spec']}`" for k in results.get("skipped", [])]
    if skipped:
        note += f" Not in the table (could not be loaded): {', '.join(skipped)}."
    return "\n".join(lines) + "\n\n" + note + "\n"


def replace_marked(text: str, body: str) -> str:
    """``text`` with what lies between the model-table markers replaced by ``body``."""
    start, end = text.find(START), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"the markers {START} ... {END} are missing or out of order")
    return text[:start + len(START)] + "\n" + body + text[end:]


def marked(text: str) -> str:
    """What lies between the model-table markers of ``text``."""
    start, end = text.index(START), text.index(END)
    return text[start + len(START) + 1:end]


def write_docs(table: dict, paths=DOCS) -> None:
    body = render_markdown(table)
    for path in paths:
        path.write_text(replace_marked(path.read_text(), body))


# ----- the rows and their models ---------------------------------------------------------------
@contextmanager
def environment(env: dict[str, str]) -> Iterator[None]:
    """``os.environ`` with ``env`` set (children inherit it), restored afterwards."""
    before = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def tower_precision(model) -> str | None:
    """The precision a model's image tower runs at: int8 only for a model that asks for it
    (``image_int8``) when its calibration ships; None for a model without an EfficientNet."""
    from xmodal.features.towers import image_precision

    backbone = getattr(model, "image_backbone", None)
    if backbone is None:
        return None
    return image_precision(backbone) if getattr(model, "image_int8", False) else "fp32"


def rows(specs=SPECS) -> tuple[list[Row], list[dict]]:
    """The table's rows, and ``{"spec", "reason"}`` for each spec the factory cannot load."""
    from xmodal.errors import XmodalError
    from xmodal.factory import load_embedding_model

    out, skipped = [], []
    for spec in specs:
        try:
            model = load_embedding_model(spec)
        except XmodalError as exc:
            skipped.append({"spec": spec, "reason": str(exc)})
            continue
        precision = tower_precision(model)
        out.append(Row(spec, spec, {}, precision))
        if spec == "dual" and precision == "int8":
            out.append(Row(FP32_ROW, spec, {"XMODAL_INT8": "0"}, "fp32"))
    return out, skipped


def model_dir(spec: str) -> Path | None:
    """The saved directory of a spec's model; None for the bridge (no files of its own) and
    for a spec whose directory this table cannot tell."""
    from xmodal.models.dual import DEFAULT_MODEL_DIR

    if spec in ("dual", "default"):
        return Path(DEFAULT_MODEL_DIR)
    if Path(spec).expanduser().is_dir():
        return Path(spec).expanduser()
    shipped = Path(DEFAULT_MODEL_DIR).parent / spec
    if (shipped / "config.json").is_file():
        return shipped
    from xmodal.recipes.settings import all_settings

    setting = all_settings().get(spec)
    inner = setting.feature_params.get("spec") if setting is not None else None
    return model_dir(inner) if inner and inner != spec else None


def files_mb(row: Row, model) -> tuple[float | None, dict]:
    """(MB, what was counted) of the model's directory and the ONNX files it runs: called with
    ``XMODAL_CACHE`` set to the cache its warm-up index exported them to."""
    from xmodal.features.towers import image_tower, text_tower

    counted: dict[str, float] = {}
    folder = model_dir(row.spec)
    if folder is not None:
        counted[os.path.relpath(folder, REPO)] = sum(f.stat().st_size for f in folder.rglob("*")
                                                     if f.is_file())
    elif row.spec != "efficientnet-minilm-zeroshot":
        return None, {"reason": f"the saved directory of {row.spec!r} is not known"}
    backbone, text = getattr(model, "image_backbone", None), getattr(model, "text_encoder", None)
    if backbone is None or text not in ("mpnet", "minilm"):
        return None, {"reason": "not a dual encoder: its exported files are not known"}
    if row.precision == "int8":
        from xmodal.features.int8 import asset_path

        files = [image_tower(backbone).path("int8"), asset_path(backbone)]
    else:
        files = [image_tower(backbone).path("fp32")]
    files.append(text_tower(text).path())
    for f in files:
        if not f.is_file():
            return None, {"reason": f"{f} is missing after the warm-up index"}
        counted[f.name] = f.stat().st_size
        weights = f.with_name(f"{f.name}.data")  # an export with its weights beside it
        if weights.is_file():
            counted[weights.name] = weights.stat().st_size
    return round(sum(counted.values()) / 1e6, 1), {k: round(v / 1e6, 2) for k, v in
                                                   counted.items()}


# ----- speed -----------------------------------------------------------------------------------
def captions(n: int, skip: int = 0) -> list[str]:
    """``n`` distinct Flickr8K dev captions (never the test split's)."""
    from xmodal.data.flickr8k import load_flickr8k

    data = load_flickr8k(judgments=False)
    texts = list(dict.fromkeys(c.text for i in data.split("dev") for c in data.captions_of(i)))
    return texts[skip:skip + n]


def index_run(row: Row, folder: Path, db: Path, cache: Path, export: Path) -> dict:
    """One timed ``xmodal index`` process on an empty feature cache with the exports copied."""
    from benchmarks.cold_search import timed

    if export.is_dir():  # before xmodal prepare, exports lived in the feature cache
        shutil.copytree(export, cache / "onnx")
    with environment({"XMODAL_CACHE": str(cache)}):
        run = timed(["index", str(folder), "--db", str(db), "--model", row.spec, "-q"])
    n = sum(1 for _ in folder.iterdir())
    return {**run, "photos": n, "images_per_s": round(n / run["s"], 2)}


def query_ms(model, texts: list[str]) -> dict:
    """Median ms of ``embed_texts`` of one caption, a new caption each call, after a warm-up."""
    model.embed_texts(["a warm-up query"], progress=False)
    ts = []
    for text in texts:
        t = time.perf_counter()
        model.embed_texts([text], progress=False)
        ts.append(1000 * (time.perf_counter() - t))
    return {"median_ms": round(statistics.median(ts), 2), "n": len(ts)}


def measure(row: Row, sets: dict[str, Path], work: Path, searches: int, query_texts: list[str],
            search_texts: list[str]) -> tuple[dict, dict, dict]:
    """(values, reasons for missing values, details) of a row's speed columns."""
    from benchmarks.cold_search import timed
    from xmodal.factory import load_embedding_model
    from xmodal.paths import models_dir

    values, missing, details = {}, {}, {}
    tag = row.name.replace(" ", "_").replace("(", "").replace(")", "")
    base = {"XMODAL_MODELS": str(models_dir()), "HF_HUB_OFFLINE": "1", **row.env}
    with environment(base):
        model = load_embedding_model(row.spec)
        warm = work / f"warm-{tag}"
        with environment({"XMODAL_CACHE": str(warm)}):
            details["warm_up_index"] = timed(["index", str(sets["warm"]), "--db",
                                              str(work / f"warm-{tag}.db"), "--model", row.spec,
                                              "-q"])
            values["files_mb"], details["files"] = files_mb(row, model)
        if values["files_mb"] is None:
            missing["files_mb"] = details["files"]["reason"]
        export = warm / "onnx"
        db = work / f"flickr-{tag}.db"
        for key, kind, path in (("images_per_s_224", "flickr224", db),
                                ("images_per_s_12mp", "camera12mp_grain", work / f"cam-{tag}.db")):
            if kind not in sets:
                missing[key] = f"no {kind} photos in this run"
                continue
            run = index_run(row, sets[kind], path, work / f"cache-{kind}-{tag}", export)
            details[kind] = run
            values[key] = run["images_per_s"]
        values["peak_mb"] = details["flickr224"]["peak_mb"]
        query_cache = work / f"query-cache-{tag}"
        if export.is_dir():
            shutil.copytree(export, query_cache / "onnx")  # the exports, not the text cache
        with environment({"XMODAL_CACHE": str(query_cache)}):
            details["query"] = query_ms(model, query_texts)
        values["query_ms"] = details["query"]["median_ms"]
        with environment({"XMODAL_CACHE": str(work / f"cache-flickr224-{tag}")}):
            runs = [timed(["search", text, "--db", str(db), "--model", row.spec, "-k", "5"])
                    for text in search_texts[:searches + 1]]
    details["searches"] = runs
    if len(runs) > 1:
        values["cold_search_s"] = round(statistics.median(r["s"] for r in runs[1:]), 3)
    else:
        missing["cold_search_s"] = "one search only: the median is of the searches after the first"
    return values, missing, details


def photo_sets(work: Path, photos: int, camera_photos: int) -> tuple[dict[str, Path], dict]:
    """Folders of Flickr8K test photos (224 px), 12 MP JPEGs and a few warm-up photos, and how
    the 12 MP JPEGs were made (``index_profile.make_sets``' record of them)."""
    from benchmarks.index_profile import DEFAULT_ORIGINALS, make_sets
    from benchmarks.index_speed import photos as flickr_photos

    sets = {"flickr224": flickr_photos(photos, work / "flickr224"),
            "warm": flickr_photos(4, work / "warm")}
    made = {}
    if camera_photos > 0:
        made = make_sets(camera_photos, work, DEFAULT_ORIGINALS, ["camera12mp_grain"])
        made = made["camera12mp_grain"]
        sets["camera12mp_grain"] = made.pop("folder")
    return sets, made


# ----- quality (read, or written by --quality / --import-existing) -----------------------------
def read_results(name: str) -> dict | None:
    path = RESULTS / f"{name}.json"
    return json.loads(path.read_text()) if path.is_file() else None


def latest_quality(records: list[dict]) -> dict[str, dict]:
    """Per :attr:`Row.quality_key`, each protocol's latest result: ``{"metrics", "missing",
    "records"}``, where a record overrides the protocols it looked at (value or reason) and
    ``records`` says which record each protocol's value comes from."""
    merged: dict[str, dict] = {}
    for r in records:
        m = merged.setdefault(r["key"], {"metrics": {}, "missing": {}, "records": {}})
        for p in r.get("protocols", QUALITY_PROTOCOLS):
            m["metrics"].pop(p, None)
            m["missing"].pop(p, None)
            if p in r["metrics"]:
                m["metrics"][p] = r["metrics"][p]
            else:
                m["missing"][p] = r.get("missing", {}).get(p, "not recorded")
            m["records"][p] = {k: r[k] for k in ("date", "commit", "source", "test_looks")}
    return merged


def quality_values(rec: dict | None) -> tuple[dict, dict]:
    """(values, reasons) of the three quality columns from a row's :func:`latest_quality`."""
    keys = ("flickr8k_r1", "cc_t2i_r10", "skimage_first_top5")
    if rec is None:
        reason = f"no record in {QUALITY}.json (python -m benchmarks.model_table --quality ...)"
        return {k: None for k in keys}, {k: reason for k in keys}
    m = rec["metrics"]
    values = {"flickr8k_r1": m.get("flickr8k-5cap"), "cc_t2i_r10": m.get("cc-heldout"),
              "skimage_first_top5": m.get("skimage-ood")}
    reasons = {k: rec.get("missing", {}).get(p, "not recorded") for k, p in
               zip(keys, QUALITY_PROTOCOLS) if values[k] is None}
    return values, reasons


def metrics_of(protocol: str, result: dict):
    """The table's numbers from one protocol's result (``ood_eval.evaluate``'s layout)."""
    if protocol == "flickr8k-5cap":
        d = result["directions"]
        return [d["i2t"]["R@1"], d["t2i"]["R@1"]]
    if protocol == "cc-heldout":
        return result["directions"]["t2i"]["R@10"]
    pm = result["paper_metrics"]
    first, n = (int(x) for x in pm["top1_with_distractors"].split("/"))
    return [first, int(pm["top5_with_distractors"].split("/")[0]), n]


def append_quality(new: list[dict]) -> Path:
    """Append records to ``model_quality.json``, numbering each row's looks at the test splits."""
    old = read_results(QUALITY)
    records = list(old["results"]["records"]) if old else []
    for rec in new:
        before = max((r["test_looks"] for r in records if r["key"] == rec["key"]), default=0)
        rec["test_looks"] = before + (1 if rec["source"] == "evaluated" else 0)
        records.append(rec)
    return record(QUALITY, {"records": records, "protocols": list(QUALITY_PROTOCOLS),
                            "columns": "flickr8k-5cap [i2t R@1, t2i R@1]; cc-heldout t2i R@10; "
                                       "skimage-ood [first, top-5, queries] with the 1,000 "
                                       "Flickr8K test distractors"})


def evaluate_quality(names: list[str], protocols=QUALITY_PROTOCOLS) -> None:
    """``--quality``: evaluate each row (a row name or a spec) on the test protocols."""
    from benchmarks.ood_eval import evaluate
    from xmodal.errors import XmodalError
    from xmodal.provenance import git_commit
    from xmodal.reproduce.output import utc_now

    table_rows, skipped = rows(SPECS + tuple(n for n in names if n not in SPECS + (FP32_ROW,)))
    by_name = {r.name: r for r in table_rows}
    new = []
    for name in names:
        row = by_name.get(name)
        if row is None:
            raise SystemExit(f"{name!r} is not a row here ({sorted(by_name)}; skipped: {skipped})")
        metrics, missing = {}, {}
        with environment({"HF_HUB_OFFLINE": "1", **row.env}):
            for p in protocols:
                try:
                    metrics[p] = metrics_of(p, evaluate([row.spec], [p])[p][row.spec])
                except XmodalError as exc:  # cc-heldout without CC18K on this machine
                    missing[p] = str(exc)
        new.append({"key": row.quality_key, "row": name, "spec": row.spec, "env": row.env,
                    "image_precision": row.precision, "source": "evaluated",
                    "protocols": list(protocols),
                    "date": utc_now(), "commit": git_commit(), "metrics": metrics,
                    "missing": missing})
    print(append_quality(new))


def import_existing() -> None:
    """``--import-existing``: the fp32 default's and the bridge's numbers from the reports'
    result files, when the default model's files are the ones those files measured."""
    from xmodal.models.dual import default_model

    dual = read_results("dual_encoder")
    skimage = read_results("ood_eval_skimage")
    source = f"dual_encoder.json (commit {dual['git_commit']}, {dual['date']})"
    # the weights and settings that rank (calibration.json only maps scores to probabilities)
    weights = ["src/xmodal/assets/dual/arrays.npz", "src/xmodal/assets/dual/config.json"]
    asset = subprocess.run(["git", "log", "-1", "--format=%h", "--", *weights], cwd=REPO,
                           capture_output=True, text=True, check=True).stdout.strip()
    same = subprocess.run(["git", "merge-base", "--is-ancestor", asset, dual["git_commit"]],
                          cwd=REPO).returncode == 0
    if not same:
        raise SystemExit(f"the default model changed at {asset}, after {source}: evaluate it "
                         "with --quality instead")
    int8 = tower_precision(default_model()) == "int8"
    targets = {"dual": Row(FP32_ROW if int8 else "dual", "dual", {}, "fp32"),
               "efficientnet-minilm-zeroshot": Row("efficientnet-minilm-zeroshot",
                                                   "efficientnet-minilm-zeroshot", {}, "fp32")}
    new = []
    for spec, row in targets.items():
        metrics = {p: metrics_of(p, {"directions": dual["test"][p][spec]})
                   for p in ("flickr8k-5cap", "cc-heldout") if spec in dual["test"].get(p, {})}
        origin = {p: source for p in metrics}
        sk = skimage["results"]["skimage-ood"].get(spec)
        if sk is not None:
            metrics["skimage-ood"] = metrics_of("skimage-ood", sk)
            origin["skimage-ood"] = (f"ood_eval_skimage.json (commit {skimage['commit']}, "
                                     f"{skimage['date']})")
        elif spec in dual["ood"]["results"]:
            metrics["skimage-ood"] = metrics_of("skimage-ood",
                                                {"paper_metrics": dual["ood"]["results"][spec]})
            origin["skimage-ood"] = source + ", its ood section"
        missing = {p: "not in the imported files" for p in QUALITY_PROTOCOLS if p not in metrics}
        new.append({"key": row.quality_key, "row": row.name, "spec": spec,
                    "env": {"XMODAL_INT8": "0"} if int8 else {}, "image_precision": "fp32",
                    "protocols": list(QUALITY_PROTOCOLS),
                    "source": "imported", "imported_from": origin,
                    "note": "imported from earlier test runs by --import-existing: no new test "
                            "look", "date": dual["date"], "commit": dual["git_commit"],
                    "metrics": metrics, "missing": missing})
    print(append_quality(new))


# ----- the table run ---------------------------------------------------------------------------
def build_table(args) -> dict:
    from xmodal.reproduce.output import machine

    table_rows, skipped = rows(args.models)
    quality = latest_quality((read_results(QUALITY) or {"results": {"records": []}})
                             ["results"]["records"])
    texts = captions(len(table_rows) * (args.searches + 1 + args.queries))
    work = Path(tempfile.mkdtemp(prefix="xmodal-model-table-", dir="/tmp"))
    out_rows = []
    try:
        sets, camera = photo_sets(work, args.photos, args.camera_photos)
        for k, row in enumerate(table_rows):
            chunk = texts[k * (args.searches + 1 + args.queries):]
            values, missing, details = measure(row, sets, work, args.searches,
                                               chunk[:args.queries], chunk[args.queries:])
            rec = quality.get(row.quality_key)
            q_values, q_missing = quality_values(rec)
            out_rows.append({"model": row.name, "spec": row.spec, "env": row.env,
                             "values": {**values, **q_values}, "missing": {**missing,
                                                                           **q_missing},
                             "quality_records": None if rec is None else rec["records"],
                             "speed": details})
            print(row.name, out_rows[-1]["values"], flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {"rows": out_rows, "skipped": skipped,
            "settings": {"photos": args.photos, "camera_photos": args.camera_photos,
                         "camera_12mp": camera,
                         "searches_after_first": args.searches, "queries": args.queries,
                         "cpu": f"{machine().get('cpu', '?')}, {os.cpu_count()} cores",
                         "load_average_end": round(os.getloadavg()[0], 2)}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--photos", type=int, default=400, help="Flickr8K test photos (224 px)")
    ap.add_argument("--camera-photos", type=int, default=100, help="12 MP JPEGs made (0: none)")
    ap.add_argument("--searches", type=int, default=3, help="cold searches after the first")
    ap.add_argument("--queries", type=int, default=20, help="in-process queries (query ms)")
    ap.add_argument("--models", nargs="+", default=list(SPECS), help="specs to measure")
    ap.add_argument("--name", default=TABLE, help="result file name (benchmarks/results/NAME)")
    ap.add_argument("--no-docs", action="store_true", help="leave README and docs alone")
    ap.add_argument("--render", action="store_true",
                    help="only write README and docs from the stored model_table.json")
    ap.add_argument("--quality", nargs="+", metavar="ROW",
                    help="evaluate these rows (specs, or 'dual (fp32 tower)') on the test "
                         "protocols and append them to model_quality.json")
    ap.add_argument("--protocols", nargs="+", default=list(QUALITY_PROTOCOLS),
                    choices=QUALITY_PROTOCOLS, help="with --quality: the protocols to look at")
    ap.add_argument("--import-existing", action="store_true",
                    help="import the fp32 default's and the bridge's earlier test numbers")
    args = ap.parse_args()
    if args.quality:
        return evaluate_quality(args.quality, args.protocols)
    if args.import_existing:
        return import_existing()
    if not args.render:
        record(args.name, build_table(args))
    if not args.no_docs:
        write_docs(read_results(args.name))


if __name__ == "__main__":
    main()
