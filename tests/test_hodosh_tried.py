"""The Hodosh report's "What was tried" and "Cost" sections render from the stored exploration
(``xmodal reproduce hodosh --part explore``), and the best dev row is picked as documented."""

import pytest

from xmodal.reproduce.hodosh_tried import LABELS, best, cost_values, tried_values, used_columns


def _grid(kappas, scores):
    """Dev-grid columns: one row per (kappa, n) with the given (R@5, R@10, medR) for both tasks."""
    rows = [(k, n, s) for k, per_n in zip(kappas, scores) for n, s in per_n.items()]
    cols = {"kappa": [k for k, _, _ in rows], "n": [n for _, n, _ in rows]}
    for task in ("i2t", "t2i"):
        cols[task] = {"R@1": [s[0] / 3 for _, _, s in rows], "R@5": [s[0] for _, _, s in rows],
                      "R@10": [s[1] for _, _, s in rows], "medR": [s[2] for _, _, s in rows]}
    return cols


def test_best_is_the_highest_r5_plus_r10_then_the_lower_median_rank():
    cols = _grid([1.0, 5.0], [{10: (0.10, 0.20, 50), 20: (0.12, 0.18, 40)},
                              {10: (0.11, 0.19, 30), 20: (0.05, 0.10, 90)}])
    # three rows tie at R@5 + R@10 = 0.30: the lowest medR (30, kappa 5, n 10) wins
    assert best(cols, "i2t")[("kappa")] == 5.0 and best(cols, "i2t")["n"] == 10
    # within kappa 1 the tie goes to medR 40 (n 20)
    assert best(cols, "t2i", 1.0)["n"] == 20
    assert best(cols, "t2i", 5.0)["R@5"] == 0.11


def _selection(cols):
    return {"candidates": {"kappa": cols["kappa"], "n": cols["n"]},
            "i2t": {"dev": cols["i2t"]}, "t2i": {"dev": cols["t2i"]}}


def _exploration():
    used = _grid([1.0], [{60: (0.12, 0.20, 70)}])
    worse = _grid([5.0], [{100: (0.10, 0.16, 90)}])
    better = _grid([1.0], [{300: (0.14, 0.22, 60)}])
    run = {"command": "xmodal reproduce hodosh --part explore", "commit": "abc1234",
           "date": "2030-01-01T00:00:00+00:00"}
    results = {
        "bow5-d3": {"system": "bow5", "overrides": {"diag_factor": 3.0}, "dev": worse,
                    "pivots": [1500, 1500], "fit_s": 20.0,
                    "kernel_blocks_s": {"train x 1500": 0.1}},
        "bow5-3000-r3000": {"system": "bow5", "overrides": {"rank": 3000}, "dev": better,
                            "pivots": [3000, 3000], "fit_s": 90.0,
                            "kernel_blocks_s": {"dev x 3000": 33.0}},
        "tri5sem-d8": {"system": "tri5sem", "overrides": {"diag_factor": 8.0}, "dev": better,
                       "pivots": [1500, 1400], "fit_s": 30.0,
                       "kernel_blocks_s": {"train x 1500": 0.2}},
    }
    stamp = {"command": run["command"], "git_commit": "abc1234", "date": run["date"]}
    results = {name: {**rec, "run": stamp} for name, rec in results.items()}
    return {**run, "results": results}, {"bow5": _selection(used), "tri5sem": _selection(used)}


def test_tried_values_render_each_row_and_compare_it_with_the_used_setting():
    exploration, selection = _exploration()
    values, claims = tried_values(exploration, selection)
    assert values["runs"] == ("`xmodal reproduce hodosh --part explore` (commit `abc1234`, "
                              "2030-01-01)")
    assert ("| p = 2, d = 1, kappa in {0.1, 0.5, 1, 5} (used) | 1 / 1 | 12.0 | 20.0 | 12.0 | "
            "20.0 | 4.0 / 4.0 | as registered |") in values["bow5_table"]
    assert f"| {LABELS['bow5-d3']} | 5 / 5 | 10.0 | 16.0 | 10.0 | 16.0 |" in values["bow5_table"]
    # mean of the four cells: used 16.0, d = 3 13.0, rank 3,000 18.0
    assert values["bow5_mean"] == pytest.approx(16.0)
    assert values["bow5_against"] == ("text diagonal factor d = 3 -3.0 and 3,000 image "
                                      "landmarks, rank 3,000 +2.0")
    assert values["big_gain"] == pytest.approx(2.0)
    assert (values["big_r1"], values["used_r1"]) == ("4.7 / 4.7", "4.0 / 4.0")
    # d = 8 is 2 points better on dev than the used d = 4: the template's sentence fails
    assert (values["tri_best"], values["tri_best_gain"]) == ("d = 8", pytest.approx(2.0))
    assert claims == {"no Tri5Sem setting beats the used d = 4 on dev by half a point": False}


