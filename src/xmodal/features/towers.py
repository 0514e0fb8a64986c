"""The towers on ONNX Runtime: one image tower class and one text tower class, each driven by its
spec record (:mod:`xmodal.features.tower_specs`).

``xmodal prepare`` (:func:`prepare_towers`) writes each tower's files once into
``models_dir()/onnx/``: ``<stem>.onnx`` (MPNet: plus ``<stem>.onnx.data``), a sentence tower's
``<stem>.tokenizer.json`` and a ``<stem>.json`` manifest naming the weights it was exported from.
A search then needs ONNX Runtime, numpy and the ``tokenizers`` package only. Where the export
extra is installed (a full install, the tests), a missing or stale file is exported at first use;
in a core install a missing file is an XmodalError naming the command to run.
"""

from __future__ import annotations

import functools
import json
import os
import re
from pathlib import Path

import numpy as np

from xmodal.errors import XmodalError
from xmodal.features.onnx_engine import export_lock, file_digest, session, text_session
from xmodal.features.tower_specs import (
    HALF_OUTPUTS,
    ImageTowerSpec,
    TextTowerSpec,
    image_tower_spec,
    text_tower_spec,
)
from xmodal.paths import cache_dir, models_dir

# images per ONNX Runtime run of an image tower: the activations of a few images stay in the
# CPU's caches, those of 16 do not (benchmarks/results/tower_batch.json: Lite2 at 260 px on this
# 2-core machine, about 175 images/s in runs of 2-4 against 141 in runs of 16)
TOWER_CHUNK = 4
EXPORT_EXTRA = "pip install 'xmodal[export]'"


def onnx_dir() -> Path:
    return models_dir() / "onnx"


def prepare_command(model: str | None = None) -> str:
    return "xmodal prepare" + (f" --model {model}" if model else "")


