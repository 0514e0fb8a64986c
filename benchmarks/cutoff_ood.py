"""Out of domain: does each shipped model's "no good match" cutoff hide the right photo?

The 13 scikit-image photos of the ``skimage-ood`` check (an astronaut, a rocket, coins, a
printed page...; :mod:`xmodal.data.skimage_samples`) are indexed with ``--distractors``
Flickr8K test photos into a fresh photo index per shipped model, and each photo's sentence is
searched as ``xmodal search`` does (k = 5, the model's calibrated default cutoff). Recorded per
model and query: the right photo's rank among all photos, its calibrated relevance, whether the
answer shows it, and whether the answer says "no good match"; then how many of the 13 right
photos are shown, and how many ranked in the top k yet were hidden by the cutoff alone.

    python -m benchmarks.cutoff_ood [--distractors 1000]

Writes ``benchmarks/results/cutoff_ood.json``.
"""

from __future__ import annotations

import argparse
import tempfile
import warnings
from pathlib import Path

from benchmarks._record import record

MODELS = ("dual", "fast")
K = 5


def run_model(spec: str, folder: Path, work: Path) -> dict:
    from xmodal.data.skimage_samples import QUERIES
    from xmodal.factory import load_embedding_model
    from xmodal.index import PhotoIndex

    model_spec = None if spec == "dual" else spec
    index = PhotoIndex(work / f"{spec}.db", model=load_embedding_model(model_spec),
                       model_spec=model_spec)
    try:
        index.update(folder, progress=False)
        rows = {}
        for name, sentence in QUERIES.items():
            everything = index.find(sentence, k=index.stats()["indexed"], min_relevance=0)
            ranked = [Path(r.path).stem for r in everything.results]
            right = everything.results[ranked.index(name)]
            answer = index.find(sentence, k=K)
            rows[name] = {"query": sentence, "rank": ranked.index(name) + 1,
                          "relevance": right.relevance,
                          "shown": any(Path(r.path).stem == name for r in answer.results),
                          "no_good_match": answer.no_good_match, "hidden": answer.hidden}
    finally:
        index.close()
    return {"model_id": index.model_id, "queries": rows,
            "right_photo_shown": sum(r["shown"] for r in rows.values()),
            "right_photo_first": sum(r["rank"] == 1 for r in rows.values()),
            # in the top k by rank, yet not shown: what the cutoff alone took away
            "right_photo_hidden_by_cutoff": sum(r["rank"] <= K and not r["shown"]
                                                for r in rows.values()),
            "no_good_match": sum(r["no_good_match"] for r in rows.values())}


def main(argv: list[str] | None = None) -> None:
    from xmodal.data import load_flickr8k
    from xmodal.data.skimage_samples import photo_files

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--distractors", type=int, default=1000,
                    help="Flickr8K test photos indexed beside the 13 (default 1000)")
    args = ap.parse_args(argv)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = load_flickr8k(None)
    with tempfile.TemporaryDirectory(prefix="xmodal-cutoff-ood-") as tmp:
        work = Path(tmp)
        folder = work / "photos"
        folder.mkdir()
        for name, path in photo_files().items():
            (folder / f"{name}{path.suffix}").symlink_to(path)
        for i in data.split("test")[:args.distractors]:
            (folder / i).symlink_to(data.image_path(i))
        results = {"distractors": args.distractors, "k": K,
                   "models": {m: run_model(m, folder, work) for m in MODELS}}
    path = record("cutoff_ood", results)
    print(path)
    for m, r in results["models"].items():
        print(m, {k: r[k] for k in ("right_photo_shown", "right_photo_first",
                                    "right_photo_hidden_by_cutoff", "no_good_match")})


if __name__ == "__main__":
    main()
