"""Third round of the dual encoder (issue 17): broader training data, stronger frozen encoders.

Each variant is one full :func:`xmodal.recipes.dual.train_dual` run (epoch and bridge weight
selected on the dev splits) on Flickr8K train, optionally joined by the Conceptual Captions 18k
train split (:mod:`xmodal.data.conceptual_captions`). Selection uses Flickr8K dev and, with CC,
the CC dev split too (mean of both splits' mean R@1). Nothing here reads a test split: the
chosen variant is evaluated once, by ``xmodal eval``, after it is shipped.

    from xmodal.reproduce.dual_broader import broader
    lines = broader(["f8k", "cc"], models_dir="/tmp/dual-variants")
"""

from __future__ import annotations

import json
from pathlib import Path

from xmodal.reproduce.output import log

# variant -> (TrainConfig overrides, train on CC too)
BROADER: dict[str, tuple[dict, bool]] = {
    "f8k": ({}, False),  # the recipe shipped before issue 17 (Flickr8K only, 60 epochs)
    "cc_ep30": ({"epochs": 30}, True),
    "cc": ({}, True),
    "cc_h1024": ({"hidden": 1024}, True),
    "cc_d512": ({"dim": 512, "hidden": 1024}, True),
    "cc_drop2": ({"dropout": 0.2}, True),
    "cc_b256": ({"batch_images": 256}, True),
    "cc_hn5": ({"hard_negative_beta": 5.0}, True),
    "cc_lite2": ({"image_backbone": "lite2"}, True),
    "cc_mpnet": ({"text_encoder": "mpnet"}, True),
    "cc_lite2_mpnet": ({"image_backbone": "lite2", "text_encoder": "mpnet"}, True),
    "cc_lite2_mpnet_h1024": ({"image_backbone": "lite2", "text_encoder": "mpnet",
                              "hidden": 1024}, True),
    "cc_lite2_mpnet_ens2": ({"image_backbone": "lite2", "text_encoder": "mpnet",
                             "ensemble_size": 2}, True),
    "cc_lite2_mpnet_ep80": ({"image_backbone": "lite2", "text_encoder": "mpnet",
                             "epochs": 80}, True),
    # fourth round (issue 17, toward image->text R@1 35)
    "cc_lite2_mpnet_hn5": ({"image_backbone": "lite2", "text_encoder": "mpnet",
                            "hard_negative_beta": 5.0}, True),
    "cc_lite2_mpnet_flip": ({"image_backbone": "lite2", "text_encoder": "mpnet",
                             "use_flip": True}, True),
    "cc_lite2_mpnet_ens3": ({"image_backbone": "lite2", "text_encoder": "mpnet",
                             "ensemble_size": 3}, True),
    "cc_lite2_mpnet_hn5_ens2": ({"image_backbone": "lite2", "text_encoder": "mpnet",
                                 "hard_negative_beta": 5.0, "ensemble_size": 2}, True),
    "cc_lite2_mpnet_flip_ens2": ({"image_backbone": "lite2", "text_encoder": "mpnet",
                                  "use_flip": True, "ensemble_size": 2}, True),
    "cc_lite2_mpnet_flip_hn5_ens2": ({"image_backbone": "lite2", "text_encoder": "mpnet",
                                      "use_flip": True, "hard_negative_beta": 5.0,
                                      "ensemble_size": 2}, True),
    "cc_lite2_mpnet_flip_hn5_ens3": ({"image_backbone": "lite2", "text_encoder": "mpnet",
                                      "use_flip": True, "hard_negative_beta": 5.0,
                                      "ensemble_size": 3}, True),
}
# the round of each variant: the third up to cc_lite2_mpnet_ep80, the fourth from the next one on
_FOURTH = list(BROADER).index("cc_lite2_mpnet_ep80") + 1
ROUND = {name: 3 if i < _FOURTH else 4 for i, name in enumerate(BROADER)}


def broader(names, data=None, cc_path=None, models_dir: str | Path | None = None) -> list[dict]:
    """Train each named variant; one line per variant with its dev numbers per split, the
    selected epoch and bridge weight and the training time. ``models_dir``: also save each
    model there (``models_dir/NAME``), so the best one can be shipped without retraining."""
    from xmodal.data.conceptual_captions import load_conceptual_captions
    from xmodal.models.dual_train import TrainConfig
    from xmodal.recipes.dual import train_dual

    unknown = [n for n in names if n not in BROADER]
    if unknown:
        from xmodal.errors import XmodalError

        raise XmodalError(f"unknown variants {unknown}; known: {sorted(BROADER)}")
    cc = None
    lines = []
    for name in names:
        over, use_cc = BROADER[name]
        if use_cc and cc is None:
            cc = load_conceptual_captions(cc_path)
        model, rep = train_dual(data, config=TrainConfig(**over), extra={"cc": cc} if use_cc
                                else None, log=lambda *_: None, progress=False)
        line = {"variant": name, "overrides": over, "cc": use_cc,
                "best_epoch": rep["best_epoch"], "w": rep["bridge_weight"],
                "fit_s": rep["train_time_s"], "dev": rep.get("dev_splits", {"dev": rep["dev"]})}
        if models_dir is not None:
            model.save(Path(models_dir) / name)
        lines.append(line)
        log(json.dumps(line))
    return lines


def mean_r1(split_scores: dict) -> float:
    """Mean R@1 of both directions on one split."""
    return 0.5 * (split_scores["i2t_R@1"] + split_scores["t2i_R@1"])


def broader_table(lines: list[dict]) -> list[str]:
    """The report's third-round table: dev R@1 (i2t / t2i) on Flickr8K and CC, R@10 t2i on CC."""
    out = ["Third round: broader data and encoders (dev splits only; Flickr8K `flickr8k-5cap`-style"
           " dev, 1,000 images x 5,000 captions; CC dev, 1,000 images x 1,000 captions):", "",
           "| variant | CC | best epoch | w | fit (s) | F8K dev R@1 | CC dev R@1 | CC dev t2i R@10 |"
           " selection score |", "|---|---|---|---|---|---|---|---|---|"]
    for v in lines:
        f8, cc = v["dev"]["dev"], v["dev"].get("cc_dev")
        score = mean_r1(f8) if cc is None else 0.5 * (mean_r1(f8) + mean_r1(cc))
        cc_r1 = f"{cc['i2t_R@1']:.1f} / {cc['t2i_R@1']:.1f}" if cc else "-"
        cc_r10 = f"{cc['t2i_R@10']:.1f}" if cc else "-"
        epoch = v["best_epoch"]
        epoch = ", ".join(map(str, epoch)) if isinstance(epoch, list) else epoch
        out.append(f"| {v['variant']} | {'yes' if v['cc'] else 'no'} | {epoch} | {v['w']} | "
                   f"{v['fit_s']:.0f} | {f8['i2t_R@1']:.1f} / {f8['t2i_R@1']:.1f} | {cc_r1} | "
                   f"{cc_r10} | {score:.2f} |")
    return out + [""]
