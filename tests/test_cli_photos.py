"""Photo search commands: index, search, similar, describe, photos, demo (fake and real models)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from xmodal.cli import app

FAKE = "python:tests.fake_models:ColourModel"
REPO = Path(__file__).resolve().parents[1]
runner = CliRunner()


def solid(path: Path, colour, size=(40, 30)) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size, colour).save(path)
    return path


@pytest.fixture
def indexed(tmp_path):
    root = tmp_path / "photos"
    solid(root / "red.png", (240, 20, 20))
    solid(root / "a" / "green.png", (20, 240, 20))
    solid(root / "a" / "b" / "blue.jpg", (20, 20, 240))
    solid(root / "yellow.png", (240, 240, 20))
    (root / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 not really a jpeg")
    caps = tmp_path / "caps.csv"
    caps.write_text("image,caption\nred.png,a red square\na/b/blue.jpg,a blue square\n")
    db = tmp_path / "photos.db"
    res = runner.invoke(
        app,
        [
            "index",
            str(root),
            "--db",
            str(db),
            "--model",
            FAKE,
            "--json",
            "-q",
            "--captions",
            str(caps),
        ],
    )
    assert res.exit_code == 0, res.output
    return root, db, json.loads(res.stdout)


def run_cli(*args: str, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", **(env_extra or {})}
    return subprocess.run(
        [sys.executable, "-m", "xmodal", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def test_index_reports_counts_and_skips(indexed):
    root, db, stats = indexed
    assert (stats["added"], stats["skipped"], stats["deleted"]) == (4, 1, 0)
    assert sum(stats["skip_reasons"].values()) == 1
    again = runner.invoke(app, ["index", str(root), "--db", str(db), "--json", "-q"])
    assert again.exit_code == 0, again.output
    second = json.loads(again.stdout)  # uses the model recorded in the database
    assert (second["added"], second["updated"], second["unchanged"]) == (0, 0, 4)
    quiet = runner.invoke(app, ["index", str(root), "--db", str(db), "-q"])
    assert "0 new and 0 changed" in quiet.output and "images/s" not in quiet.output


def test_search_json_shape_and_ranking(indexed):
    root, db, _ = indexed
    res = runner.invoke(app, ["search", "something blue", "--db", str(db), "-k", "2", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["query"] == "something blue"
    # path and score always; the file's date (no EXIF here: its modification time) and size
    assert [set(r) for r in out["results"]] == [
        {"path", "score", "taken_at", "date_source", "width", "height"}] * 2
    assert {r["date_source"] for r in out["results"]} == {"mtime"}
    assert out["hidden"] == 0 and out["no_good_match"] is False
    assert out["results"][0]["path"] == str(root / "a" / "b" / "blue.jpg")
    assert out["results"][0]["score"] >= out["results"][1]["score"]
    # an independent oracle: cosine between [mean colour, 0.1] and the query's [0, 0, 1, 0.1]
    img, txt = np.array([20 / 255, 20 / 255, 240 / 255, 0.1]), np.array([0, 0, 1, 0.1])
    expected = img @ txt / np.linalg.norm(img) / np.linalg.norm(txt)
    assert out["results"][0]["score"] == pytest.approx(expected, abs=1e-3)


def test_search_table_output(indexed):
    root, db, _ = indexed
    res = runner.invoke(app, ["search", "red", "--db", str(db), "-k", "1"])
    assert res.exit_code == 0, res.output
    flat = "".join(line.strip(" │┃") for line in res.output.splitlines())  # long paths fold
    assert "red.png" in flat and "blue.jpg" not in flat


def test_results_go_to_stdout_unfolded_so_they_can_be_piped(indexed):
    """A search's table is its result: on stdout (hints stay on stderr), each path whole on
    one line even when it is longer than a terminal, as `xmodal search ... > found.txt` needs."""
    root, db, _ = indexed
    res = run_cli("search", "red", "--db", str(db), "-k", "1")
    assert res.returncode == 0, res.stderr
    red = str(root / "red.png")
    assert any(red in line for line in res.stdout.splitlines()), res.stdout
    assert red not in res.stderr
    status = run_cli("photos", "--db", str(db), "--skipped")
    assert "broken.jpg" in status.stdout and "broken.jpg" not in status.stderr


def test_search_says_how_many_of_the_best_matches_it_hid(indexed):
    root, db, _ = indexed
    raw = json.loads(runner.invoke(app, ["search", "red", "--db", str(db), "-k", "3",
                                         "--json"]).stdout)
    cut = (raw["results"][0]["score"] + raw["results"][1]["score"]) / 2  # only the best passes
    res = runner.invoke(app, ["search", "red", "--db", str(db), "-k", "3",
                              "--min-score", str(cut)])
    assert res.exit_code == 0, res.output
    assert "2 of the best 3 matches hidden" in " ".join(res.output.split())


def test_search_takes_an_example_image_alone(indexed):
    root, db, _ = indexed
    res = runner.invoke(app, ["search", "--like", str(root / "red.png"), "--db", str(db),
                              "-k", "2", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    paths = [r["path"] for r in out["results"]]
    assert len(paths) == 2 and str(root / "red.png") not in paths  # the example is left out
    assert out["query"] == str(root / "red.png")
    empty = runner.invoke(app, ["search", "--db", str(db)])
    assert empty.exit_code != 0 and "--like" in str(empty.exception)


def test_db_help_names_every_place_the_default_comes_from():
    for cmd in ("search", "index", "duplicates", "serve"):
        res = runner.invoke(app, [cmd, "--help"], env={"COLUMNS": "300"})
        assert "$XDG_DATA_HOME" in res.output and "$XMODAL_DB" in res.output, cmd


def test_similar_json_has_search_shape(indexed):
    root, db, _ = indexed
    query = root / "yellow.png"
    res = runner.invoke(app, ["similar", str(query), "--db", str(db), "-k", "3", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["query"] == str(query)
    paths = [r["path"] for r in out["results"]]
    assert len(paths) == 3 and str(query) not in paths
    # yellow (240, 240, 20) is nearer to red and green than to blue
    assert paths[-1] == str(root / "a" / "b" / "blue.jpg")


@pytest.mark.parametrize(
    "name, content",
    [
        ("pool.txt", "a blue sky\n\na red apple\ngreen grass\n"),
        ("pool.csv", "image,caption\nx.jpg,a blue sky\nx.jpg,a red apple\ny.jpg,green grass\n"),
        (
            "pool.jsonl",
            '{"image": "x", "caption": "a blue sky"}\n'
            '{"image": "x", "caption": "a red apple"}\n'
            '{"image": "y", "caption": "green grass"}\n',
        ),
    ],
)
def test_describe_ranks_a_caption_pool(indexed, tmp_path, name, content):
    root, _, _ = indexed
    pool = tmp_path / name
    pool.write_text(content)
    res = runner.invoke(
        app,
        [
            "describe",
            str(root / "red.png"),
            "--captions",
            str(pool),
            "-k",
            "2",
            "--model",
            FAKE,
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert [r["caption"] for r in out["results"]][0] == "a red apple"
    assert len(out["results"]) == 2


def test_photos_status_lists_skipped(indexed):
    root, db, _ = indexed
    res = runner.invoke(app, ["photos", "--db", str(db), "--skipped", "--rebuild", "--json"])
    assert res.exit_code == 0, res.output
    info = json.loads(res.stdout)
    assert info["indexed"] == 4 and info["ann_vectors"] == 4 and info["captions"] == 2
    assert [s["path"] for s in info["skipped_files"]] == [str(root / "broken.jpg")]


def test_roots_say_which_folder_lies_inside_another(indexed):
    root, db, _ = indexed
    assert runner.invoke(app, ["index", str(root / "a"), "--db", str(db), "-q"]).exit_code == 0
    res = run_cli("photos", "--db", str(db), "--roots")
    line = next(x for x in res.stdout.splitlines() if f"folder: {root / 'a'} " in x)
    assert f"inside {root}" in line
    data = json.loads(runner.invoke(app, ["photos", "--db", str(db), "--roots", "--json"]).stdout)
    assert {r["folder"]: r["inside"] for r in data["roots"]} == {str(root): None,
                                                                 str(root / "a"): str(root)}


def test_prune_and_forget_print_json(indexed):
    """Every photo command takes --json; prune and forget refused it."""
    root, db, _ = indexed
    (root / "yellow.png").unlink()
    res = runner.invoke(app, ["prune", "--db", str(db), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout) == {"removed": 1}
    res = runner.invoke(app, ["forget", str(root / "a"), "--db", str(db), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout) == {"folder": str(root / "a"), "removed": 2}


def run_main(monkeypatch, capsys, *args: str) -> tuple[int, str]:
    """``xmodal ARGS`` through the real entry point (error handling included), in-process."""
    from xmodal.cli import main

    monkeypatch.setattr(sys, "argv", ["xmodal", *args])
    with pytest.raises(SystemExit) as exit_info:
        main()
    captured = capsys.readouterr()
    return exit_info.value.code, captured.out + captured.err


def test_user_errors_exit_2_with_a_clear_message(tmp_path, monkeypatch, capsys):
    code, msg = run_main(monkeypatch, capsys, "search", "a dog", "--db", str(tmp_path / "no.db"))
    assert code == 2 and "xmodal index" in msg and "Traceback" not in msg
    assert not (tmp_path / "no.db").exists()
    code, msg = run_main(monkeypatch, capsys, "search", "  ", "--db", str(tmp_path / "no.db"))
    assert code == 2 and "empty" in msg
    code, msg = run_main(
        monkeypatch, capsys, "index", str(tmp_path / "nope"), "--db", str(tmp_path / "x.db")
    )
    assert code == 2 and "not a folder" in msg and not (tmp_path / "x.db").exists()
    code, msg = run_main(monkeypatch, capsys, "describe", str(tmp_path / "x.jpg"),
                         "--captions", str(tmp_path / "none.txt"), "--model", FAKE)
    assert code == 2 and "not found" in msg
    for cmd in (["search", "a dog"], ["similar", "x.jpg"], ["describe", "x.jpg"]):
        code, msg = run_main(monkeypatch, capsys, *cmd, "-k", "0")  # said '... and offset'
        assert code == 2 and "'-k'" in msg and "offset" not in msg, cmd


def test_the_module_entry_point_runs(tmp_path):
    out = run_cli("search", "a dog", "--db", str(tmp_path / "nothing.db"))
    assert out.returncode == 2 and "xmodal index" in out.stdout + out.stderr


def test_help_has_examples():
    for cmd in ("index", "search", "similar", "describe", "demo"):
        res = runner.invoke(app, [cmd, "--help"])
        assert res.exit_code == 0 and "Example" in res.output, cmd
    from xmodal.cli.demo_cmd import DEFAULT_QUERIES  # the help said three; the demo ran four

    demo = runner.invoke(app, ["demo", "--help"], env={"COLUMNS": "300"}).output
    assert all(repr(q) in demo for q in DEFAULT_QUERIES) and "three" not in demo


def test_demo_on_a_folder_with_fake_model(indexed, tmp_path):
    root, _, _ = indexed
    res = runner.invoke(
        app,
        [
            "demo",
            str(root),
            "--db",
            str(tmp_path / "demo.db"),
            "--model",
            FAKE,
            "-q",
            "green",
            "-q",
            "blue",
            "-k",
            "1",
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert [o["query"] for o in out] == ["green", "blue"]
    assert [Path(o["results"][0]["path"]).name for o in out] == ["green.png", "blue.jpg"]


@pytest.mark.slow
def test_real_default_model_end_to_end(tmp_path):
    """Three sample photos from scikit-image, the shipped default model, index then search."""
    from xmodal.cli.demo_cmd import sample_photo_dir

    src = sample_photo_dir()
    folder = tmp_path / "photos"
    folder.mkdir()
    for name in ("chelsea.png", "coffee.png", "rocket.jpg"):
        (folder / name).write_bytes((src / name).read_bytes())
    db = str(tmp_path / "real.db")
    idx = runner.invoke(app, ["index", str(folder), "--db", db, "--quiet", "--json"])
    assert idx.exit_code == 0, idx.output
    assert json.loads(idx.stdout)["added"] == 3
    # the demo command on the same database: nothing to re-embed, then its searches
    res = runner.invoke(app, ["demo", str(folder), "--db", db, "-q", "a cat",
                              "-q", "a cup of coffee", "-k", "3", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert [Path(o["results"][0]["path"]).name for o in out] == ["chelsea.png", "coffee.png"]
    # the calibrated cutoff hides the other photos (scores 0.23 and below), and says so
    assert all(o["calibrated"] and len(o["results"]) + o["hidden"] == 3 for o in out)
    assert all(r["relevance"] >= o["min_relevance"] for o in out for r in o["results"])


def test_a_shown_match_never_reads_like_the_cutoff_that_hid_others():
    """The short-query cutoff sits below 1%: it read 'hidden below 1% match' beside results
    that read '1%' too; a cutoff relative to the best match (1.46% for a best at 14.6%) sits
    anywhere below 10%."""
    from xmodal.cli.photos_cmd import match_percent

    assert match_percent(0.0057) == "0.6%" and match_percent(0.0094) == "0.9%"
    assert match_percent(0.01462) == "1.5%" and match_percent(0.0149) == "1.5%"
    assert match_percent(0.012) == "1.2%" and match_percent(0.876) == "88%"
    shown = np.linspace(0.0, 0.3, 3001)  # a result never reads lower than its cutoff
    order = [float(match_percent(p)[:-1]) for p in shown]
    assert all(a <= b for a, b in zip(order, order[1:]))
    js = (Path(__file__).resolve().parents[1] / "src/xmodal/server/static/search.js").read_text()
    assert "p < 0.1 ? `${(p * 100).toFixed(1)}%`" in js  # the page says it the same way


def test_the_status_table_says_when_nothing_was_skipped_and_facets_name_what_is_missing(
        indexed):
    """The table output (not --json): an empty --skipped list and an empty facet say so."""
    root, db, _ = indexed
    (root / "broken.jpg").unlink()
    assert runner.invoke(app, ["index", str(root), "--db", str(db), "-q"]).exit_code == 0
    status = runner.invoke(app, ["photos", "--db", str(db), "--skipped"])
    assert status.exit_code == 0 and "no file was skipped" in status.output, status.output
    facets = runner.invoke(app, ["photos", "--db", str(db), "--facets"])
    assert "(no photo has a place)" in facets.output, facets.output  # solid PNGs: no GPS
