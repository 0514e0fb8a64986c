"""The photo-search core installed alone (issue 43): how big it is, and how fast and small the
first ``xmodal index`` is once ``xmodal prepare`` has written the towers.

Runs ``scripts/core_install_check.sh`` (a fresh ``pip install .`` venv, the towers exported from
a one-off export venv, index -> search -> serve, no torch / transformers / scikit-learn) keeping
its core venv and cache, then measures

- the core venv's site-packages: total size (target <= 1.1 GB) and its largest packages;
- ``xmodal index`` of 20 Flickr8K photos into a new database, twice, each its own process, after
  prepare (the towers in the cache, nothing else): wall time and peak RSS (target <= 10 s and
  <= 600 MB for the first).

    python -m benchmarks.core_install               # about 5-10 minutes on 2 cores
    python -m benchmarks.core_install --reuse DIR   # measure a core venv kept in DIR

Writes ``benchmarks/results/core_install.json`` (command, commit, CPU, load).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks._record import record

REPO = Path(__file__).resolve().parents[1]
N_PHOTOS = 20
TARGETS = {"site_packages_gb": 1.1, "first_index_s": 10.0, "first_index_peak_mb": 600.0}


def folder_bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file() and not f.is_symlink())


def site_packages(venv: Path) -> Path:
    return next((venv / "lib").glob("python*/site-packages"))


def largest(site: Path, n: int = 12) -> dict[str, float]:
    sizes = {p.name: folder_bytes(p) if p.is_dir() else p.stat().st_size for p in site.iterdir()}
    top = sorted(sizes.items(), key=lambda kv: -kv[1])[:n]
    return {name: round(b / 1e6, 1) for name, b in top}


def timed(cmd: list[str], env: dict[str, str]) -> dict[str, float]:
    """Wall seconds and peak RSS (MB) of one process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    out, err = proc.communicate()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {err.decode()[-2000:]}")
    return {"seconds": round(wall, 2), "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
            "stdout": out.decode()}


def flickr_photos(dest: Path, n: int) -> list[Path]:
    from xmodal.paths import dataset_dir

    src = dataset_dir("flickr8k") / "Flicker8k_Dataset"
    dest.mkdir(parents=True, exist_ok=True)
    return [Path(shutil.copy(p, dest)) for p in sorted(src.glob("*.jpg"))[:n]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reuse", type=Path, help="a WORK folder the check script kept (KEEP=1)")
    args = ap.parse_args()
    work = args.reuse or Path(tempfile.mkdtemp(prefix="xmodal-core-"))
    results: dict = {"targets": TARGETS}
    if args.reuse is None:
        t0 = time.perf_counter()
        subprocess.run(["bash", str(REPO / "scripts" / "core_install_check.sh")], check=True,
                       env={**os.environ, "WORK": str(work), "KEEP": "1"})
        results["check_script_s"] = round(time.perf_counter() - t0, 1)
    steps = work / "steps.tsv"
    if steps.is_file():  # when each step of the check script began, in seconds
        results["check_steps_s"] = {name: int(t) for t, name in (
            line.split("\t", 1) for line in steps.read_text().splitlines() if "\t" in line)}
    venv = work / "core"
    site = site_packages(venv)
    results["site_packages_gb"] = round(folder_bytes(site) / 1e9, 3)
    results["largest_packages_mb"] = largest(site)
    results["prepared_models_mb"] = round(folder_bytes(work / "cache" / "models") / 1e6, 1)
    prepare = work / "prepare.json"
    if prepare.is_file():
        results["prepare"] = {k: v for k, v in json.loads(prepare.read_text()).items()
                              if k in ("seconds", "sizes_mb", "towers")}

    env = {k: v for k, v in os.environ.items() if k not in ("XMODAL_MODELS", "XMODAL_ENGINE")}
    env.update(XMODAL_CACHE=str(work / "cache"), HF_HUB_OFFLINE="1")
    photos = flickr_photos(work / "bench-photos", N_PHOTOS)
    runs = []
    for i in range(2):
        db = work / f"bench-{i}.db"
        db.unlink(missing_ok=True)
        run = timed([str(venv / "bin" / "xmodal"), "index", str(photos[0].parent), "--db",
                     str(db), "-q", "--json"], env)
        runs.append({"seconds": run["seconds"], "peak_rss_mb": run["peak_rss_mb"],
                     "indexed": json.loads(run["stdout"]).get("added")})
    results["index_20_photos"] = {"photos": len(photos), "first": runs[0], "again_new_db": runs[1]}
    first = runs[0]
    results["meets_targets"] = {
        "site_packages": results["site_packages_gb"] <= TARGETS["site_packages_gb"],
        "first_index_s": first["seconds"] <= TARGETS["first_index_s"],
        "first_index_peak": first["peak_rss_mb"] <= TARGETS["first_index_peak_mb"]}
    path = record("core_install", results)
    print(json.dumps(results, indent=1))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
