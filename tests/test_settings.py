"""The settings table: one record per registered model, and `xmodal train --setting` / `xmodal
models` read the same records as `xmodal eval -m NAME`."""

import json
from dataclasses import FrozenInstanceError

import pytest
from typer.testing import CliRunner

from xmodal.cli import app
from xmodal.errors import XmodalError
from xmodal.factory import list_models
from xmodal.recipes import all_settings, get_setting


def _norm(v):
    return tuple(v) if isinstance(v, (list, tuple)) else v


def test_every_record_is_frozen_complete_and_builds_its_estimator():
    table = all_settings()
    assert list_models() == sorted(table)
    for name, s in table.items():
        assert s.name == name and s.features and s.provenance
        est = s.build()
        assert type(est) is s.estimator_class()
        if s.params:  # the estimator holds exactly the record's values
            got = est.get_params()
            for k, v in s.params.items():
                assert _norm(got[k]) == _norm(v), (name, k)
        with pytest.raises((FrozenInstanceError, TypeError)):
            s.params["x"] = 1  # read-only
        with pytest.raises(FrozenInstanceError):
            s.name = "other"


def test_unknown_names_and_protocols_are_clear_errors():
    with pytest.raises(XmodalError, match="xmodal models"):
        get_setting("nope")
    with pytest.raises(XmodalError, match="choose from"):
        get_setting("nope", "kcca")
    with pytest.raises(XmodalError, match="wikipedia"):
        get_setting("scm").scorer("corel5k")


def _fake_fit(monkeypatch):
    from xmodal.models import hodosh

    seen = []

    def fake_fit(self, hd):
        seen.append(self.get_params())
        raise RuntimeError("stop before training")

    monkeypatch.setattr(hodosh.HodoshKCCA, "fit", fake_fit)
    monkeypatch.setattr("xmodal.recipes.flickr8k.load_hodosh_data", lambda data=None: FakeData)
    return seen


class FakeData:
    """Stands in for HodoshData where only the cache key reads it: its tokens' digest."""
    tokens_digest = "0" * 12


@pytest.mark.parametrize("name", ["tri5sem", "hodosh-tri5sem-full", "bow5-448"])
def test_train_setting_is_exactly_the_registered_model(monkeypatch, tmp_path, name):
    """`xmodal train kcca --setting tri5sem` builds the same system as `-m hodosh-tri5sem`."""
    from xmodal.recipes import flickr8k

    monkeypatch.setenv("XMODAL_CACHE", str(tmp_path))
    seen = _fake_fit(monkeypatch)
    with pytest.raises(RuntimeError, match="stop"):
        flickr8k.get_system(name, hd=FakeData)
    result = CliRunner().invoke(app, ["train", "kcca", "--setting", name,
                                      "--out", str(tmp_path / "m")])
    assert isinstance(result.exception, RuntimeError)
    assert len(seen) == 2 and seen[0] == seen[1]
    assert {k: _norm(v) for k, v in seen[0].items()} == {
        k: _norm(v) for k, v in get_setting(name, "kcca").params.items()}


def test_train_overrides_are_explicit(monkeypatch, tmp_path):
    seen = _fake_fit(monkeypatch)
    CliRunner().invoke(app, ["train", "kcca", "--setting", "tri5sem", "--image-kernel",
                             "effnet", "--out", str(tmp_path / "m")])
    base = dict(get_setting("hodosh-tri5sem").params)
    changed = {k for k in base if _norm(seen[-1][k]) != _norm(base[k])}
    assert changed == {"image_kernel"} and seen[-1]["image_kernel"] == "effnet"


def test_models_command_lists_the_table_with_provenance():
    result = CliRunner().invoke(app, ["models", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [r["name"] for r in rows] == list(all_settings())
    tri = next(r for r in rows if r["name"] == "hodosh-tri5sem")
    assert tri["params"]["diag_factor"] == 4.0 and tri["params"]["text_landmarks"] is True
    assert "Hodosh" in tri["provenance"] and tri["family"] == "kcca"
    assert CliRunner().invoke(app, ["models"]).exit_code == 0
