"""``reports/dual_encoder.md`` and its tables file render from the stored JSON; numbers follow the
JSON, and a result that contradicts a sentence of the template stops the rendering with the claim
that flipped (a person rewrites the sentence)."""

import copy
import json
import shutil
from pathlib import Path

import pytest
from stored_results import RESULTS, stored
from typer.testing import CliRunner

from xmodal.recipes.dual_finetune import SHIPPED_STAGE2
from xmodal.reproduce.dual_report import EXTRA, HISTORY, markdown, report_markdown
from xmodal.reproduce.render import ClaimFailed

ROOT = Path(__file__).resolve().parents[1]


def _stored() -> tuple[dict, dict]:
    return stored("dual_encoder"), {name: stored(name) for name in EXTRA}


def _flat(text: str) -> str:
    """The report with its line wrapping undone."""
    return " ".join(text.split())


def test_stored_report_is_what_the_stored_json_renders():
    res, extra = _stored()
    assert report_markdown(res, extra) == (ROOT / "reports" / "dual_encoder.md").read_text()
    assert markdown(res) == (RESULTS / "dual_encoder_tables.md").read_text()


def test_the_historical_file_is_marked_and_not_rendered():
    history = stored(HISTORY)
    assert history["historical"] is True and set(history["sources"]) <= set(history)
    res, extra = _stored()
    changed = copy.deepcopy(extra)
    changed[HISTORY]["train_cli"]["wall_s"] = 987654  # compared nowhere, printed nowhere
    assert report_markdown(res, changed) == report_markdown(res, extra)


def test_numbers_follow_the_json():
    res, extra = _stored()
    res["test"]["cc-heldout"]["dual"]["i2t"]["R@5"] = 0.6789  # stored: 0.64
    res["train_cli_stage2"]["wall_s"] = 4321
    extra["query_latency"]["results"]["mpnet"]["median_ms"] = 98.76
    extra["encode_speed"]["results"]["cold"]["mpnet"] = 2 * extra["encode_speed"]["results"][
        "cold"]["mpnet"]
    extra["index_speed_models_lite0_vs_lite2"]["results"]["models"]["dual"]["images_per_s"] = 9.87
    text = report_markdown(res, extra)
    md, before = _flat(text), _flat(report_markdown(*_stored()))
    cc_row = next(r for r in text.splitlines() if r.startswith("| **dual (shipped)** |"))
    assert cc_row.split(" | ")[2] == "67.9"
    assert "4,321 s." in md and "MPNet alone 98.8 ms" in md
    assert "indexed at 9.9 images/s" in md
    captions = sum(d["captions"] for d in extra["encode_speed"]["results"]["training_data"]
                   .values())
    assert f"MPNet of their {captions:,} captions about" in md and md != before
    cc_table = markdown(res).split("`cc-heldout`")[1]
    assert next(r for r in cc_table.splitlines() if r.startswith("| dual (shipped) |")).split(
        " | ")[2] == "67.9"


def test_the_tables_file_lists_the_models_the_json_holds():
    res, _ = _stored()
    res["test"]["cc-heldout"]["a new model"] = copy.deepcopy(res["test"]["cc-heldout"]["dual"])
    tables = markdown(res)
    assert "| a new model |" in tables.split("`cc-heldout`")[1].split("Out-of-domain")[0]


@pytest.mark.parametrize("change, claim", [
    (lambda res, extra: res["test"]["flickr8k-5cap"]["dual"]["i2t"].update({"R@1": 0.34}),
     "meets both R@1 goals"),
    (lambda res, extra: res["ood"]["results"]["dual"].update(top1_with_distractors="8/13"),
     "skimage-ood goal met"),
    (lambda res, extra: res["querybank"].update(beta=10.0), "dual-qb uses the selected beta"),
    (lambda res, extra: extra["index_speed"]["machine"].update(load_avg_1min=99.0),
     "quieter machine"),
    (lambda res, extra: res["train_cli"]["stage2"].update(max_abs_diff=0.5), "differ in shape"),
    (lambda res, extra: res["variants"][0]["dev"].update({"i2t_R@1": 31.0}),
     "first round's rerun prints as the historical run"),
])
def test_a_flipped_conclusion_stops_the_report_and_names_its_claim(change, claim):
    res, extra = _stored()
    change(res, extra)
    with pytest.raises(ClaimFailed, match=claim) as err:
        report_markdown(res, extra)
    assert "templates/dual_encoder.md" in str(err.value)


def test_report_only_rewrites_the_report_from_the_json(tmp_path):
    from xmodal.cli import app

    res, extra = _stored()
    for name in ("dual_encoder", *EXTRA):
        shutil.copy(RESULTS / f"{name}.json", tmp_path / f"{name}.json")
    report = tmp_path / "dual_encoder.md"
    args = ["reproduce", "dual", "--report-only", "--out", str(tmp_path), "--report", str(report)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert report.read_text() == report_markdown(res, extra)
    assert (tmp_path / "dual_encoder_tables.md").read_text() == markdown(res)

    (tmp_path / "query_latency.json").unlink()
    assert CliRunner().invoke(app, args).exit_code != 0


def test_train_cli_records_the_choice_and_the_array_difference(tmp_path, monkeypatch):
    """``--train-cli STAGE1``: the run's saved model is compared with the shipped one (here the
    "training" copies the shipped model, then perturbs one array)."""
    import subprocess

    import numpy as np

    from xmodal.models.dual import DEFAULT_MODEL_DIR
    from xmodal.reproduce import dual as reproduce_dual

    if not (Path(DEFAULT_MODEL_DIR) / "config.json").is_file():
        pytest.skip("the shipped model is not in this checkout")
    calls, bump = [], {"by": 0.0}

    def fake_run(cmd, check):
        calls.append(cmd)
        out = Path(cmd[cmd.index("--out") + 1])
        shutil.copytree(DEFAULT_MODEL_DIR, out)
        with np.load(out / "arrays.npz") as z:
            arrays = {k: z[k] for k in z.files}
        key = next(k for k in sorted(arrays) if arrays[k].dtype.kind == "f")
        arrays[key] = (arrays[key].astype(np.float64) + bump["by"]).astype(arrays[key].dtype)
        np.savez(out / "arrays.npz", **arrays)

    monkeypatch.setattr(subprocess, "run", fake_run)
    rec = reproduce_dual.train_cli(tmp_path / "stage1")
    assert calls[0][1:5] == ["-m", "xmodal", "train", "dual"]
    assert "--stage2-from" in calls[0] and "stage1" not in rec
    assert rec["stage2"]["max_abs_diff"] == 0.0
    assert rec["stage2"]["top_lr"] == SHIPPED_STAGE2["top_lr"]
    bump["by"] = 0.5
    rec = reproduce_dual.train_cli(tmp_path / "stage1")
    assert rec["stage2"]["max_abs_diff"] == pytest.approx(0.5, abs=1e-3)


def test_array_difference_of_models_of_other_shapes_is_none(tmp_path):
    """A full train-CLI run that picks another bridge weight saves other widths: no crash."""
    import numpy as np

    from xmodal.reproduce.dual import max_array_difference

    for name, width in (("a", 768), ("b", 1536), ("c", 768)):
        (tmp_path / name).mkdir()
        np.savez(tmp_path / name / "arrays.npz", mean=np.full(width, 0.5 if name == "c" else 0.0))
    assert max_array_difference(tmp_path / "a", tmp_path / "b") is None
    assert max_array_difference(tmp_path / "a", tmp_path / "c") == 0.5
