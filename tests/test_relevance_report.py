"""``reports/relevance_models.md`` is rendered from the stored JSON; its numbers follow the JSON,
and a result that contradicts one of its sentences stops the rendering with the claim to
rewrite."""

import copy
import json
import shutil
from pathlib import Path

import pytest
from stored_results import stored

from xmodal.errors import XmodalError
from xmodal.reproduce.relevance_report import NAMES, RESULT_FILES, markdown, write_report
from xmodal.reproduce.render import ClaimFailed

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def found() -> dict:
    return {k: copy.deepcopy(stored(f"{name}.json")) for k, name in RESULT_FILES.items()}


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_stored_report_is_what_the_stored_json_renders(found):
    assert markdown(**found) + "\n" == (ROOT / "reports" / "relevance_models.md").read_text()


def test_history_is_marked_historical_and_rendered_from_its_file(found):
    assert found["hist"]["historical"] is True
    found["hist"]["crm_low_end_check"]["cv_F1"] = 0.1011
    assert "(CV F1 0.1011 vs 0.1043)" in markdown(**found)


def test_changed_numbers_are_rendered(found):
    models = found["results"]["corel"]["models"]
    models[NAMES["wide"]]["annotation"]["mean_P"] = 0.1234
    models[NAMES["crm"]]["annotation"]["n_words_recall_gt0"] = 76
    found["dev"]["results"]["best"]["mean_F1"] = 0.131
    md = _flat(markdown(**found))
    assert "mean recall 0.133, mean precision 0.123 over 260 words" in md
    assert "Corel5K, CRM on blob embeddings: 76 words" in md
    assert "to 0.131 (t 0.2, beta 0.1" in md


def _annotation(found: dict, key: str) -> dict:
    return found["results"]["corel"]["models"][NAMES[key]]["annotation"]


@pytest.mark.parametrize("change, claim", [
    (lambda f: _annotation(f, "cm").update(mean_P=0.11), "not its precision"),
    (lambda f: _annotation(f, "wide").update(mean_P=0.095), "pre-registered CMRM reaches"),
    (lambda f: _annotation(f, "crm").update(mean_P=0.08), "CRM beats plain CMRM"),
    (lambda f: _annotation(f, "crm_wide").update(mean_R=0.2), "neither CRM reaches"),
    (lambda f: f["dev"]["results"]["best"].update(mean_F1=0.2), "stays below the neural head"),
    (lambda f: f["nested"]["summary"]["calibrated CMRM, best CV F1"].update(meets_paper_row=5),
     "earlier rules meet the row"),
])
def test_a_result_that_flips_a_sentence_stops_the_rendering(found, change, claim):
    change(found)
    with pytest.raises(ClaimFailed, match=claim) as err:
        markdown(**found)
    assert "templates/relevance_models.md" in str(err.value)


def test_write_report_names_the_missing_results(tmp_path):
    src = ROOT / "benchmarks" / "results"
    for name in ("relevance_models.json", "corel_nested_cv.json"):
        shutil.copy(src / name, tmp_path / name)
    with pytest.raises(XmodalError, match="flickr_crm_temperature_dev.json"):
        write_report(tmp_path, tmp_path / "r.md")
    for name in ("flickr_crm_temperature_dev.json", "relevance_models_historical.json"):
        (tmp_path / name).write_text(json.dumps(stored(name)))
    write_report(tmp_path, tmp_path / "r.md")
    assert (tmp_path / "r.md").read_text() == (ROOT / "reports" / "relevance_models.md").read_text()
