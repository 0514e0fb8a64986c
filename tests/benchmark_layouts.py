"""Tiny benchmark copies in every supported on-disk layout, built in a temporary folder from a
few Flickr8K photos (real files in the real formats; nothing here is committed data).

Each builder takes three source photos and writes the layout with three images of two captions
each. Every photo is tinted towards a colour (red, green, blue) and every caption names its
image's colour, so the colour model of ``tests/fake_models.py`` retrieves perfectly.
``hand_embeddings`` writes an ``.npz`` of hand-chosen embeddings for a layout's ids whose
metrics are worked out in ``HAND_METRICS``.
"""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import numpy as np
from PIL import Image

TINTS = [("red", (255, 0, 0)), ("green", (0, 255, 0)), ("blue", (0, 0, 255))]
CAPTIONS = [[f"a {c} dog runs", f"the {c} photo"] for c, _ in TINTS]

# Image embeddings im0=(1,0), im1=(0,1), im2=(1,1); texts c00=(1,0), c01=(0,1), c10=(0,1),
# c11=(.6,.8), c20=(1,1), c21=(1,.2). Cosines and pessimistic ties (a tie counts against):
# t2i, first relevant rank per caption: 1, 3, 1, 2, 1, 2 -> R@1 3/6, medR 1.5,
#   MAP (1 + 1/3 + 1 + 1/2 + 1 + 1/2) / 6.
# i2t, ranks of the two relevant captions: im0 1 and 6 (c01 ties c10 at 0), im1 2 and 3 (c01
#   ties c10 at 1), im2 1 and 3 -> R@1 2/3, medR 1, R-P 1/2 each, MAP mean of
#   (1 + 2/6)/2, (1/2 + 2/3)/2, (1 + 2/3)/2.
IMAGE_EMB = np.array([[1, 0], [0, 1], [1, 1]], np.float32)
TEXT_EMB = np.array([[1, 0], [0, 1], [0, 1], [0.6, 0.8], [1, 1], [1, 0.2]], np.float32)
HAND_METRICS = {
    "t2i": {"R@1": 0.5, "R@5": 1.0, "medR": 1.5, "MAP": (4 + 1 / 3) / 6, "n": 6},
    "i2t": {"R@1": 2 / 3, "R@5": 1.0, "medR": 1.0, "R-P": 0.5,
            "MAP": ((1 + 2 / 6) / 2 + (1 / 2 + 2 / 3) / 2 + (1 + 2 / 3) / 2) / 3, "n": 3},
}


def flickr8k_photos(flickr8k_root: Path, n: int = 3, offset: int = 0) -> list[Path]:
    return sorted((flickr8k_root / "Flicker8k_Dataset").glob("*.jpg"))[offset:offset + n]


def tinted_bytes(src: Path, k: int, fmt: str = "JPEG") -> bytes:
    im = Image.open(src).convert("RGB")
    im = Image.blend(im, Image.new("RGB", im.size, TINTS[k % 3][1]), 0.85)
    buf = io.BytesIO()
    im.save(buf, fmt, quality=90)
    return buf.getvalue()


