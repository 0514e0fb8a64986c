"""Exactness against the authors' reference code (the ``eccv-caption`` package) as an oracle.

For every query of the ECCV Caption, CxC and original COCO-5K positives, a random ranking over
the full 5,000-image / 25,000-caption gallery is scored both by xmodal and by eccv-caption's own
metric functions; every metric it computes (R@K, R-Precision, mAP@R) must agree to 1e-9.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

eccv_caption = pytest.importorskip("eccv_caption")

from xmodal.eval.metrics import retrieval_metrics  # noqa: E402
from xmodal.eval.protocols import get_protocol  # noqa: E402

# eccv-caption only ever reads the first max(K, R) items of a ranked list (R <= 48 positives),
# so passing each query's top TOP items of the full ranking gives it exactly the same input.
TOP = 100


@pytest.fixture(scope="module")
def setup():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from eccv_caption import Metrics
        from eccv_caption._metrics import compute_eccv_metrics, compute_r_at_k

        metrics = Metrics()
    protocols = {name: get_protocol(name) for name in ("eccv", "cxc", "coco5k")}
    p = protocols["coco5k"]
    n_img, n_txt = len(p.directions["i2t"].image_ids), len(p.directions["i2t"].text_ids)
    assert (n_img, n_txt) == (5000, 25000)
    rng = np.random.default_rng(20221022)
    scores = rng.random((n_img, n_txt))  # float64: ties are practically impossible

    def top_items(s):
        part = np.argpartition(-s, TOP, axis=1)[:, :TOP]
        order = np.argsort(-np.take_along_axis(s, part, axis=1), axis=1, kind="stable")
        return np.take_along_axis(part, order, axis=1)

    top = {"i2t": top_items(scores), "t2i": top_items(np.ascontiguousarray(scores.T))}
    image_ids = [int(i) for i in p.directions["i2t"].image_ids]
    caption_ids = [int(c) for c in p.directions["i2t"].text_ids]
    retrieved = {
        "i2t": {image_ids[q]: [caption_ids[j] for j in row] for q, row in enumerate(top["i2t"])},
        "t2i": {caption_ids[q]: [image_ids[j] for j in row] for q, row in enumerate(top["t2i"])},
    }
    gts = {"eccv": metrics.eccv_gts, "cxc": metrics.cxc_gts, "coco5k": metrics.coco_gts}
    return scores, protocols, retrieved, gts, compute_eccv_metrics, compute_r_at_k


@pytest.mark.slow
@pytest.mark.parametrize("source", ["eccv", "cxc", "coco5k"])
@pytest.mark.parametrize("direction", ["i2t", "t2i"])
def test_matches_eccv_caption(setup, source, direction):
    scores, protocols, retrieved, gts, compute_eccv_metrics, compute_r_at_k = setup
    gt = gts[source][direction]
    assert max(len(v) for v in gt.values()) < TOP
    d = protocols[source].directions[direction]
    ours = retrieval_metrics(d.query_scores(scores), d.query_relevance, ks=(1, 5, 10))
    assert ours["n_queries"] == len(gt)
    for k in (1, 5, 10):
        ref = compute_r_at_k(retrieved[direction], gt, K=k)
        assert abs(ours[f"R@{k}"] - ref) < 1e-9, (k, ours[f"R@{k}"], ref)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = compute_eccv_metrics(retrieved[direction], gt)
    assert abs(ours["R-P"] - ref["eccv_rprecision"]) < 1e-9
    assert abs(ours["mAP@R"] - ref["eccv_map_at_r"]) < 1e-9
    assert abs(ours["R@1"] - ref["eccv_r1"]) < 1e-9
