"""Querybank normalisation (inverted softmax): against its definition, on a hub, and its errors."""

import numpy as np
import pytest

from xmodal.errors import XmodalError
from xmodal.models.querybank import (
    CompactImageBank,
    QuerybankNorm,
    compress_bank,
    expand_bank,
)
from xmodal.recipes.querybank import check_disjoint


def _unit(x):
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _data(seed=0, d=8):
    rng = np.random.default_rng(seed)
    return (_unit(rng.normal(size=(6, d))), _unit(rng.normal(size=(9, d))),
            _unit(rng.normal(size=(20, d))), _unit(rng.normal(size=(30, d))))


def test_rankings_equal_the_inverted_softmax_definition():
    images, texts, bank_i, bank_t = _data()
    beta = 7.0
    S = QuerybankNorm(beta).fit(bank_i, bank_t).normalize(images, texts)
    # image -> text: softmax of the image's score against each caption's mass over bank images
    for i in range(len(images)):
        p = [np.exp(beta * images[i] @ texts[t])
             / sum(np.exp(beta * b @ texts[t]) for b in bank_i) for t in range(len(texts))]
        assert list(np.argsort(p)) == list(np.argsort(S[i]))
    # text -> image: each image's mass over bank captions
    for t in range(len(texts)):
        p = [np.exp(beta * images[i] @ texts[t])
             / sum(np.exp(beta * q @ images[i]) for q in bank_t) for i in range(len(images))]
        assert list(np.argsort(p)) == list(np.argsort(S[:, t]))


def test_offsets_are_log_sum_exp_over_the_bank_divided_by_beta():
    images, texts, bank_i, bank_t = _data(1)
    qb = QuerybankNorm(beta=3.0, chunk=4).fit(bank_i, bank_t)
    want = np.log(np.exp(3.0 * texts @ bank_i.T).sum(1)) / 3.0
    np.testing.assert_allclose(qb.text_offsets(texts), want, rtol=1e-6)
    want = np.log(np.exp(3.0 * images @ bank_t.T).sum(1)) / 3.0
    np.testing.assert_allclose(qb.image_offsets(images), want, rtol=1e-6)


def test_a_hub_caption_loses_the_top_of_every_ranking():
    rng = np.random.default_rng(2)
    d = 16
    own = _unit(rng.normal(size=(5, d)))
    hub = _unit(rng.normal(size=(1, d)))
    images = _unit(0.6 * own + hub)  # every image leans towards the hub direction
    texts = np.concatenate([_unit(own + 0.2 * rng.normal(size=(5, d))), hub])
    assert list((images @ texts.T).argmax(1)) == [5] * 5  # by cosine the hub caption wins all
    bank_i = _unit(rng.normal(size=(50, d)) * 0.3 + hub)  # training images lean the same way
    qb = QuerybankNorm(beta=10).fit(bank_i, _unit(rng.normal(size=(50, d))))
    assert list(qb.normalize(images, texts).argmax(1)) == [0, 1, 2, 3, 4]


def test_clear_errors():
    images, texts, bank_i, bank_t = _data()
    with pytest.raises(XmodalError, match="not fitted"):
        QuerybankNorm().normalize(images, texts)
    with pytest.raises(XmodalError, match="non-empty"):
        QuerybankNorm().fit(bank_i[:0], bank_t)
    with pytest.raises(XmodalError, match="8-d but bank captions are 4-d"):
        QuerybankNorm().fit(bank_i, bank_t[:, :4])
    with pytest.raises(XmodalError, match="beta must be positive"):
        QuerybankNorm(beta=0).fit(bank_i, bank_t)
    with pytest.raises(XmodalError, match="the bank is 8-d"):
        QuerybankNorm().fit(bank_i, bank_t).normalize(images[:, :4], texts[:, :4])


def test_images_of_the_bank_are_refused(tmp_path):
    bank = [tmp_path / "a.jpg", tmp_path / "b.jpg"]
    check_disjoint(bank, [tmp_path / "c.jpg", str(tmp_path / "d.jpg")])
    with pytest.raises(XmodalError, match="1 of the images to score are in the querybank"):
        check_disjoint(bank, [tmp_path / "c.jpg", str(tmp_path / "b.jpg")])