def _write(path: Path, data: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return path


def hand_embeddings(path: Path, image_ids: list[str], text_ids: list[str]) -> Path:
    np.savez(path, image_ids=np.array(image_ids), image_emb=IMAGE_EMB,
             text_ids=np.array(text_ids), text_emb=TEXT_EMB)
    return path


# ------------------------------------------------------------------------------------ COCO

def coco_karpathy(root: Path, photos: list[Path], coco_ids: list[int],
                  caption_ids: list[list[int]], captions: list[list[str]] | None = None,
                  extra_train: bool = True) -> Path:
    """``dataset_coco.json`` + ``val2014/COCO_val2014_<id>.jpg``."""
    captions = captions or CAPTIONS
    images = []
    for k, (cid, sids) in enumerate(zip(coco_ids, caption_ids)):
        name = f"COCO_val2014_{cid:012d}.jpg"
        _write(root / "val2014" / name, tinted_bytes(photos[k % len(photos)], k))
        images.append({"filepath": "val2014", "filename": name, "cocoid": cid, "imgid": k,
                       "split": "test", "sentids": sids,
                       "sentences": [{"raw": t + " ", "tokens": t.split(), "imgid": k,
                                      "sentid": s}
                                     for s, t in zip(sids, captions[k % len(captions)])]})
    if extra_train:  # not in the test split: must not be loaded
        images.append({"filepath": "train2014", "filename": "COCO_train2014_000000000009.jpg",
                       "cocoid": 9, "imgid": 99, "split": "train", "sentids": [1],
                       "sentences": [{"raw": "x", "tokens": ["x"], "imgid": 99, "sentid": 1}]})
    _write(root / "dataset_coco.json", json.dumps({"images": images, "dataset": "coco"}))
    return root


def coco_official(root: Path, photos: list[Path], coco_ids: list[int],
                  caption_ids: list[list[int]], captions: list[list[str]] | None = None) -> Path:
    """``annotations/captions_val2014.json`` + ``karpathy_test.txt`` + ``val2014/`` images."""
    captions = captions or CAPTIONS
    images, annotations = [], []
    for k, (cid, sids) in enumerate(zip(coco_ids, caption_ids)):
        name = f"COCO_val2014_{cid:012d}.jpg"
        _write(root / "val2014" / name, tinted_bytes(photos[k % len(photos)], k))
        images.append({"id": cid, "file_name": name, "width": 224, "height": 224})
        # official files are not sorted by annotation id: reversed on purpose
        annotations += [{"id": s, "image_id": cid, "caption": t}
                        for s, t in reversed(list(zip(sids, captions[k % len(captions)])))]
    images.append({"id": 424242, "file_name": "COCO_val2014_000000424242.jpg"})  # not in split
    _write(root / "annotations" / "captions_val2014.json",
           json.dumps({"images": images, "annotations": annotations, "info": {}}))
    _write(root / "karpathy_test.txt",
           "\n".join(f"val2014/COCO_val2014_{cid:012d}.jpg" for cid in coco_ids) + "\n")
    return root


# ------------------------------------------------------------------------------- Flickr30K

def flickr30k_karpathy(root: Path, photos: list[Path]) -> tuple[Path, list[str]]:
    names = [f"{1000 + k}.jpg" for k in range(3)]
    images = [{"filename": n, "imgid": k, "split": "test", "sentids": [2 * k, 2 * k + 1],
               "sentences": [{"raw": t, "tokens": t.split(), "imgid": k, "sentid": 2 * k + j}
                             for j, t in enumerate(CAPTIONS[k])]}
              for k, n in enumerate(names)]
    images.append({"filename": "999.jpg", "imgid": 3, "split": "train", "sentids": [],
                   "sentences": []})
    for k, n in enumerate(names):
        _write(root / "flickr30k-images" / n, tinted_bytes(photos[k], k))
    _write(root / "dataset_flickr30k.json", json.dumps({"images": images,
                                                        "dataset": "flickr30k"}))
    return root, names


def flickr30k_token(root: Path, photos: list[Path], kaggle: bool = False) -> tuple[Path, list[str]]:
    names = [f"{2000 + k}.jpg" for k in range(3)]
    for k, n in enumerate(names):
        _write(root / n, tinted_bytes(photos[k], k))
    if kaggle:
        lines = ["image_name| comment_number| comment"] + [
            f"{n}| {j}| {t}" for k, n in enumerate(names) for j, t in enumerate(CAPTIONS[k])]
        lines[-1] = lines[-1].replace("| 1| ", "| 1   ")  # the file's known row without a "|"
        _write(root / "results.csv", "\n".join(lines) + "\n")
    else:  # caption #1 before #0 on purpose: order comes from the number
        lines = [f"{n}#{j}\t{CAPTIONS[k][j]}" for k, n in enumerate(names) for j in (1, 0)]
        _write(root / "results_20130124.token", "\n".join(lines) + "\n")
    return root, names


# ---------------------------------------------------------------------------------- XM3600

def xm3600(root: Path, photos: list[Path]) -> tuple[Path, list[str]]:
    keys = [f"00{k}a1b2c3d4e5f6{k}" for k in range(3)]
    lines = []
    for k, key in enumerate(keys):
        _write(root / "images" / f"{key}.jpg", tinted_bytes(photos[k], k))
        lines.append(json.dumps({"image/key": key,
                                 "en": {"caption": CAPTIONS[k], "caption/tokenized": CAPTIONS[k]},
                                 "de": {"caption": [f"ein Bild {k}"]}}))
    lines.append(json.dumps({"image/key": "nocaption", "fr": {"caption": ["seulement"]}}))
    _write(root / "captions.jsonl", "\n".join(lines) + "\n")
    return root, keys


# ------------------------------------------------------------------------------ generic

def tar_shards(root: Path, photos: list[Path]) -> tuple[Path, list[str]]:
    """Two webdataset shards; sample 0 keeps its caption in .json, the others in .txt."""
    keys = ["shard0/sample000", "shard0/sample001", "sample002"]
    root.mkdir(parents=True, exist_ok=True)

    def add(tar, name, data: bytes):
        info = tarfile.TarInfo(name)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))

    with tarfile.open(root / "00000.tar", "w") as tar:
        for k in (0, 1):
            add(tar, f"{keys[k]}.jpg", tinted_bytes(photos[k], k))
            if k == 0:
                add(tar, f"{keys[k]}.json", json.dumps({"caption": CAPTIONS[k]}).encode())
            else:
                add(tar, f"{keys[k]}.txt", "\n".join(CAPTIONS[k]).encode())
        add(tar, "orphan.txt", b"a caption without an image")
    with tarfile.open(root / "00001.tar", "w") as tar:
        add(tar, f"{keys[2]}.png", tinted_bytes(photos[2], 2, "PNG"))
        add(tar, f"{keys[2]}.txt", "\n".join(CAPTIONS[2]).encode())
    return root, keys


