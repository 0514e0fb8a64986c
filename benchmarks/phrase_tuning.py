"""Stage 3 of the default model: short-query heads (issue 40, item 3). Trains them
(:mod:`xmodal.recipes.dual_phrases`) and records, per configuration and epoch, the short-query
dev mAP, the Flickr8K / CC18K dev recalls and the skimage-ood ranks.

    python -m benchmarks.phrase_tuning                        # the shipped recipe, ~3 minutes
    python -m benchmarks.phrase_tuning --configs 1,0,8,0 1,4,8,0 --name phrase_tuning_grid
    python -m benchmarks.phrase_tuning --save /tmp/dual-stage3   # also write the chosen model

Each run starts from the default model without its short-query heads (the model as stage 2
left it) and trains a second set of text heads for queries of at most three words; sentences
and photos keep the shipped heads, so their vectors do not change. ``--configs`` lists runs as
PHRASE,KEEP,ANCHOR[,CAPTION] loss weights. The first run embeds the 22,643 training photos
(about 6 minutes on a 2-core Intel Xeon), parses their captions with spaCy and encodes them
(about 12 minutes); all three are cached.

Dev numbers are routed as search routes them: short queries (and the few captions of at most
three words) through the new heads, other texts through the shipped ones. Selection, on dev
only: the largest short-query dev mAP among the epochs whose Flickr8K and CC18K dev mean R@1
stay within ``--tolerance`` points of the warm start's and whose skimage-ood top-5 count (the 13
sample photos among the first 1,000 Flickr8K test photos, ``benchmarks.phrasing_variants``)
does not fall. No run kept the first-rank count (11 of 13: "a brick wall" falls to 3-5), so
that is recorded, not required. Results: ``benchmarks/results/phrase_tuning.json``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchmarks._record import machine, record


def ood_ranks(model, key: str, members) -> dict[str, int]:
    """The rank of each skimage sample photo for its own query, among the 13 samples and the
    first 1,000 Flickr8K test photos (1 + photos scoring at least as high)."""
    from benchmarks.phrasing_variants import ood_photos, sample_ranks
    from xmodal.data.skimage_samples import QUERIES
    from xmodal.features.text_encoder import encode_texts
    from xmodal.paths import cache_dir
    from xmodal.models.dual import is_short_query
    from xmodal.recipes.dual_phrases import routed

    names, O = ood_photos(model, key, cache_dir() / "short_queries" / "phrasing_variants")
    texts = list(QUERIES.values())
    T = routed(model, members, encode_texts(texts, encoder=model.text_encoder, progress=False),
               np.array([is_short_query(t, model.short_max_words_) for t in texts]))
    S = T @ O.T
    return sample_ranks(S, names)


def main(argv: list[str] | None = None) -> None:
    from xmodal.factory import load_embedding_model
    from xmodal.features.text_encoder import encode_texts
    from xmodal.index.photo_index import model_id
    from xmodal.recipes import dual_phrases as dp

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    shipped = ",".join(str(dp.SHIPPED_STAGE3[k]) for k in ("phrase_weight", "keep_weight",
                                                            "anchor_weight", "caption_weight"))
    ap.add_argument("--configs", nargs="+", default=[shipped],
                    help="runs as PHRASE,KEEP,ANCHOR[,CAPTION] weights (CAPTION 1 when left "
                         "out; 0,0,0: the caption loss alone)")
    ap.add_argument("--epochs", type=int, default=dp.SHIPPED_STAGE3["epochs"])
    ap.add_argument("--lr", type=float, default=dp.SHIPPED_STAGE3["lr"])
    ap.add_argument("--min-photos", type=int, default=dp.SHIPPED_STAGE3["min_photos"])
    ap.add_argument("--tolerance", type=float, default=0.5,
                    help="dev mean R@1 may fall this many points below the warm start's")
    ap.add_argument("--train-only", nargs="*", default=list(dp.SHIPPED_STAGE3["train_only"]),
                    help="the layers of the short-query heads that learn (none named: all); the "
                         "others are shared with the sentence heads and not stored twice")
    ap.add_argument("--mix", type=float, default=0.0,
                    help="the sentence heads' share mixed into a short query's vector")
    ap.add_argument("--save", default=None, help="write the selected model to this folder")
    ap.add_argument("--name", default="phrase_tuning")
    args = ap.parse_args(argv)

    train_only = tuple(args.train_only) or None
    model = dp.warm_start(load_embedding_model(None))
    key = model_id(model, None)
    t0 = time.time()
    vecs, cap_feats, owner, phrases, phrase_feats = dp.training_set(
        model, key, min_photos=args.min_photos)
    kinds = {k: phrases.kinds.count(k) for k in sorted(set(phrases.kinds))}
    print(f"{len(vecs)} training photos, {len(cap_feats)} captions, {len(phrases.texts)} "
          f"phrases {kinds} ({time.time() - t0:.0f} s)")
    evaluate = dp.dev_evaluator(model, key)
    runs, best = [], None
    base = None
    anchors = encode_texts(dp.anchor_texts(), encoder=model.text_encoder)
    for config in args.configs:
        w, keep, anchor, caption = [float(x) for x in config.split(",")] + [1.0][:4 - len(
            config.split(","))]
        members = dp.text_members(model)
        history = dp.tune(members, vecs, cap_feats, owner, phrase_feats, phrases,
                          phrase_weight=w, keep_weight=keep, anchor_feats=anchors,
                          anchor_weight=anchor, caption_weight=caption, epochs=args.epochs,
                          lr=args.lr, train_only=train_only,
                          batch_images=dp.SHIPPED_STAGE3["batch_images"],
                          seed=dp.SHIPPED_STAGE3["seed"], eval_fn=evaluate)
        for epoch, state, dev in history:
            members.load_state_dict(state)
            row = {"phrase_weight": w, "keep_weight": keep, "anchor_weight": anchor,
                   "caption_weight": caption, "epoch": epoch, **dev,
                   "ood_ranks": ood_ranks(model, key, members)}
            row["ood_first"] = sum(r == 1 for r in row["ood_ranks"].values())
            row["ood_top5"] = sum(r <= 5 for r in row["ood_ranks"].values())
            if base is None and epoch == 0:
                base = row
            row["map_gain"] = round(row["short_map"] - base["short_map"], 4)
            row["ood_no_worse"] = all(row["ood_ranks"][n] <= base["ood_ranks"][n]
                                      for n in base["ood_ranks"])
            # the first-rank count could not be kept by any run (see the results); the top 5
            # is what selection holds, with the sentence recalls
            row["eligible"] = (row["score"] >= base["score"] - args.tolerance
                               and row["ood_top5"] >= base["ood_top5"])
            runs.append(row)
            print({k: v for k, v in row.items() if k != "ood_ranks"})
            if epoch > 0 and row["eligible"] and (best is None
                                                  or row["short_map"] > best[0]["short_map"]):
                best = (row, {k: v.clone() for k, v in state.items()})
    result = {"benchmark": "phrase_tuning", "model_id": key,
              "training": {"photos": int(len(vecs)), "captions": int(len(cap_feats)),
                           "train_only": train_only,
                           "phrases": len(phrases.texts), "phrases_by_kind": kinds,
                           "min_photos": args.min_photos, "epochs": args.epochs,
                           "lr": args.lr},
              "tolerance": args.tolerance, "warm_start": base, "runs": runs,
              "selected": best[0] if best else None, "machine": machine(),
              "seconds": round(time.time() - t0)}
    if best is not None and args.save:
        members = dp.text_members(model)
        members.load_state_dict(best[1])
        prov = {"recipe": "xmodal.recipes.dual_phrases",
                **{k: best[0][k] for k in ("phrase_weight", "keep_weight", "anchor_weight",
                                           "caption_weight", "epoch")},
                "lr": args.lr, "min_photos": args.min_photos, "train_only": train_only,
                "dev": {k: best[0][k] for k in best[0] if k not in ("ood_ranks",)},
                "mix": args.mix, "image_space": key}
        tuned = dp.with_short_heads(model, members, args.mix, prov)
        tuned.save(args.save, weights="int8")
        result["saved"] = args.save
    print(record(args.name, result))


if __name__ == "__main__":
    main()
