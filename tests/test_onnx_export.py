"""The ONNX towers: one class per modality driven by spec records, files written once by
``xmodal prepare`` (graph, tokenizer, manifest) and found without the export extra, or a clear
error naming the command to run."""

import json

import numpy as np
import onnxruntime as ort
import pytest

from xmodal.errors import XmodalError
from xmodal.features import onnx_engine, onnx_export, towers
from xmodal.features.tower_specs import IMAGE_TOWERS, TEXT_TOWERS, text_tower_spec
from xmodal.features.weights import load_minilm, minilm_dir

TEXTS = ["a dog runs on the beach", "two people ride bicycles past a red wall", "",
         "Émile's café: naïve 🐶 DOG!", "word " * 400]


@pytest.fixture()
def models(tmp_path, monkeypatch):
    """An empty models folder (the ONNX files go to its onnx/ folder)."""
    monkeypatch.setenv("XMODAL_MODELS", str(tmp_path / "models"))
    return tmp_path / "models"


def _reference_minilm(path, texts):
    """MiniLM as the code before the tower classes ran it: the package's own tokenizer.json
    (truncation at 256, [PAD] padding) and three hand-built inputs."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(minilm_dir() / "tokenizer.json"))
    tok.enable_truncation(max_length=256)
    tok.enable_padding(pad_id=tok.token_to_id("[PAD]"), pad_token="[PAD]")
    enc = tok.encode_batch(texts)
    feeds = {"input_ids": np.array([e.ids for e in enc]),
             "attention_mask": np.array([e.attention_mask for e in enc]),
             "token_type_ids": np.array([e.type_ids for e in enc])}
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(["embedding"], feeds)[0]


def test_external_weights_give_the_same_embeddings(tmp_path):
    bert = load_minilm()[0].auto_model.eval()
    inputs = text_tower_spec("minilm").inputs
    inline = onnx_export.export_sentence(tmp_path / "inline.onnx", bert, inputs)
    external = onnx_export.export_sentence(tmp_path / "ext.onnx", bert, inputs, external=True)
    data = tmp_path / "ext.onnx.data"
    assert data.is_file() and data.stat().st_size > 50_000_000
    assert external.stat().st_size < 1_000_000 < inline.stat().st_size
    assert not list(tmp_path.glob("*.tmp"))
    np.testing.assert_allclose(_reference_minilm(external, TEXTS[:2]),
                               _reference_minilm(inline, TEXTS[:2]), atol=1e-6)


def test_the_text_tower_class_equals_the_hand_built_reference(models, monkeypatch):
    """The spec-driven tower (its saved tokenizer, its inputs) gives the embeddings of the
    hand-built path to 1e-5, and writes graph, tokenizer and manifest into the models folder."""
    tower = towers.OnnxTextTower(text_tower_spec("minilm"))
    got = tower.embed(TEXTS)
    assert got.shape == (len(TEXTS), 384)
    np.testing.assert_allclose(got, _reference_minilm(tower.path(), TEXTS), atol=1e-5)
    names = sorted(p.name for p in (models / "onnx").iterdir())
    assert names == ["minilm_l6_v2_v1.json", "minilm_l6_v2_v1.onnx",
                     "minilm_l6_v2_v1.tokenizer.json"]
    # the manifest names the files beside the graph, so the folder can move
    elsewhere = models.parent / "elsewhere"
    models.rename(elsewhere)
    monkeypatch.setenv("XMODAL_MODELS", str(elsewhere))
    moved = towers.OnnxTextTower(text_tower_spec("minilm"))
    assert moved.ready(moved.path(), None)
    moved.tokenizer_path().unlink()
    assert not moved.ready(moved.path(), None)


def test_a_core_install_finds_prepared_files_or_names_the_command(models, monkeypatch):
    """Without the weights and the export extra (simulated), a prepared tower runs from its
    files alone; an unprepared one is an XmodalError naming `xmodal prepare` and the extra."""
    prepared = towers.OnnxTextTower(text_tower_spec("minilm"))
    expected = prepared.embed(TEXTS[:2])
    monkeypatch.setattr(onnx_export, "missing_export_modules", lambda text=False: ["torch"])
    monkeypatch.setattr("xmodal.features.weights.source_files", lambda tower: None)
    core = towers.OnnxTextTower(text_tower_spec("minilm"))
    np.testing.assert_allclose(core.embed(TEXTS[:2]), expected, atol=1e-6)
    with pytest.raises(XmodalError, match=r"xmodal prepare.*xmodal\[export\]"):
        towers.OnnxImageTower(IMAGE_TOWERS["lite1"]).forward(np.zeros((1, 3, 240, 240)))
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)
    monkeypatch.setenv("XMODAL_ENGINE", "torch")
    with pytest.raises(XmodalError, match=r"torch engine needs.*xmodal\[export\]"):
        onnx_engine.engine()


def test_a_stale_export_is_written_again(models, monkeypatch):
    tower = towers.OnnxTextTower(text_tower_spec("minilm"))
    written = []

    def write(path):
        written.append(path)
        path.write_bytes(b"onnx")
        return []

    monkeypatch.setattr(tower, "_write", write)
    monkeypatch.setattr(tower, "source_digest", lambda: "weights-1")
    tower.prepare()
    towers.OnnxTextTower.prepare(tower)
    assert len(written) == 1
    assert json.loads(tower.manifest(tower.path()).read_text())["source"] == "weights-1"
    tower._fresh.clear()  # a new process, after the weights package was upgraded
    monkeypatch.setattr(tower, "source_digest", lambda: "weights-2")
    tower.prepare()
    assert len(written) == 2


def _slow_export(path, log):
    """An export as ONNX writes one: weights appended to ``<graph>.data``, then the graph."""
    import time

    with open(log, "a") as f:
        f.write("export\n")
    data = path.with_name(f"{path.name}.data")
    for _ in range(4):
        with open(data, "ab") as f:
            f.write(b"w" * 1000)
        time.sleep(0.2)
    path.write_bytes(b"graph")
    return [data]


def _prepare_in_a_process(path, log, start):
    start.wait()
    tower = towers.OnnxTextTower(text_tower_spec("minilm"))
    tower.ensure(path, "weights-1", lambda p: _slow_export(p, log))


def test_two_processes_preparing_at_once_export_once(models, tmp_path):
    """Two first runs at once (or xmodal prepare beside a search): the second waits for the
    first's export and uses it, instead of appending a second copy of the weights."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    path, log = models / "onnx" / "toy.onnx", tmp_path / "exports.log"
    start = ctx.Barrier(2)
    procs = [ctx.Process(target=_prepare_in_a_process, args=(path, log, start)) for _ in "ab"]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0]
    assert log.read_text().split() == ["export"]
    assert path.with_name("toy.onnx.data").stat().st_size == 4000
    assert towers.OnnxTextTower(text_tower_spec("minilm")).ready(path, "weights-1")