def _hf_table(photos: list[Path]):
    import pyarrow as pa

    image_type = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    return pa.table({
        "image": pa.array([{"bytes": tinted_bytes(p, k), "path": f"img{k}.jpg"}
                           for k, p in enumerate(photos)], image_type),
        "caption": pa.array(CAPTIONS, pa.list_(pa.string())),
        "image_id": pa.array([f"hf{k}" for k in range(3)]),
    })


def hf_parquet(root: Path, photos: list[Path]) -> tuple[Path, list[str]]:
    """A Hub-style Parquet layout: data/test-*.parquet (read) and data/train-*.parquet (not)."""
    import pyarrow.parquet as pq

    (root / "data").mkdir(parents=True, exist_ok=True)
    table = _hf_table(photos)
    pq.write_table(table.slice(0, 2), root / "data" / "test-00000-of-00002.parquet")
    pq.write_table(table.slice(2, 1), root / "data" / "test-00001-of-00002.parquet")
    pq.write_table(table.slice(0, 1), root / "data" / "train-00000-of-00001.parquet")
    return root, [f"hf{k}" for k in range(3)]


def hf_save_to_disk(root: Path, photos: list[Path]) -> tuple[Path, list[str]]:
    """The layout ``Dataset.save_to_disk`` writes (Arrow IPC stream + state.json), made with
    pyarrow because the ``datasets`` package is not installed here."""
    import pyarrow as pa

    root.mkdir(parents=True, exist_ok=True)
    table = _hf_table(photos)
    with pa.OSFile(str(root / "data-00000-of-00001.arrow"), "wb") as sink, \
            pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    _write(root / "state.json", json.dumps({
        "_data_files": [{"filename": "data-00000-of-00001.arrow"}], "_fingerprint": "0",
        "_format_type": None, "_split": None}))
    _write(root / "dataset_info.json", json.dumps({"features": {
        "image": {"_type": "Image"}, "caption": {"feature": {"dtype": "string", "_type": "Value"},
                                                 "_type": "Sequence"},
        "image_id": {"dtype": "string", "_type": "Value"}}}))
    return root, [f"hf{k}" for k in range(3)]


def caption_table(root: Path, photos: list[Path], kind: str = "csv") -> tuple[Path, list[str]]:
    names = [f"pics/p{k}.jpg" for k in range(3)]
    for k, n in enumerate(names):
        _write(root / n, tinted_bytes(photos[k], k))
    pairs = [(n, t) for k, n in enumerate(names) for t in CAPTIONS[k]]
    if kind == "csv":
        body = "image,caption\n" + "".join(f'{n},"{t}, indeed"\n' for n, t in pairs)
        return _write(root / "captions.csv", body), names
    body = "".join(json.dumps({"image": n, "caption": t}) + "\n" for n, t in pairs)
    return _write(root / "captions.jsonl", body), names
