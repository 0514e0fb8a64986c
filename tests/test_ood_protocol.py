"""The skimage-ood protocol: ranks by hand, the protocol's layout, and reproduce's ood_check on
the same code path."""

from __future__ import annotations

import numpy as np

from xmodal.eval.protocol_builders import ood_ranks


def test_ood_ranks_by_hand():
    # images: photo a, photo b, distractor 1, distractor 2; texts: query a, query b
    S = np.array([[0.9, 0.1],
                  [0.5, 0.3],
                  [0.95, 0.2],
                  [0.1, 0.3]])  # ties with b's photo count against it
    r = ood_ranks({"t2i": S}, ["a", "b"])
    assert r["photos_only"] == {"a": 1, "b": 1}
    assert r["with_flickr8k_test_distractors"] == {"a": 2, "b": 2}
    assert r["top1_photos_only"] == "2/2"
    assert r["top1_with_distractors"] == "0/2" and r["top5_with_distractors"] == "2/2"
    S[1, 0] = 0.99  # b's photo now beats a's photo for query a
    assert ood_ranks({"t2i": S}, ["a", "b"])["photos_only"]["a"] == 2


def test_protocol_layout(flickr8k_root, tmp_path, monkeypatch):
    monkeypatch.setenv("XMODAL_CACHE", str(tmp_path))
    from PIL import Image

    from xmodal.data.skimage_samples import QUERIES, sample_photos
    from xmodal.eval.protocols import get_protocol

    p = get_protocol("skimage-ood", flickr8k_root.parent)
    assert list(p.directions) == ["t2i"]
    d = p.directions["t2i"]
    assert len(d.image_ids) == len(QUERIES) + 1000 and d.texts == list(QUERIES.values())
    assert (d.relevance[: len(QUERIES)].toarray() == np.eye(len(QUERIES), dtype=bool)).all()
    assert d.relevance.nnz == len(QUERIES)
    first = p.dataset.image_path(d.image_ids[0])
    assert first.parent == tmp_path / "skimage_ood"
    # the cached file holds exactly the sample photo's pixels
    assert Image.open(first).convert("RGB").tobytes() == sample_photos()[0].tobytes()
    assert p.dataset.image_path(d.image_ids[-1]).is_file()


def test_ood_check_is_the_protocol(flickr8k_root, monkeypatch):
    """reproduce.dual.ood_check returns the protocol's paper metrics for each model."""
    import xmodal.reproduce.dual as dual

    calls = []

    def fake_scorer(protocol, direction, seed=0):
        calls.append(protocol.name)
        n_img, n_txt = len(direction.image_ids), len(direction.text_ids)
        S = np.zeros((n_img, n_txt))
        S[np.arange(n_txt), np.arange(n_txt)] = 1.0  # every photo first
        S[n_txt, 0] = 2.0  # one distractor beats the first photo
        return S

    monkeypatch.setattr("xmodal.factory.get_scorer", lambda spec, proto: fake_scorer)
    out = dual.ood_check(("fake",), flickr8k_root.parent)
    assert calls == ["skimage-ood"]
    r = out["results"]["fake"]
    assert r["top1_with_distractors"] == "12/13" and r["top1_photos_only"] == "13/13"
    assert r["with_flickr8k_test_distractors"]["astronaut"] == 2
    assert out["queries"] == dict(dual.OOD_QUERIES)


def test_stored_ood_ranks_reproduce(flickr8k_root):
    """The shipped model's ranks in benchmarks/results/dual_encoder.json (what
    reports/dual_encoder.md shows) are what the skimage-ood protocol gives today."""
    import json
    from pathlib import Path

    from xmodal.reproduce.dual import ood_check

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "dual_encoder.json"
    stored = json.loads(path.read_text())["ood"]["results"]["dual"]
    fresh = ood_check(("dual",), flickr8k_root.parent)["results"]["dual"]
    assert fresh == stored