def _nested_export(models, log):
    """An export that prepares another tower first, as the int8 image tower's does."""
    tower = towers.OnnxTextTower(text_tower_spec("minilm"))

    def outer(path):
        tower.ensure(models / "onnx" / "inner.onnx", "weights-1", lambda p: _slow_export(p, log))
        return _slow_export(path, log)
    tower.ensure(models / "onnx" / "outer.onnx", "weights-1", outer)


def test_an_export_that_prepares_another_tower_first_does_not_wait_for_itself(models, tmp_path):
    import multiprocessing

    log = tmp_path / "exports.log"
    proc = multiprocessing.get_context("fork").Process(target=_nested_export, args=(models, log))
    proc.start()
    proc.join(60)
    hung = proc.is_alive()
    if hung:
        proc.kill()
    assert not hung and proc.exitcode == 0
    assert log.read_text().split() == ["export", "export"]


def test_prepare_deletes_the_copies_of_earlier_versions(models, monkeypatch, tmp_path):
    monkeypatch.setenv("XMODAL_CACHE", str(tmp_path / "cache"))
    old = [tmp_path / "cache" / "onnx" / "effnet_lite2_v2_0123456789ab.onnx",
           tmp_path / "cache" / "onnx" / "effnet_lite0_v2_int8_0123456789ab_ba9876543210.onnx",
           models / "onnx" / "mpnet_base_v2_v2_0123456789ab.onnx",
           models / "onnx" / "mpnet_base_v2_v2_0123456789ab.onnx.data",
           models / "all-mpnet-base-v2" / "model.safetensors"]
    kept = [models / "onnx" / "mpnet_base_v2_v2.onnx", models / "onnx" / "effnet_lite0_v2_int8.onnx"]
    for f in old + kept:
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(b"x")
    towers.remove_legacy_copies()
    assert [f for f in old if f.exists()] == [] and all(f.exists() for f in kept)
    assert not (models / "all-mpnet-base-v2").exists()


def test_every_tower_spec_names_what_its_export_needs():
    for spec in TEXT_TOWERS.values():
        assert spec.inputs[:2] == ("input_ids", "attention_mask") and spec.pooling == "mean"
        assert spec.stem.endswith(spec.export_version) and "pip install" in spec.install
    for spec in IMAGE_TOWERS.values():
        assert spec.outputs[:2] == ("pooled", "logits") and spec.stem.endswith("_v2")


def test_every_named_model_runs_the_towers_its_registry_entry_names():
    """The registry the factory reads: each name builds a model whose towers are the entry's
    (what `xmodal prepare --model NAME` exports)."""
    from xmodal.factory import load_embedding_model, model_towers
    from xmodal.models.embedding_registry import NAMED_MODELS

    for name, entry in NAMED_MODELS.items():
        model = load_embedding_model(name)
        assert (model.image_backbone, model.text_encoder) == (entry.image_tower,
                                                              entry.text_tower), name
    assert model_towers("fast") == ("lite0", "minilm", True)
    assert model_towers(None)[:2] == ("lite2", "mpnet")
    with pytest.raises(XmodalError, match="nothing to prepare"):
        model_towers("python:tests.fake_models:ColourModel")


def test_the_image_tower_class_equals_one_plain_session_run(models, tmp_path):
    """The spec-driven image tower (runs of TOWER_CHUNK images, float16 maps) gives what one
    plain ONNX Runtime run of its file gives on the whole batch, to 1e-5."""
    from xmodal.cli.demo_cmd import copy_sample_photos
    from xmodal.features.image_encoder import open_image, preprocess
    from xmodal.features.tower_specs import IMAGE_OUTPUTS

    tower = towers.OnnxImageTower(IMAGE_TOWERS["lite0"])
    paths = copy_sample_photos(tmp_path / "photos")[: towers.TOWER_CHUNK + 2]
    batch = np.stack([preprocess(open_image(p), size=224) for p in paths])
    got = tower.forward(batch, IMAGE_OUTPUTS)
    session = ort.InferenceSession(str(tower.path()), providers=["CPUExecutionProvider"])
    ref = dict(zip(IMAGE_OUTPUTS, session.run(list(IMAGE_OUTPUTS), {"images": batch})))
    for name in ("pooled", "logits"):
        np.testing.assert_allclose(got[name], ref[name], atol=1e-5)
    assert got["maps"].dtype == np.float16 and got["maps"].shape == (len(paths), 7, 7, 1280)
    # float16: three significant digits
    np.testing.assert_allclose(got["prehead"].astype(np.float32), ref["prehead"], rtol=1e-3,
                               atol=1e-3)
