"""The one saved-model format: round trip, strict reading, and ``xmodal.models.load``."""

import json

import numpy as np
import pytest

from xmodal.errors import XmodalError
from xmodal.factory import SAVED_TYPES, saved_model_class
from xmodal.factory import load_saved_model as load
from xmodal.models.kcca import KCCA
from xmodal.models.modeldir import ARRAYS_FILE, CONFIG_FILE, read_model_dir


def _kcca(tmp_path):
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(30, 4)), rng.normal(size=(30, 3))
    model = KCCA(kappa=0.5, rank=10).fit(x @ x.T, y @ y.T)
    return model, model.save(tmp_path / "m", provenance={"note": "test"}), x, y


def test_directory_holds_config_and_one_npz_without_pickle(tmp_path):
    model, path, x, y = _kcca(tmp_path)
    assert sorted(p.name for p in path.iterdir()) == [ARRAYS_FILE, CONFIG_FILE]
    cfg = json.loads((path / CONFIG_FILE).read_text())
    assert cfg["type"] == "kcca" and cfg["version"] == KCCA.SAVE_VERSION
    assert cfg["params"] == model.get_params() and cfg["provenance"] == {"note": "test"}
    with np.load(path / ARRAYS_FILE, allow_pickle=False) as z:  # no object arrays
        assert set(z.files) == set(KCCA._ARRAYS)
    back = load(path)  # dispatched by type
    assert type(back) is KCCA
    kx, ky = x[:5] @ x[model.pivots_x_].T, y[:5] @ y[model.pivots_y_].T
    np.testing.assert_array_equal(back.score(kx, ky), model.score(kx, ky))


def test_unknown_type_and_version_are_clear_errors(tmp_path):
    _, path, _, _ = _kcca(tmp_path)
    cfg_file = path / CONFIG_FILE
    cfg = json.loads(cfg_file.read_text())
    cfg_file.write_text(json.dumps(cfg | {"version": 99}))
    with pytest.raises(XmodalError, match="version 99"):
        load(path)
    cfg_file.write_text(json.dumps(cfg | {"type": "mystery"}))
    with pytest.raises(XmodalError, match="unknown model type 'mystery'"):
        load(path)
    cfg_file.write_text(json.dumps({"type": "kcca", "kappa": 0.5}))  # the old, unversioned layout
    with pytest.raises(XmodalError, match="older xmodal"):
        load(path)
    with pytest.raises(XmodalError, match="not a saved"):
        load(tmp_path / "nothing-here")
    cfg_file.write_text("{not json")
    with pytest.raises(XmodalError, match="invalid JSON"):
        load(path)


def test_wrong_type_for_the_class_is_named(tmp_path):
    _, path, _, _ = _kcca(tmp_path)
    from xmodal.models.relevance import CMRM

    with pytest.raises(XmodalError, match="holds a 'kcca' model, not 'cmrm'"):
        CMRM.load(path)


def test_every_class_that_saves_is_registered_with_the_factory():
    """A class whose SAVE_TYPE the factory does not know could save models nobody can open."""
    import importlib
    import pkgutil

    import xmodal.gist
    import xmodal.models

    declared = {}
    for package in (xmodal.models, xmodal.gist):
        for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
            module = importlib.import_module(info.name)
            for obj in vars(module).values():
                if not isinstance(obj, type) or obj.__module__ != info.name \
                        or not callable(getattr(obj, "save", None)):
                    continue
                own = [vars(obj).get(a) for a in ("SAVE_TYPE", "model_type", "kind")]
                declared.update({t: obj for t in own if isinstance(t, str) and t})
    assert declared and set(declared) <= set(SAVED_TYPES), set(declared) - set(SAVED_TYPES)
    for kind, cls in declared.items():
        assert saved_model_class(kind) is cls, kind


def test_every_registered_type_names_a_class_that_reads_its_type():
    for kind in SAVED_TYPES:
        cls = saved_model_class(kind)
        declared = getattr(cls, "SAVE_TYPE", None) or getattr(cls, "model_type", None) \
            or getattr(cls, "kind", None)
        assert declared == kind, (kind, cls)
        assert callable(cls.load) and callable(cls.save)


def test_shipped_assets_are_in_the_format():
    from xmodal.models.dual import DEFAULT_MODEL_DIR as DUAL
    from xmodal.models.tagger import DEFAULT_MODEL_DIR as TAG

    from xmodal.gist.detect import default_ranker_path

    for path, kind in ((DUAL, "dual-encoder"), (TAG, "keyword_head"),
                       (default_ranker_path(), "gist-coordinate-ascent")):
        saved = read_model_dir(path, kind)
        assert saved.arrays and saved.params and saved.provenance
