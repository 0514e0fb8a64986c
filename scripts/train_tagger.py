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
    from xmodal.models.tagger import KeywordHead, flickr8k_pooled_features, select_keyword_head
    from xmodal.provenance import provenance

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
    chosen, rows = select_keyword_head(x["train"], y["train"], x["dev"], y["dev"], vocab.words,
                                       l2s=(1e-5, 1e-4))
    for r in rows:
        print(f"l2={r['l2']} prior_power={r['prior_power']}: dev mean P {r['mean_P']:.3f} R "
              f"{r['mean_R']:.3f} F1 {r['mean_F1']:.3f} words>0 {r['n_words_recall_gt0']}",
              file=sys.stderr)
    best = (chosen["l2"], chosen["prior_power"])
    model = KeywordHead(l2=best[0], prior_power=best[1]).fit(x["train"], y["train"], vocab.words)
    r = annotation_metrics(model.word_scores(x["test"]), y["test"], n=5)
    print(f"selected l2={best[0]} prior_power={best[1]}; test mean P {r['mean_P']:.3f} "
          f"R {r['mean_R']:.3f} F1 {r['mean_F1']:.3f} words>0 {r['n_words_recall_gt0']}",
          file=sys.stderr)
    model.save(args.out, provenance=provenance(
        trained_on="Flickr8K official train split (6,000 images), keywords from captions",
        keyword_vocabulary=vocab.describe(),
        test_annotation={k: r[k] for k in ("mean_P", "mean_R", "mean_F1",
                                           "n_words_recall_gt0", "n_words")},
        command="python scripts/train_tagger.py",
        selection=rows,
    ))
    size = sum(p.stat().st_size for p in args.out.iterdir())
    print(f"saved {args.out} ({size / 1e6:.2f} MB)", file=sys.stderr)


if __name__ == "__main__":
    main()
