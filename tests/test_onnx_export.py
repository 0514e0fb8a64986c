"""Sentence towers exported with their weights in an external data file (what MPNet ships as):
the same numbers as the self-contained export, from a small graph file beside the weights."""

import numpy as np
import onnxruntime as ort

from xmodal.features import onnx_engine
from xmodal.features.weights import load_minilm


def _embed(path, texts):
    tok = onnx_engine.minilm_tokenizer()
    enc = tok.encode_batch(texts)
    feeds = {"input_ids": np.array([e.ids for e in enc]),
             "attention_mask": np.array([e.attention_mask for e in enc]),
             "token_type_ids": np.array([e.type_ids for e in enc])}
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(["embedding"], feeds)[0]


def test_external_weights_give_the_same_embeddings(tmp_path):
    bert = load_minilm()[0].auto_model.eval()
    inline = onnx_engine.export_sentence(tmp_path / "inline.onnx", bert, token_types=True)
    external = onnx_engine.export_sentence(tmp_path / "ext.onnx", bert, token_types=True,
                                           external=True)
    data = tmp_path / "ext.onnx.data"
    assert data.is_file() and data.stat().st_size > 50_000_000
    assert external.stat().st_size < 1_000_000 < inline.stat().st_size
    assert not list(tmp_path.glob("*.tmp"))
    texts = ["a dog runs on the beach", "two people ride bicycles past a red wall"]
    np.testing.assert_allclose(_embed(external, texts), _embed(inline, texts), atol=1e-6)
