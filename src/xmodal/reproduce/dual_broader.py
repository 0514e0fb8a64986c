"""The dual encoder's third- and fourth-round variants (issue 17): broader training data and
stronger frozen encoders, each a set of ``TrainConfig`` overrides, and their selection score.

Both sides read this: :func:`xmodal.reproduce.dual.broader` trains the variants and
:mod:`xmodal.reproduce.dual_report` renders their table, so neither imports the other.
"""

from __future__ import annotations

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


def mean_r1(split_scores: dict) -> float:
    """Mean R@1 of both directions on one split."""
    return 0.5 * (split_scores["i2t_R@1"] + split_scores["t2i_R@1"])
