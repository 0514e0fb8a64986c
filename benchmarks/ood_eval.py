"""Out-of-domain evaluation: models on the Conceptual Captions splits and the scikit-image check.

    python -m benchmarks.ood_eval                                  # the shipped model + bridge
    python -m benchmarks.ood_eval --models dual,runs/my-model --name ood_eval_mine
    python -m benchmarks.ood_eval --protocols skimage-ood --models dual

For each model (a registered name or a saved model directory, as ``xmodal eval -m``) and each
protocol (default ``cc-heldout``, ``cc-dev``, ``skimage-ood``) it runs exactly what
``xmodal eval -p PROTOCOL -m MODEL`` runs and records every metric of both directions (and, for
skimage-ood, the rank of each query's photo) in ``benchmarks/results/<name>.json``.
CC18K must be present (``$XMODAL_CC_DATA`` or ``../data/cc18k``; see
``xmodal.data.conceptual_captions``); features come from the default cache (cold: ~3 minutes
for the 2,000 CC images on 2 cores).
"""

from __future__ import annotations

import argparse

from benchmarks._record import record
from xmodal.eval.protocols import get_protocol
from xmodal.eval.runner import run_eval
from xmodal.factory import get_scorer
from xmodal.reproduce.output import log

MODELS = ("dual", "efficientnet-minilm-zeroshot")
PROTOCOLS = ("cc-heldout", "cc-dev", "skimage-ood")


def evaluate(models=MODELS, protocols=PROTOCOLS) -> dict:
    """``{protocol: {model: {"directions": ..., "paper_metrics"?: ..., "notes": ...}}}``."""
    out: dict = {}
    for p in protocols:
        proto = get_protocol(p)
        for m in models:
            rep = run_eval(proto, get_scorer(m, p), model=m, with_curves=False)
            row = {"directions": rep["directions"], "n_queries": rep["n_queries"]}
            if rep.get("paper_metrics"):
                row["paper_metrics"] = rep["paper_metrics"]
            out.setdefault(p, {})[m] = row
            t2i = rep["directions"]["t2i"]
            log(f"{p} / {m}: t2i R@1 {100 * t2i['R@1']:.1f} R@10 {100 * t2i['R@10']:.1f}")
        out[p]["notes"] = proto.notes
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=",".join(MODELS),
                    help="comma-separated model names or saved model directories")
    ap.add_argument("--protocols", default=",".join(PROTOCOLS), help="comma-separated protocols")
    ap.add_argument("--name", default="ood_eval", help="result file name (without .json)")
    args = ap.parse_args()
    res = evaluate(tuple(args.models.split(",")), tuple(args.protocols.split(",")))
    print(record(args.name, res))


if __name__ == "__main__":
    main()
