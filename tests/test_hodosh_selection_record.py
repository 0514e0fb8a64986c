"""xmodal reproduce hodosh records each KCCA system's dev selection: every candidate's dev
scores (grid order), the Borda ensembles and the single best dev setting."""

from __future__ import annotations

import numpy as np


def _fake_system():
    from xmodal.models.hodosh import HodoshKCCA, select_settings

    grid = []
    for kappa in (0.1, 0.5):
        for n in (10, 20, 30, 40):
            hits = {"R@1": 30 + n // 10, "R@5": 120 + n // 5, "R@10": 200 + int(kappa * 10) + n}
            t2i = {m: h / 1000 for m, h in hits.items()} | {"medR": 60.0 - n / 10}
            i2t = {m: v * 0.9 for m, v in t2i.items()}
            grid.append({"kappa": kappa, "n": n, "i2t": i2t, "t2i": t2i})
    system = HodoshKCCA("bow5", "pyramid", kappas=(0.1, 0.5), n_grid=(10, 20, 30, 40))
    system.dev_grid_ = grid
    system.selected_ = {t: select_settings(grid, t) for t in ("i2t", "t2i")}
    system.weights_ = {k: (np.zeros((5, 40)), np.zeros((5, 40))) for k in (0.1, 0.5)}
    return system


def test_dev_selection_records_every_candidate_and_the_choices(monkeypatch):
    from xmodal.recipes import flickr8k
    from xmodal.reproduce.hodosh import dev_selection

    system = _fake_system()
    asked = []
    monkeypatch.setattr("xmodal.recipes.flickr8k.load_hodosh_data", lambda data=None: "hd")
    monkeypatch.setattr(flickr8k, "get_system", lambda name, hd=None: asked.append(name) or system)
    out = dev_selection(["nn", "bow5", "bow5@single"], None)
    assert list(out) == ["bow5"] and asked == ["bow5"]  # nn has no dev grid; bow5 looked up once
    rec = out["bow5"]
    assert rec["candidates"] == {"kappa": [0.1] * 4 + [0.5] * 4, "n": [10, 20, 30, 40] * 2}
    assert rec["t2i"]["dev"]["R@10"][5] == 0.225 and rec["t2i"]["dev"]["medR"][0] == 59.0
    assert rec["i2t"]["dev"]["R@1"] == [r["i2t"]["R@1"] for r in system.dev_grid_]
    # R@5 + R@10 is largest at kappa 0.5, n 40 in both tasks
    assert rec["t2i"]["single"] == rec["i2t"]["single"] == {"kappa": 0.5, "n": 40}
    assert len(rec["t2i"]["ensemble"]) == 15
    assert rec["t2i"]["ensemble"][0] == {"kappa": 0.5, "n": 40, "by": "R@1"}


def test_rerun_check_names_the_candidates_whose_choice_flipped():
    from benchmarks.hodosh_rerun_check import selection_changes

    def run(r1_of_second, single_n):
        dev = {"R@1": [0.040, r1_of_second, 0.039], "R@5": [0.1] * 3, "R@10": [0.2] * 3,
               "medR": [50.0] * 3}
        top = 20 if r1_of_second > 0.040 else 10
        task = {"dev": dev, "ensemble": [{"kappa": 0.1, "n": top, "by": "R@1"}],
                "single": {"kappa": 0.1, "n": single_n}}
        return {"selection": {"tagrank": {"candidates": {"kappa": [0.1] * 3, "n": [10, 20, 30]},
                                          "i2t": task, "t2i": task}}}

    assert selection_changes(run(0.041, 30), run(0.041, 30)) == []
    changes = selection_changes(run(0.041, 30), run(0.040, 30))  # one dev hit apart
    assert [c["task"] for c in changes] == ["i2t", "t2i"]
    c = changes[1]
    assert c["ensemble_only_new"] == [{"kappa": 0.1, "n": 20, "by": "R@1"}]
    assert c["ensemble_only_stored"] == [{"kappa": 0.1, "n": 10, "by": "R@1"}]
    assert [(d["n"], d["new"]["R@1"], d["stored"]["R@1"]) for d in c["dev"]] == \
        [(20, 0.041, 0.040), (10, 0.040, 0.040), (30, 0.039, 0.039)]
