"""Train the shipped ``xmodal tag`` model: a keyword head on pooled EfficientNet-Lite0 features.

    python scripts/train_tagger.py                      # writes src/xmodal/assets/tag/
    python scripts/train_tagger.py --out /tmp/my_tagger --min-images 10

Vocabulary: content lemmas in the captions of >= ``--min-images`` Flickr8K training images
(:mod:`xmodal.features.keywords`). The L2 penalty and the word-prior power are chosen on the
official dev split by mean per-word F1 of top-5 annotation; the model is fit on the 6,000
training images (the same model as the neural row of ``reports/relevance_models.md``).
The saved model is float16 weights in ``arrays.npz`` plus ``config.json`` (no pickle).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--out", type=Path, default=ROOT / "src" / "xmodal" / "assets" / "tag")
    ap.add_argument("--min-images", type=int, default=25)
    ap.add_argument("--data", default=None)
    args = ap.parse_args()

    from xmodal.data import load_flickr8k
    from xmodal.eval.metrics import annotation_metrics
    from xmodal.features.keywords import build_keyword_vocabulary, image_keyword_matrix
    from xmodal.models.tagger import KeywordHead, flickr8k_pooled_features

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f8 = load_flickr8k(args.data, judgments=False)
    vocab = build_keyword_vocabulary(f8, f8.split("train"), min_images=args.min_images)
    pooled = flickr8k_pooled_features(f8)
    x, y = {}, {}
    for s in ("train", "dev", "test"):
        ids = f8.split(s)
        x[s] = pooled["pooled"][np.array([pooled["index"][i] for i in ids])]
        y[s] = image_keyword_matrix(f8, ids, vocab)
    best, best_f1, models, rows = None, -1.0, {}, []
    for l2 in (1e-5, 1e-4):
        m = models[l2] = KeywordHead(l2=l2).fit(x["train"], y["train"], vocab.words)
        for g in (0.0, 0.25, 0.5, 0.75, 1.0):
            m.prior_power = g
            r = annotation_metrics(m.word_scores(x["dev"]), y["dev"], n=5)
            rows.append({"l2": l2, "prior_power": g, **{k: round(r[k], 4) for k in (
                "mean_P", "mean_R", "mean_F1", "n_words_recall_gt0")}})
            print(f"l2={l2} prior_power={g}: dev mean P {r['mean_P']:.3f} R {r['mean_R']:.3f} "
                  f"F1 {r['mean_F1']:.3f} words>0 {r['n_words_recall_gt0']}", file=sys.stderr)
            if r["mean_F1"] > best_f1:
                best, best_f1 = (l2, g), r["mean_F1"]
    model = models[best[0]]
    model.prior_power = best[1]
    r = annotation_metrics(model.word_scores(x["test"]), y["test"], n=5)
    print(f"selected l2={best[0]} prior_power={best[1]}; test mean P {r['mean_P']:.3f} "
          f"R {r['mean_R']:.3f} F1 {r['mean_F1']:.3f} words>0 {r['n_words_recall_gt0']}",
          file=sys.stderr)
    model.save(
        args.out,
        trained_on="Flickr8K official train split (6,000 images), keywords from captions",
        keyword_vocabulary=vocab.describe(),
        test_annotation={k: r[k] for k in ("mean_P", "mean_R", "mean_F1",
                                           "n_words_recall_gt0", "n_words")},
        command="python scripts/train_tagger.py",
        selection=rows,
    )
    size = sum(p.stat().st_size for p in args.out.iterdir())
    print(f"saved {args.out} ({size / 1e6:.2f} MB)", file=sys.stderr)


if __name__ == "__main__":
    main()
