"""The machine-in-the-loop study of reports/mitl_flickr8k.md: both simulated judges, end to end.

Runs :func:`xmodal.mitl.pipeline.run_simulated_study` on the Flickr8K Hodosh pool with the
recorded crowd and expert judgments (the default five annotators, all 1,000 queries per
direction, three extra ranked models), keeps every number in
``mitl_flickr8k_{crowd,expert}.json`` (results folder) and the yield figures in
``reports/figures/mitl_yield_*.png``; :mod:`xmodal.reproduce.mitl_findings` renders the report
from the JSON (the command calls both). The campaign databases (~50 MB each) go to a work
folder.
"""

from __future__ import annotations

from pathlib import Path

from xmodal.reproduce.output import stamp, write_json


def reproduce(command: str, data=None, work: Path | None = None, out: Path | None = None,
              figures: Path | None = None, log=print) -> dict:
    """Both studies; writes their JSON to ``out`` and figures to ``figures`` and returns
    {source: result}."""
    import tempfile
    import warnings

    from xmodal.data import load_flickr8k
    from xmodal.eval.protocols import get_protocol
    from xmodal.mitl.pipeline import plot_yield, run_simulated_study
    from xmodal.mitl.simulate import recorded_from_flickr8k
    from xmodal.reproduce.output import FIGURES, RESULTS

    out, figures = out or RESULTS, figures or FIGURES
    work = work or Path(tempfile.mkdtemp(prefix="mitl-"))
    work.mkdir(parents=True, exist_ok=True)
    protocol = get_protocol("flickr8k-hodosh", data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = load_flickr8k(data)
    results = {}
    for source in ("crowd", "expert"):
        res = run_simulated_study(protocol, recorded_from_flickr8k(ds, source), source,
                                  work / f"{source}.db", log=log)
        res["provenance"] = stamp(command)
        write_json(out / f"mitl_flickr8k_{source}.json", res)
        plot_yield(res["yield"], figures / f"mitl_yield_{source}.png",
                   f"flickr8k-hodosh, simulated {source} judges")
        results[source] = res
    return results
