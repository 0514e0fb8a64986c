"""Embedding shards on disk: Parquet files of (path, sha1, model, ok, error, embedding, meta),
a manifest.

One output folder of ``xmodal embed`` holds::

    manifest.json         format, model id and spec, dim, dtype, source, shard size, shard names
    inputs.parquet        the plan, fixed on the first run: (path, shard, pos) of every input
    shard-00000.parquet   one row per input of shard 0, in plan order; bad images have ok=false,
    shard-00001.parquet   a reason in ``error`` and a null embedding; ``meta`` is each photo's
                          metadata as JSON (EXIF date, camera, GPS, sizes), read while embedding
    ...

A shard file is written under a temporary name and renamed, so it is either complete or absent:
a re-run skips the shards present and redoes the others, and no image appears twice. The model
id is stored in every row and in the file's Parquet metadata; readers refuse a mix of models.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from xmodal.errors import XmodalError

FORMAT = "xmodal-embeddings"
VERSION = 1
MANIFEST = "manifest.json"
INPUTS = "inputs.parquet"
DTYPES = ("float16", "float32")
ANN_FORMAT = "xmodal-ann"  # an index folder of xmodal ann build (ann.json)
ANN_VERSION = 1


def shard_name(i: int) -> str:
    return f"shard-{i:05d}.parquet"


@dataclass
class Manifest:
    model_id: str
    model_spec: str
    dim: int
    dtype: str
    source: str
    shard_size: int
    n_inputs: int
    n_shards: int

    def to_dict(self) -> dict[str, Any]:
        return {"format": FORMAT, "version": VERSION, **self.__dict__,
                "shards": [shard_name(i) for i in range(self.n_shards)]}


def write_json_atomic(path: Path, data: dict) -> None:
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(data, indent=2))
    os.replace(tmp, path)


def read_manifest(folder: str | os.PathLike) -> Manifest:
    """The manifest of an embedding folder; XmodalError says what is wrong with it."""
    path = Path(folder) / MANIFEST
    if not path.is_file():
        raise XmodalError(f"{folder} is not an embedding folder (no {MANIFEST}); "
                          "write one with 'xmodal embed SRC OUT'")
    try:
        data = json.loads(path.read_text())
        if data.get("format") != FORMAT or data.get("version") != VERSION:
            raise ValueError(f"format {data.get('format')!r} version {data.get('version')!r}")
        fields = Manifest.__dataclass_fields__
        return Manifest(**{k: data[k] for k in fields})
    except (ValueError, KeyError, TypeError) as exc:
        raise XmodalError(f"{path} is not a valid xmodal embedding manifest: {exc}") from None


def shard_table(rows: dict[str, Any], model_id: str, dim: int, dtype: str):
    """A pyarrow table of one shard from column lists (``embedding``: rows of floats or None)."""
    n = len(rows["path"])
    emb = np.zeros((n, dim), dtype)
    valid = np.zeros(n, bool)
    for i, v in enumerate(rows["embedding"]):
        if v is not None:
            emb[i], valid[i] = v, True
    return array_table(rows["path"], rows["sha1"], rows["error"], emb, valid, model_id,
                       rows.get("meta"))


def array_table(paths: list[str], sha1: list, error: list, emb: np.ndarray, valid: np.ndarray,
                model_id: str, meta: list | None = None):
    """A shard table from an (n, dim) float16/float32 array; rows not ``valid`` are null.
    ``meta``: each photo's metadata as JSON (or None), read while embedding; the catalog of
    'xmodal ann build' reads it instead of the files (shards written without it lack it)."""
    import pyarrow as pa

    n, dim = emb.shape
    values = pa.array(emb.reshape(-1),
                      type=pa.float16() if emb.dtype == np.float16 else pa.float32())
    col = pa.FixedSizeListArray.from_arrays(values, dim, mask=pa.array(~valid))
    table = pa.table({
        "path": pa.array(paths, pa.string()),
        "sha1": pa.array(sha1, pa.string()),
        "model": pa.array([model_id] * n, pa.string()),
        "ok": pa.array(valid),
        "error": pa.array(error, pa.string()),
        "embedding": col,
        **({} if meta is None else {"meta": pa.array(meta, pa.string())}),
    })
    return table.replace_schema_metadata({"xmodal.model": model_id, "xmodal.dim": str(dim)})


def write_shard(folder: Path, i: int, table) -> Path:
    """Write shard ``i`` atomically (temporary file, then rename)."""
    import pyarrow.parquet as pq

    final = folder / shard_name(i)
    tmp = folder / f".{shard_name(i)}.tmp{os.getpid()}"
    pq.write_table(table, tmp)
    os.replace(tmp, final)
    return final


def read_shard(path: Path, model_id: str | None = None, columns: list[str] | None = None):
    """Read one shard; XmodalError for a corrupt file or one written by another model."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path, columns=columns)
        meta = pq.read_schema(path).metadata or {}
    except (OSError, pa.ArrowException) as exc:
        raise XmodalError(f"corrupt embedding shard {path}: {exc}; delete it and run "
                          "'xmodal embed' again on the same OUT to redo it") from None
    found = meta.get(b"xmodal.model", b"").decode()
    if model_id is not None and found != model_id:
        raise XmodalError(f"shard {path} holds embeddings of model {found!r}, not {model_id!r}: "
                          "embeddings of different models cannot share one index")
    return table


