"""Benchmark: ``xmodal eval --protocol wikipedia --model NAME`` for CM, SM, SCM, KSM and KSM-QE (ours).

Runs the same library path as the CLI (``get_protocol`` -> ``get_scorer`` -> ``run_eval``) in a
fresh process per model, so each time includes fitting on the 2,173 training documents, scoring
the 693 x 693 test pool and all metrics. Records MAP per direction and the wall and CPU time.

    python -m benchmarks.wikipedia_eval      # -> benchmarks/results/wikipedia_eval.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from benchmarks._record import record

MODELS = ("cm", "sm", "scm", "ksm", "ksm-qe")

_CHILD = """
import json, resource, sys, time
t0 = time.perf_counter()
from xmodal.eval.protocols import get_protocol
from xmodal.eval.runner import run_eval
from xmodal.factory import get_scorer
p = get_protocol("wikipedia", sys.argv[2] or None)
r = run_eval(p, get_scorer(sys.argv[1], "wikipedia"), model=sys.argv[1])
u = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"MAP_i2t": r["directions"]["i2t"]["MAP"], "MAP_t2i": r["directions"]["t2i"]["MAP"],
                  "eval_s": r["elapsed_s"], "wall_s": time.perf_counter() - t0,
                  "cpu_s": u.ru_utime + u.ru_stime}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="", help="data root (default: XMODAL_DATA or ../shared/data)")
    args = ap.parse_args()
    results = {}
    for name in MODELS:
        out = subprocess.run([sys.executable, "-c", _CHILD, name, args.data], capture_output=True,
                             text=True, check=True)
        results[name] = json.loads(out.stdout.strip().splitlines()[-1])
        r = results[name]
        r["MAP_avg"] = (r["MAP_i2t"] + r["MAP_t2i"]) / 2
        print(f"{name}: MAP {r['MAP_i2t']:.4f} / {r['MAP_t2i']:.4f} (avg {r['MAP_avg']:.4f}), "
              f"wall {r['wall_s']:.1f}s, cpu {r['cpu_s']:.1f}s", flush=True)
    path = record("wikipedia_eval", results)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
