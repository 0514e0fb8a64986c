"""Train the ``xmodal tag`` model on Flickr8K + Conceptual Captions 18K and write its report.

    python scripts/train_tagger.py                      # train, evaluate, write the report
    python scripts/train_tagger.py --install            # ... and replace src/xmodal/assets/tag
                                                        #     if the rule of the report passes
    python scripts/train_tagger.py --install --ship     # ... replace it whatever the rule says
                                                        #     (the shipped tagger: see the report)
    python scripts/train_tagger.py --l2s 1e-6,1e-5,1e-4   # another selection grid
    python scripts/train_tagger.py --out /tmp/my_tagger --min-images 10 \\
        --results /tmp/t --report /tmp/t/tagger.md     # try a setting without touching the repo

A keyword head (logistic, one sigmoid per word) on pooled EfficientNet features of Flickr8K
train + CC18K train; vocabulary: content lemmas in the captions of >= ``--min-images`` training
images; L2 penalty and word-prior power selected on Flickr8K dev + CC dev. The Flickr8K-only
tagger (the recipe shipped before) is trained in the same run for the comparison. Results go to
``benchmarks/results/tagger.json`` and ``reports/tagger.md`` (``xmodal.reproduce.tagger``
explains every number and the replacement rule). Needs Flickr8K (``$XMODAL_DATA``) and CC18K
(``$XMODAL_CC_DATA`` or ``../data/cc18k``); features come from the default cache (cold: about
4 minutes for the 26,734 images on 2 cores). The saved model is float16 weights in
``arrays.npz`` plus ``config.json`` (no pickle).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=None,
                    help="where to save the new tagger (default: $XMODAL_CACHE/tagger/...)")
    ap.add_argument("--install", action="store_true",
                    help="also replace src/xmodal/assets/tag when the replacement rule passes")
    ap.add_argument("--ship", action="store_true",
                    help="with --install: install even when the replacement rule fails (the "
                    "report records the override)")
    ap.add_argument("--min-images", type=int, default=25)
    ap.add_argument("--l2s", default="1e-5,1e-4",
                    help="comma-separated L2 penalties to select from (both taggers)")
    ap.add_argument("--backbone", default=None,
                    help="EfficientNet-Lite backbone of the features (default: the one the "
                    "shipped dual model uses)")
    ap.add_argument("--data", default=None, help="data root holding flickr8k/ (default: "
                    "$XMODAL_DATA)")
    ap.add_argument("--cc-data", default=None, help="CC18K folder (default: $XMODAL_CC_DATA "
                    "or ../data/cc18k)")
    ap.add_argument("--results", type=Path, default=None,
                    help="folder for tagger.json (default: benchmarks/results)")
    ap.add_argument("--report", type=Path, default=None,
                    help="report file (default: reports/tagger.md)")
    args = ap.parse_args()

    from xmodal.errors import XmodalError
    from xmodal.reproduce.tagger import reproduce

    command = "python scripts/train_tagger.py" + "".join(f" {a}" for a in sys.argv[1:])
    try:
        res = reproduce(args.data, args.cc_data, args.backbone, args.min_images, args.out,
                        args.install, args.results, args.report, command,
                        tuple(float(v) for v in args.l2s.split(",")), ship=args.ship)
    except XmodalError as exc:
        sys.exit(f"error: {exc}")
    print(f"saved {res['model_out']}; installed: {res['installed']} "
          f"({res['install_rule']['reason']})", file=sys.stderr)


if __name__ == "__main__":
    main()
