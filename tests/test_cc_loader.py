"""The Conceptual Captions (CC18K) loader: layout, fixed seeded-hash split, broken pairs, errors;
and the cc-heldout / cc-dev protocols built from it."""

from __future__ import annotations

import hashlib
import io
import os
from pathlib import Path

import pytest
from PIL import Image

from xmodal.data.conceptual_captions import (
    DEFAULT_DIR,
    N_DEV,
    N_TEST,
    assign_splits,
    cc_dir,
    load_conceptual_captions,
    split_order,
)
from xmodal.errors import XmodalError

N_KEYS = N_TEST + N_DEV + 40


def _jpeg() -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (8, 8), (200, 30, 30)).save(buf, format="JPEG")
    return buf.getvalue()


@pytest.fixture(scope="module")
def cc_root(tmp_path_factory) -> Path:
    """A synthetic CC18K copy in the real layout: root/data/0000N/KEY.{jpg,txt,json}."""
    root = tmp_path_factory.mktemp("cc18k")
    jpg = _jpeg()
    for n in range(N_KEYS):
        shard = root / "data" / f"{n % 3:05d}"
        shard.mkdir(parents=True, exist_ok=True)
        key = f"{n:09d}"
        (shard / f"{key}.jpg").write_bytes(jpg)
        (shard / f"{key}.txt").write_text(f"photo number {n}\n")
        (shard / f"{key}.json").write_text("{}")
    return root


def _break(root: Path) -> dict[str, str]:
    """Four broken pairs in a copy of the synthetic data; key -> expected reason."""
    d = root / "data" / "00000"
    (d / "000000000.txt").unlink()
    (d / "000000003.jpg").unlink()
    (d / "000000006.txt").write_text("  \n")
    (d / "000000009.jpg").write_bytes(b"<html>not found</html>")
    return {"000000000": "caption missing", "000000003": "image missing",
            "000000006": "empty caption", "000000009": "image is not a JPEG"}


def test_layout_records_and_fixed_split(cc_root):
    cc = load_conceptual_captions(cc_root)
    keys = [f"{n:09d}" for n in range(N_KEYS)]
    assert cc.image_ids == keys and cc.n_skipped == 0
    assert [len(cc.split(s)) for s in ("test", "dev", "train")] == [N_TEST, N_DEV, 40]
    order = sorted(keys, key=lambda k: hashlib.sha1(f"cc18k-split-v1:{k}".encode()).hexdigest())
    assert cc.split("test") == order[:N_TEST] and cc.split("dev") == order[N_TEST:N_TEST + N_DEV]
    assert set(cc.split("train")) == set(order[N_TEST + N_DEV:])
    assert cc.image_path("000000004") == cc_root / "data" / "00001" / "000000004.jpg"
    (c,) = cc.captions_of("000000004")
    assert (c.id, c.text) == ("000000004#0", "photo number 4")
    assert cc.caption("000000004#0") is c
    with pytest.raises(XmodalError, match="unknown split"):
        cc.split("val")
    with pytest.raises(XmodalError, match="unknown Conceptual Captions key"):
        cc.image_path("nope")


def test_split_depends_on_keys_only():
    keys = [f"{n:09d}" for n in range(3000)]
    shuffled = keys[::-1]
    assert split_order(keys) == split_order(shuffled)
    s = assign_splits(keys)
    assert not set(s["test"]) & set(s["dev"]) and not set(s["dev"]) & set(s["train"])
    assert len(s["test"]) + len(s["dev"]) + len(s["train"]) == 3000


def test_broken_pairs_are_skipped_counted_and_do_not_move_others(cc_root, tmp_path):
    import shutil

    root = tmp_path / "cc"
    shutil.copytree(cc_root, root)
    broken = _break(root)
    whole = load_conceptual_captions(cc_root)
    with pytest.warns(UserWarning, match="skipped 4 key"):
        cc = load_conceptual_captions(root)
    assert cc.n_skipped == 4 and cc.skipped == broken
    assert not set(broken) & set(cc.image_ids)
    for s in ("test", "dev", "train"):
        assert cc.split(s) == [k for k in whole.split(s) if k not in broken]


def test_path_forms_env_and_clear_error(cc_root, tmp_path, monkeypatch):
    assert cc_dir(cc_root) == cc_root / "data"
    assert cc_dir(cc_root / "data") == cc_root / "data"
    monkeypatch.setenv("XMODAL_CC_DATA", str(cc_root))
    assert cc_dir() == cc_root / "data"
    monkeypatch.setenv("XMODAL_CC_DATA", str(tmp_path / "absent"))
    with pytest.raises(XmodalError, match="XMODAL_CC_DATA.*git archive"):
        load_conceptual_captions()
    with pytest.raises(XmodalError, match="not found"):
        load_conceptual_captions(tmp_path)


def test_protocols_pair_each_image_with_its_caption(cc_root, monkeypatch):
    from xmodal.eval.protocols import get_protocol, list_protocols

    assert {"cc-heldout", "cc-dev"} <= set(list_protocols())
    monkeypatch.setenv("XMODAL_CC_DATA", str(cc_root))
    cc = load_conceptual_captions(cc_root)
    for name, split in (("cc-heldout", "test"), ("cc-dev", "dev")):
        p = get_protocol(name)
        d = p.directions["t2i"]
        assert d.image_ids == cc.split(split)
        assert d.text_ids == [f"{k}#0" for k in cc.split(split)]
        assert d.texts[0] == cc.captions_of(d.image_ids[0])[0].text
        assert d.relevance.nnz == len(d.image_ids) and (d.relevance.diagonal() == 1).all()
        assert set(p.directions) == {"i2t", "t2i"}


REAL = Path(os.environ.get("XMODAL_CC_DATA", DEFAULT_DIR))


@pytest.mark.skipif(not (REAL / "data" / "00000").is_dir() and not (REAL / "00000").is_dir(),
                    reason=f"CC18K data not found at {REAL} (set XMODAL_CC_DATA; recipe in "
                    "xmodal.data.conceptual_captions)")
def test_real_cc18k():
    cc = load_conceptual_captions(REAL)
    assert len(cc.image_ids) + cc.n_skipped == 18643
    assert cc.n_skipped == 0
    assert [len(cc.split(s)) for s in ("test", "dev", "train")] == [1000, 1000, 16643]
    # the held-out split is fixed for good: this digest must never change
    digest = hashlib.sha1("\n".join(cc.split("test")).encode()).hexdigest()
    assert digest == "4799fef1b233f8ffdeda2571ba5fc4f86f64c5b6"
    k = cc.split("test")[0]
    assert cc.image_path(k).is_file() and cc.captions_of(k)[0].text