class OnnxTower:
    """What both towers share: the files of one exported graph, its manifest, its freshness."""

    kind = title = source = install = ""

    def __init__(self, stem: str) -> None:
        self.stem = stem
        self._fresh: set[Path] = set()

    def source_digest(self) -> str | None:
        """A digest of the installed weights this tower is exported from; None when they are
        not installed (a core install trusts the manifest that ``xmodal prepare`` wrote)."""
        from xmodal.features.weights import source_files

        files = source_files(self.source)
        return None if files is None else "-".join(file_digest(f) for f in files)

    def files(self, path: Path) -> list[Path]:
        """Every file of the export at ``path`` (the graph first, its manifest last)."""
        return [path, path.with_name(f"{path.name}.data"), self.manifest(path)]

    def manifest(self, path: Path) -> Path:
        return path.with_suffix(".json")

    def ready(self, path: Path, source: str | None) -> bool:
        """Whether ``path`` holds an export of these weights (any, when ``source`` is None)."""
        try:
            record = json.loads(self.manifest(path).read_text())
        except (OSError, ValueError):
            return False
        # the files beside the graph, by name: a models folder can be moved or copied whole
        return (path.is_file()
                and all(path.with_name(Path(f).name).is_file() for f in record.get("needs", []))
                and (source is None or record.get("source") == source))

    def ensure(self, path: Path, source: str | None, export) -> Path:
        """``path``, exported first when missing or stale and the export extra is installed;
        else an XmodalError naming ``xmodal prepare``."""
        if path in self._fresh:
            return path
        if not self.ready(path, source):
            with export_lock():  # another process may be exporting it
                if not self.ready(path, source):
                    self._export(path, source, export)
        self._fresh.add(path)
        return path

    def _export(self, path: Path, source: str | None, export) -> None:
        from xmodal.features.onnx_export import missing_export_modules

        if missing_export_modules(text=self.kind == "text") or source is None:
            raise XmodalError(
                f"the {self.title} {self.kind} tower is not prepared ({path} is missing); run "
                f"`{prepare_command()}` once (`{prepare_command('M')}` for another model M, "
                f"e.g. fast), in an install with the export extra ({EXPORT_EXTRA}; the "
                f"weights: {self.install})")
        path.parent.mkdir(parents=True, exist_ok=True)
        for f in self.files(path):
            f.unlink(missing_ok=True)
        needs = export(path)
        record = {"tower": self.stem, "source": source, "needs": [f.name for f in needs]}
        tmp = self.manifest(path).with_name(f"{path.stem}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(record, indent=1))
        tmp.replace(self.manifest(path))

    def repair(self, path: Path, source, export):
        """For a file ONNX Runtime cannot load: export it again (once). ``source``: a function
        giving the weights' digest (called only then)."""
        def again(_: Path) -> None:
            self._fresh.discard(path)
            with export_lock():
                for f in self.files(path):
                    f.unlink(missing_ok=True)
            self.ensure(path, source(), export)
        return again


class OnnxImageTower(OnnxTower):
    """An image tower on ONNX Runtime, fp32 or int8 (quantized from the fp32 export with the
    shipped calibration, :mod:`xmodal.features.int8`)."""

    kind = "image"

    def __init__(self, spec: ImageTowerSpec) -> None:
        super().__init__(spec.stem)
        self.spec, self.title, self.source = spec, spec.title, spec.name
        self.install = f"pip install {spec.package}"

    def path(self, precision: str = "fp32") -> Path:
        return onnx_dir() / f"{self.stem}{'_int8' if precision == 'int8' else ''}.onnx"

    def _source(self, precision: str) -> str | None:
        source = self.source_digest()
        if precision != "int8" or source is None:
            return source
        from xmodal.features.int8 import asset_path

        return f"{source}+{file_digest(asset_path(self.spec.name))}"

    def _writer(self, precision: str):
        from xmodal.features import onnx_export

        if precision != "int8":
            return lambda path: [onnx_export.export_image(self.spec, path)]

        def quantize(path: Path) -> list[Path]:
            from xmodal.features.int8 import load_asset, quantize_effnet

            fp32 = self.prepare("fp32")
            asset = load_asset(self.spec.name)
            return [quantize_effnet(fp32, path, asset["onnxruntime_calibration"],
                                    asset["kept_fp32"], asset["format"])]
        return quantize

    def prepare(self, precision: str = "fp32") -> Path:
        """The tower's ONNX file, exported now when missing or stale (checked once a process)."""
        path = self.path(precision)
        if path in self._fresh:
            return path
        return self.ensure(path, self._source(precision), self._writer(precision))

    def is_prepared(self, precision: str = "fp32") -> bool:
        return self.ready(self.path(precision), None)

    def forward(self, batch: np.ndarray, outputs=("pooled", "logits"),
                precision: str = "fp32") -> dict[str, np.ndarray]:
        """The named outputs of a (b, 3, s, s) float32 batch, in runs of :data:`TOWER_CHUNK`
        images; maps and prehead as float16."""
        path = self.prepare(precision)
        sess = session(path, self.repair(path, lambda: self._source(precision),
                                         self._writer(precision)))
        images = np.ascontiguousarray(batch, dtype=np.float32)
        runs = [sess.run(list(outputs), {self.spec.inputs[0]: images[i:i + TOWER_CHUNK]})
                for i in range(0, max(len(images), 1), TOWER_CHUNK)]
        return {name: np.concatenate(parts).astype(np.float16 if name in HALF_OUTPUTS
                                                   else parts[0].dtype)
                for name, *parts in zip(outputs, *runs)}


class OnnxTextTower(OnnxTower):
    """A sentence tower on ONNX Runtime, tokenized by the ``tokenizers`` package from the
    tokenizer.json saved beside the graph."""

    kind = "text"

    def __init__(self, spec: TextTowerSpec) -> None:
        super().__init__(spec.stem)
        self.spec, self.title, self.source = spec, spec.title, spec.name
        self.install = spec.install

    def path(self) -> Path:
        return onnx_dir() / f"{self.stem}.onnx"

    def tokenizer_path(self) -> Path:
        return onnx_dir() / f"{self.stem}.tokenizer.json"

    def files(self, path: Path) -> list[Path]:
        return [self.tokenizer_path(), *super().files(path)]

    def _write(self, path: Path) -> list[Path]:
        from xmodal.features.onnx_export import export_text

        export_text(self.spec, path, self.tokenizer_path())
        data = path.with_name(f"{path.name}.data")
        return [self.tokenizer_path()] + ([data] if self.spec.external_data else [])

    def prepare(self) -> Path:
        """The tower's ONNX file, exported now when missing or stale (checked once a process)."""
        path = self.path()
        if path in self._fresh:
            return path
        return self.ensure(path, self.source_digest(), self._write)

    def is_prepared(self) -> bool:
        return self.ready(self.path(), None)

    def tokenizer(self):
        """The tokenizer, truncating at the spec's limit and padding batches."""
        self.prepare()
        return _tokenizer(str(self.tokenizer_path()), self.spec.max_tokens, self.spec.pad_token)

    def feeds(self, texts: list[str]) -> dict[str, np.ndarray]:
        """The graph's inputs for ``texts``, as its spec names them."""
        enc = self.tokenizer().encode_batch(list(texts))
        fields = {"input_ids": "ids", "attention_mask": "attention_mask",
                  "token_type_ids": "type_ids"}
        return {name: np.array([getattr(e, fields[name]) for e in enc], dtype=np.int64)
                for name in self.spec.inputs}

    def embed(self, texts: list[str]) -> np.ndarray:
        """(n, dim) float32 unit sentence embeddings."""
        path = self.prepare()
        sess = text_session(path, self.repair(path, self.source_digest, self._write))
        return np.asarray(sess.run(["embedding"], self.feeds(texts))[0], np.float32)


@functools.lru_cache(maxsize=4)
def _tokenizer(path: str, max_tokens: int, pad: str):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(path)
    tok.enable_truncation(max_length=max_tokens)
    tok.enable_padding(pad_id=tok.token_to_id(pad), pad_token=pad)
    return tok


@functools.lru_cache(maxsize=None)
def image_tower(name: str | None = None) -> OnnxImageTower:
    return OnnxImageTower(image_tower_spec(name))


@functools.lru_cache(maxsize=None)
def text_tower(name: str | None = None) -> OnnxTextTower:
    return OnnxTextTower(text_tower_spec(name))


# Exports written before ``xmodal prepare`` (keyed by the weights' digest, MPNet's unpacked copy):
# what prepare deletes, so that the weights do not stay on disk in several copies.
LEGACY = re.compile(r"^(effnet_lite\d_v\d(_int8)?|minilm_l6_v2_v\d|mpnet_base_v2_v\d)"
                    r"(_[0-9a-f]{12})+\.onnx(\.data)?$")


def remove_legacy_copies() -> list[Path]:
    """Delete the exports of earlier versions and the unpacked MPNet; the paths deleted."""
    import shutil

    gone = [f for folder in (cache_dir() / "onnx", onnx_dir()) if folder.is_dir()
            for f in folder.iterdir() if LEGACY.match(f.name)]
    for f in gone:
        f.unlink(missing_ok=True)
    unpacked = models_dir() / "all-mpnet-base-v2"
    if unpacked.is_dir():
        shutil.rmtree(unpacked, ignore_errors=True)
        gone.append(unpacked)
    return gone


def prepare_towers(image: str | None, text: str | None, int8: bool = False) -> list[Path]:
    """Export one image and one text tower (and the int8 image tower when ``int8``) where their
    files are missing or stale, and delete earlier copies; the ONNX files."""
    images = image_tower(image)
    done = [images.prepare("fp32")] + ([images.prepare("int8")] if int8 else [])
    done.append(text_tower(text).prepare())
    remove_legacy_copies()
    return done


def image_precision(backbone: str | None = None) -> str:
    """"int8" when the backbone's int8 tower ships (accepted on dev: ``xmodal.features.int8``),
    runs on this engine and ``$XMODAL_INT8`` is not 0: prepared by ``xmodal prepare``, or
    quantizable here (ONNX Runtime >= 1.32 with onnx); else "fp32"."""
    from xmodal.features.int8 import asset_path, supported
    from xmodal.features.onnx_engine import engine

    spec = image_tower_spec(backbone)
    if os.environ.get("XMODAL_INT8", "").strip() == "0" or engine() != "onnx":
        return "fp32"
    if not asset_path(spec.name).is_file():
        return "fp32"
    return "int8" if image_tower(spec.name).is_prepared("int8") or supported() else "fp32"


def prepare_text_encoder(name: str | None) -> bool:
    """Make a sentence tower ready now if its file is missing, so that the first search never
    pays for its export (MPNet: about 15 s and 2.4 GB). True when it was exported by this call;
    nothing to do on the torch engine."""
    from xmodal.features.onnx_engine import engine

    if engine() != "onnx":
        return False
    tower = text_tower(name)
    if tower.ready(tower.path(), tower.source_digest()):
        return False
    tower.prepare()
    return True