def test_tried_claim_holds_when_the_used_d_is_still_best():
    exploration, selection = _exploration()
    exploration["results"]["tri5sem-d8"]["dev"] = exploration["results"]["bow5-d3"]["dev"]
    values, claims = tried_values(exploration, selection)
    assert all(claims.values()) and values["tri_best_gain"] == 0.0  # d = 4 itself is best


def test_cost_values_show_measured_times_only():
    exploration, _ = _exploration()
    vw = {"commit": "def5678", "results": {"images": 40, "word_maps_seconds": 4.0,
                                           "codebook_seconds": 13.2}}
    kernels = {k: {"gram_6000_s": s} for k, s in (("bow5", 7.06), ("bow1", 4.0), ("tri5", 12.0),
                                                   ("tagrank", 279.0), ("tri5sem", 130.0))}
    values = cost_values(exploration, {"commit": "9ea7f77", "results": {"kernels": kernels}}, vw)
    # 0.10 s an image x 8,091 images = 13.5 minutes
    assert values["vw_ms"] == pytest.approx(100) and values["vw_minutes"] == 13
    assert values["blocks"] == "dev x 3000 in 33 s"  # cache reads (under a second) left out
    assert (values["fit_lo"], values["fit_hi"], values["fit_longest"]) == (
        20.0, 90.0, "bow5-3000-r3000")
    assert values["tk"] == "bow5 7 s, bow1 4 s, tri5 12 s, tagrank 279 s and tri5sem 130 s"


def test_best_agrees_with_the_single_model_each_system_chose_in_the_main_run():
    """The main run recorded each KCCA system's single best dev setting (``best_single``)."""
    import json
    from pathlib import Path

    stored = Path(__file__).resolve().parents[1] / "benchmarks/results/hodosh_reproduction.json"
    selection = json.loads(stored.read_text())["results"]["selection"]
    assert len(selection) >= 10
    for name, sel in selection.items():
        for task in ("i2t", "t2i"):
            got = best(used_columns(sel), task)
            assert {"kappa": got["kappa"], "n": got["n"]} == sel[task]["single"], (name, task)


def test_explore_trains_the_registered_setting_with_only_its_overrides(monkeypatch):
    """Each exploration is its registered setting plus the named overrides; a rank above the
    dev grid extends the grid, and 3,000-landmark runs slice the cached training kernel."""
    import dataclasses

    from xmodal.models import hodosh
    from xmodal.recipes.settings import get_setting
    from xmodal.reproduce import hodosh_explore

    @dataclasses.dataclass
    class Data:
        train_ids: list
        dev_ids: list
        kernel_ids: list | None = None

    hd = Data([f"t{i}" for i in range(6000)], [f"d{i}" for i in range(1000)])
    timed, fitted = [], []

    class Image:
        def __init__(self, data, kind, power):
            self.data = data

        def block(self, rows, cols):
            timed.append((rows[0][0], len(cols), self.data.kernel_ids is not None))

    class System:
        def __init__(self, **params):
            self.params = params

        def fit(self, data):
            fitted.append((self.params, data.kernel_ids is not None))
            self.fit_seconds_, self.pivot_items_ = 1.0, [0] * 7
            self.model_ = type("M", (), {"pivots_x_": [0] * 5})()
            self.dev_grid_ = [{"kappa": 1.0, "n": 10, "i2t": dict.fromkeys(
                ("R@1", "R@5", "R@10", "medR"), 0.5), "t2i": dict.fromkeys(
                ("R@1", "R@5", "R@10", "medR"), 0.25)}]
            return self

    monkeypatch.setattr("xmodal.recipes.flickr8k.load_hodosh_data", lambda data=None: hd)
    monkeypatch.setattr(hodosh, "ImageSide", Image)
    monkeypatch.setattr(hodosh, "HodoshKCCA", System)
    out = hodosh_explore.explore(["tri5sem-d8", "bow5-3000-r3000"], command="test")
    registered = dict(get_setting("hodosh-tri5sem").params)
    (d8, d8_sliced), (big, big_sliced) = fitted
    assert d8 == {**registered, "diag_factor": 8.0} and not d8_sliced
    assert big["rank"] == 3000 and big["n_landmarks"] == 3000 and max(big["n_grid"]) == 3000
    assert big["text_kernel"] == "bow5" and big_sliced
    # the sliced run times only its dev block; the other both of its blocks
    assert timed == [("t", 1500, False), ("d", 1500, False), ("d", 3000, True)]
    assert out["bow5-3000-r3000"]["pivots"] == [5, 7]
    assert out["tri5sem-d8"]["dev"]["t2i"]["R@5"] == [0.25]
    assert out["tri5sem-d8"]["run"]["command"] == "test"
