"""The default cutoff relative to the best match (issue 40): a result is hidden when its
calibrated relevance is below the threshold or below ``relative`` x the best match's, in photo
search (every back-end goes through the same Searcher) and in the short-query benchmark."""

import numpy as np
import pytest
from PIL import Image

from tests.fake_models import ColourModel
from xmodal.errors import XmodalError
from xmodal.eval import short_queries as sqm
from xmodal.index import PhotoIndex, calibration

COLOURS = {"red": (250, 10, 10), "darkred": (150, 30, 30), "orange": (250, 130, 20),
           "pink": (250, 120, 150), "purple": (140, 40, 160), "green": (20, 200, 30),
           "blue": (20, 30, 220)}


def _cal(relative: float, threshold: float = 0.05) -> calibration.Calibrator:
    return calibration.Calibrator(model_id=ColourModel.model_id, scores=[0.5, 1.0],
                                  probabilities=[0.0, 1.0], threshold=threshold,
                                  relative=relative)


@pytest.fixture()
def index(tmp_path, monkeypatch):
    folder = tmp_path / "photos"
    folder.mkdir()
    for name, rgb in COLOURS.items():
        Image.new("RGB", (32, 32), rgb).save(folder / f"{name}.png")
    idx = PhotoIndex(tmp_path / "p.db", model=ColourModel(),
                     model_spec="python:tests.fake_models:ColourModel")
    idx.update(folder, progress=False)
    yield idx
    idx.close()


def _expected(relative: float, threshold: float = 0.05) -> set[str]:
    """The shown photos, computed apart from the search code: cosines, the linear map, the rule."""
    model = ColourModel()
    names = list(COLOURS)
    photos = model.embed_images([Image.new("RGB", (4, 4), COLOURS[n]) for n in names])
    p = np.clip((photos @ model.embed_texts(["red"])[0] - 0.5) / 0.5, 0, 1)
    cut = max(threshold, relative * p.max())
    return {n for n, v in zip(names, np.round(p, 4)) if v >= cut}


@pytest.mark.parametrize("relative", [0.0, 0.5, 0.9])
def test_the_default_answer_hides_what_is_far_below_the_best_match(index, monkeypatch, relative):
    cal = _cal(relative)
    monkeypatch.setattr(calibration, "load_calibrator",
                        lambda mid, path=None: cal if mid == cal.model_id else None)
    answer = index.find("red", k=10)
    shown = {r.path.rsplit("/", 1)[-1][:-4] for r in answer.results}
    assert shown == _expected(relative)
    best = max(r.relevance for r in answer.results)
    assert answer.min_relevance == pytest.approx(max(0.05, relative * best))
    assert answer.hidden == len(COLOURS) - len(shown)
    if relative == 0.9:
        assert len(shown) < len(_expected(0.0))  # the rule has something to hide here
    # an explicit cutoff replaces the default, relative share included
    asked = index.find("red", k=10, min_relevance=0.05)
    assert {r.path.rsplit("/", 1)[-1][:-4] for r in asked.results} == _expected(0.0)


def test_a_second_page_keeps_the_first_pages_cutoff(index, monkeypatch):
    cal = _cal(0.5)
    monkeypatch.setattr(calibration, "load_calibrator",
                        lambda mid, path=None: cal if mid == cal.model_id else None)
    whole = index.find("red", k=10)
    first, second = index.find("red", k=1), index.find("red", k=1, offset=1)
    assert first.min_relevance == second.min_relevance == whole.min_relevance
    assert [r.path for r in first.results + second.results] == [r.path for r in
                                                                 whole.results[:2]]


def test_relative_is_kept_in_the_file_and_checked():
    cal = _cal(0.1)
    again = calibration.Calibrator.from_json(cal.to_json())
    assert again.relative == 0.1 and again.default_cutoff(0.8) == pytest.approx(0.08)
    assert again.default_cutoff(0.2) == 0.05  # the threshold when it is higher
    old = cal.to_json().replace('"relative": 0.1', '"unused": 0')
    assert calibration.Calibrator.from_json(old).relative == 0.0  # files written before it
    for bad in (-0.1, 1.0, float("nan")):
        with pytest.raises(XmodalError):
            _cal(bad)


def test_the_benchmark_applies_the_same_rule_as_search():
    p = np.array([0.6, 0.2, 0.07, 0.04])
    shown = sqm.shown_above(lambda s: s, 0.05, 0.25)(0, p)
    assert shown.tolist() == [True, True, False, False]  # 0.07 < 0.25 x 0.6
    assert sqm.shown_above(lambda s: s, 0.05)(0, p).tolist() == [True, True, True, False]


@pytest.mark.parametrize("name", ["dual", "fast"])
def test_the_shipped_share_is_the_recorded_dev_choice(name):
    """Each shipped calibration file's ``relative`` is the share that the rule picks from the
    recorded dev curve (benchmarks/results/relative_cutoff.json), at the shipped threshold."""
    import json
    from pathlib import Path

    shipped = calibration.Calibrator.from_json(
        (calibration.ASSETS / name / "calibration.json").read_text())
    record = json.loads((Path(__file__).resolve().parents[1] / "benchmarks" / "results" /
                         "relative_cutoff.json").read_text())["results"]["models"][name]
    assert record["model_id"] == shipped.model_id
    assert record["threshold"] == pytest.approx(shipped.threshold)
    ok = [r for r in record["curve"]
          if r["sentence_right_photo_shown_share"] >= record["sentences_at_least"]]
    best = max(ok, key=lambda r: (round(r["f1_mean"], 12), -r["relative"]))
    assert shipped.relative == best["relative"] == record["chosen"]["relative"] > 0
    plain = next(r for r in record["curve"] if r["relative"] == 0)
    assert best["f1_mean"] > plain["f1_mean"]


def test_the_figure_is_drawn_from_the_recorded_curve(tmp_path):
    import json
    from pathlib import Path

    from benchmarks import relative_cutoff as bench

    record = json.loads(bench.RESULT.read_text())
    drawn = bench.render_figure(bench.RESULT, tmp_path / "a.png")
    assert drawn.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    record["results"]["models"]["dual"]["chosen"]["relative"] = 0.3
    changed = tmp_path / "changed.json"
    changed.write_text(json.dumps(record))
    assert bench.render_figure(changed, tmp_path / "b.png").read_bytes() != drawn.read_bytes()
    assert Path(bench.FIGURE).is_file()  # the one docs/photo-search.md shows