def test_a_weighted_row_counts_as_that_many_copies():
    images, texts, bank_i, bank_t = _data(3)
    copies = QuerybankNorm(5.0).fit(np.repeat(bank_i[:4], [1, 2, 3, 4], axis=0), bank_t[:3])
    weighted = QuerybankNorm(5.0).fit(bank_i[:4], np.repeat(bank_t[:3], [2, 2, 5], axis=0),
                                      image_log_weights=np.log([1, 2, 3, 4]))
    np.testing.assert_allclose(weighted.text_offsets(texts), copies.text_offsets(texts),
                               rtol=1e-6)
    weighted.fit(bank_i, bank_t[:3], text_log_weights=np.log([2, 2, 5]))
    copies.fit(bank_i, np.repeat(bank_t[:3], [2, 2, 5], axis=0))
    np.testing.assert_allclose(weighted.image_offsets(images), copies.image_offsets(images),
                               rtol=1e-6)
    with pytest.raises(XmodalError, match="log-weights must be 3 finite numbers"):
        QuerybankNorm().fit(bank_i, bank_t[:3], text_log_weights=np.zeros(2))


def test_an_image_bank_alone_reorders_image_to_text_only():
    images, texts, bank_i, _ = _data(3)
    qb = QuerybankNorm(beta=5.0).fit(bank_i, None)
    S, plain = qb.normalize(images, texts), images @ texts.T
    np.testing.assert_array_equal(qb.image_offsets(images), 0.0)
    # each column (a caption's ranking of images) only shifts: text -> image rankings unchanged
    np.testing.assert_allclose(S - plain, (S - plain)[:1].repeat(len(images), 0), atol=1e-6)
    two_sided = QuerybankNorm(beta=5.0).fit(bank_i, _data(4)[3]).normalize(images, texts)
    for i in range(len(images)):  # and image -> text rankings are those of the full bank
        assert list(np.argsort(S[i])) == list(np.argsort(two_sided[i]))


def test_a_compressed_bank_keeps_the_offsets():
    rng = np.random.default_rng(5)
    # a bank that lives near a 6-d subspace of 32-d, as embeddings of one model do
    bank = _unit(rng.normal(size=(300, 6)) @ rng.normal(size=(6, 32))
                 + 0.01 * rng.normal(size=(300, 32)))
    texts = _unit(rng.normal(size=(40, 32)))
    compact = compress_bank(bank, 6)
    assert compact["codes"].dtype == np.int8 and compact["codes"].shape == (300, 6)
    assert compact["basis"].shape == (32, 6)
    np.testing.assert_allclose(expand_bank(compact), bank, atol=0.05)
    want = QuerybankNorm(20.0).fit(bank, None).text_offsets(texts)
    got = QuerybankNorm(20.0).fit(expand_bank(compact), None).text_offsets(texts)
    np.testing.assert_allclose(got, want, atol=0.02)
    with pytest.raises(XmodalError, match="cannot keep 40"):
        compress_bank(bank, 40)


def test_the_compact_bank_scores_as_the_expanded_bank():
    images, texts, bank_i, _ = _data(6, d=16)
    compact = compress_bank(bank_i, 10)
    want = QuerybankNorm(25.0).fit(expand_bank(compact), None).normalize(images, texts)
    got = CompactImageBank(compact, 25.0, chunk=4).normalize(images, texts)
    np.testing.assert_allclose(got, want, atol=1e-5)
    with pytest.raises(XmodalError, match="the bank is 16-d"):
        CompactImageBank(compact, 25.0).text_offsets(texts[:, :4])


def test_describe_subtracts_the_models_caption_offsets():
    """`xmodal describe`, PhotoIndex.describe and POST /api/describe rank with the offsets."""
    from PIL import Image

    from tests.fake_models import ColourModel
    from xmodal.index.photo_index import rank_captions

    class Penalised(ColourModel):  # a querybank that finds captions without green hubs
        def caption_offsets(self, vecs):
            return np.where(vecs[:, 1] < 0.1, 1.0, 0.0)

    picture, pool = Image.new("RGB", (8, 8), (255, 40, 0)), ["a red thing", "a yellow thing"]
    assert [c for c, _ in rank_captions(ColourModel(), picture, pool, 2)] == pool
    ranked = rank_captions(Penalised(), picture, pool, 2)
    assert [c for c, _ in ranked] == pool[::-1]
    plain = dict(rank_captions(ColourModel(), picture, pool, 2))
    assert dict(ranked)["a red thing"] == pytest.approx(plain["a red thing"] - 1.0)
