"""The speed-against-quality table: its Markdown, the marker replacement and the README's copy.

No model runs here: a synthetic ``model_table.json`` is rendered.
"""

from __future__ import annotations

import json

import pytest

from benchmarks.model_table import (
    DOCS,
    END,
    MISSING,
    RESULTS,
    START,
    TABLE,
    latest_quality,
    marked,
    quality_values,
    render_markdown,
    replace_marked,
    write_docs,
)


def synthetic_table() -> dict:
    full = {"files_mb": 512.34, "peak_mb": 801.4, "images_per_s_224": 101.25,
            "images_per_s_12mp": 27.5, "query_ms": 14.32, "cold_search_s": 0.789,
            "flickr8k_r1": [0.368, 0.2904], "cc_t2i_r10": 0.752,
            "skimage_first_top5": [11, 13, 13]}
    partial = {**full, "files_mb": 95.0, "cc_t2i_r10": None}
    return {"commit": "abc1234", "date": "2026-11-28T06:00:00+00:00",
            "results": {"rows": [{"model": "dual", "values": full, "missing": {}},
                                 {"model": "fast", "values": partial,
                                  "missing": {"cc_t2i_r10": "CC18K absent"}}],
                        "skipped": [{"spec": "other", "reason": "unknown model"}],
                        "settings": {"photos": 400, "camera_photos": 100, "cpu": "AMD EPYC, 2"}}}


def test_markdown_has_one_row_per_model_and_a_dash_for_a_missing_value():
    md = render_markdown(synthetic_table())
    lines = md.splitlines()
    assert lines[0].startswith("| model | files MB | peak memory MB (index) | images/s 224-px")
    assert lines[0].endswith("| skimage-ood first / top-5 |")
    assert lines[1].count("|---") == 10
    assert lines[2] == ("| `dual` | 512.3 | 801 | 101.2 | 27.5 | 14.3 | 0.79 | 36.8 / 29.0 | 75.2 "
                        "| 11 / 13 of 13 |")
    assert lines[3] == ("| `fast` | 95.0 | 801 | 101.2 | 27.5 | 14.3 | 0.79 | 36.8 / 29.0 | "
                        f"{MISSING} | 11 / 13 of 13 |")
    assert "at commit abc1234 (2026-11-28" in md and "`other`" in md


def test_markers_replaced_and_the_rest_kept(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text(f"# Title\n\nintro\n\n{START}\nold table\n{END}\n\n## Next\ntext\n")
    write_docs(synthetic_table(), paths=(doc,))
    text = doc.read_text()
    assert text.startswith(f"# Title\n\nintro\n\n{START}\n| model |")
    assert text.endswith(f"{END}\n\n## Next\ntext\n") and "old table" not in text
    assert marked(text) == render_markdown(synthetic_table())
    assert replace_marked(text, "x\n") == f"# Title\n\nintro\n\n{START}\nx\n{END}\n\n## Next\ntext\n"
    with pytest.raises(ValueError):
        replace_marked("no markers here", "x")
    with pytest.raises(ValueError):
        replace_marked(f"{END}\n{START}\n", "x")


def test_quality_values_name_what_is_missing():
    values, missing = quality_values(None)
    assert set(values.values()) == {None} and "--quality" in missing["flickr8k_r1"]
    rec = {"metrics": {"flickr8k-5cap": [0.3, 0.2], "skimage-ood": [1, 2, 13]},
           "missing": {"cc-heldout": "CC18K absent"}}
    values, missing = quality_values(rec)
    assert values == {"flickr8k_r1": [0.3, 0.2], "cc_t2i_r10": None,
                      "skimage_first_top5": [1, 2, 13]}
    assert missing == {"cc_t2i_r10": "CC18K absent"}


def test_a_later_record_replaces_only_the_protocols_it_looked_at():
    def rec(source, looks, protocols, metrics, missing=None):
        return {"key": "bridge|fp32", "date": f"day {looks}", "commit": "c", "source": source,
                "test_looks": looks, "protocols": protocols, "metrics": metrics,
                "missing": missing or {}}

    imported = rec("imported", 0, ["flickr8k-5cap", "cc-heldout", "skimage-ood"],
                   {"flickr8k-5cap": [0.03, 0.05], "cc-heldout": 0.3},
                   {"skimage-ood": "not in the imported files"})
    skimage = rec("evaluated", 1, ["skimage-ood"], {"skimage-ood": [2, 6, 13]})
    merged = latest_quality([imported, skimage])["bridge|fp32"]
    assert merged["metrics"] == {"flickr8k-5cap": [0.03, 0.05], "cc-heldout": 0.3,
                                 "skimage-ood": [2, 6, 13]}
    assert merged["missing"] == {}
    assert merged["records"]["skimage-ood"]["test_looks"] == 1
    assert merged["records"]["cc-heldout"]["source"] == "imported"
    full = rec("evaluated", 2, ["flickr8k-5cap", "cc-heldout", "skimage-ood"],
               {"flickr8k-5cap": [0.04, 0.06], "skimage-ood": [3, 6, 13]},
               {"cc-heldout": "CC18K absent"})
    merged = latest_quality([imported, skimage, full])["bridge|fp32"]
    assert merged["metrics"] == {"flickr8k-5cap": [0.04, 0.06], "skimage-ood": [3, 6, 13]}
    assert merged["missing"] == {"cc-heldout": "CC18K absent"}


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_docs_show_the_stored_table(doc):
    stored = RESULTS / f"{TABLE}.json"
    if not stored.is_file():
        pytest.skip(f"{stored} is written by python -m benchmarks.model_table")
    assert marked(doc.read_text()) == render_markdown(json.loads(stored.read_text()))