def shard_done(path: Path, expected_rows: int, model_id: str) -> bool:
    """Whether a shard file is present, readable and complete (resume skips it)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not path.is_file():
        return False
    try:
        md = pq.read_metadata(path)
        meta = md.metadata or {}
    except (OSError, pa.ArrowException):
        return False
    return md.num_rows == expected_rows and meta.get(b"xmodal.model", b"").decode() == model_id


def embeddings(table) -> np.ndarray:
    """(rows, dim) float32 of a shard table's ``ok`` rows."""
    import pyarrow.compute as pc

    col = table.filter(pc.field("ok"))["embedding"].combine_chunks()
    dim = col.type.list_size
    return col.flatten().to_numpy(zero_copy_only=False).astype(np.float32).reshape(-1, dim)


@dataclass
class ShardSet:
    """One or more embedding folders of the same model, read shard by shard."""

    folders: list[Path]
    manifests: list[Manifest]

    @property
    def model_id(self) -> str:
        return self.manifests[0].model_id

    @property
    def dim(self) -> int:
        return self.manifests[0].dim

    def files(self) -> list[Path]:
        return [f / shard_name(i) for f, m in zip(self.folders, self.manifests)
                for i in range(m.n_shards)]

    def iter_vectors(self) -> Iterator[tuple[Path, np.ndarray]]:
        """(shard file, float32 embeddings of its ok rows), in a fixed order."""
        for path in self.files():
            yield path, embeddings(read_shard(path, self.model_id, ["ok", "embedding"]))


def open_shards(folders: list[str | os.PathLike]) -> ShardSet:
    """Check that every folder is a finished embedding folder of one model; XmodalError if not."""
    if not folders:
        raise XmodalError("give at least one embedding folder written by 'xmodal embed'")
    paths = [Path(f).expanduser() for f in folders]
    manifests = [read_manifest(p) for p in paths]
    models = {m.model_id for m in manifests}
    if len(models) > 1:
        raise XmodalError("the embedding folders come from different models "
                          f"({', '.join(sorted(models))}): build one index per model")
    if len({m.dim for m in manifests}) > 1:
        raise XmodalError("the embedding folders have different dimensions")
    for p, m in zip(paths, manifests):
        missing = [shard_name(i) for i in range(m.n_shards) if not (p / shard_name(i)).is_file()]
        if missing:
            raise XmodalError(f"{p} is unfinished: {len(missing)} of {m.n_shards} shards missing "
                              f"(first {missing[0]}); run 'xmodal embed' on it again to finish")
    return ShardSet(paths, manifests)


def ann_meta_path(folder: str | os.PathLike) -> Path:
    return Path(folder) / "ann.json"


def read_ann_meta(folder: str | os.PathLike) -> dict[str, Any]:
    """The ``ann.json`` of an index folder built by ``xmodal ann build``."""
    path = ann_meta_path(folder)
    if not path.is_file():
        raise XmodalError(f"{folder} is not an index folder (no ann.json); build one with "
                          "'xmodal ann build SHARDS OUT'")
    meta = json.loads(path.read_text())
    if meta.get("format") != ANN_FORMAT or meta.get("version") != ANN_VERSION:
        raise XmodalError(f"{path}: not an xmodal index of version {ANN_VERSION}")
    return meta
