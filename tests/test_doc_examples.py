"""Every shell example in README.md and docs/*.md runs as written.

Each ``xmodal ...`` line of a fenced ``bash`` block (continuation lines joined), and each
``$ xmodal ...`` line of a ``console`` / ``text`` block, is one test. It runs through bash in a
workspace of its own: a temporary HOME (so ``~`` and the default photo index,
``$XDG_DATA_HOME/xmodal/photos.db``, are never the user's) whose ``~/Pictures`` holds
scikit-image's sample photographs (``xmodal demo``'s), already indexed, and a working directory
holding the files the examples invent (``photo.jpg``, ``pool.jpg``, ``captions.txt``,
``caps.csv``, a small campaign as ``flickr.db``...): stand-ins, never edits of the command.
The test fails on a non-zero exit or a traceback. Servers (``xmodal serve``) must answer their
page on a free port of 127.0.0.1, then stop; ``--watch`` must report its first pass, then stop.

Examples that need data this machine lacks, or a run of minutes, are listed in ``PLANS`` with
the reason (skipped, or marked ``reproduce`` for ``make test-slow``). Output shown in the docs
(the demo's) is compared with a fresh run: the same photos in the same order, scores at 0.01.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from conftest import DATA_ROOT
from live_server import free_port, stop_group

REPO = Path(__file__).resolve().parents[1]
DOCS = ["README.md", *sorted(str(Path(p).relative_to(REPO))
                             for p in glob.glob(str(REPO / "docs" / "*.md")))]
SHELL = {"bash", "sh", "shell", "console", "text"}
PROMPTED = {"console", "text"}  # output shown: only '$ xmodal' lines are commands


@dataclass(frozen=True)
class Example:
    doc: str
    line: int
    command: str  # as written, comment stripped, continuations joined
    shown: str = ""  # the output the doc shows after a '$ ' prompt

    @property
    def id(self) -> str:
        return f"{self.doc}:{self.line}"


def _strip_comment(line: str) -> str:
    """The line without a trailing '# ...' (a '#' outside quotes after whitespace)."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.rstrip()


def collect(docs=DOCS) -> list[Example]:
    out = []
    for doc in docs:
        text = (REPO / doc).read_text()
        for m in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.S | re.M):
            lang = m.group(1)
            if lang not in SHELL:
                continue
            first = text[: m.start(2)].count("\n") + 1
            lines = m.group(2).splitlines()
            i = 0
            while i < len(lines):
                raw, start = lines[i], i
                i += 1
                if lang in PROMPTED:
                    if not raw.startswith("$ xmodal "):
                        continue
                    shown = []
                    # the demo prints the searches it runs, prompts included
                    demo = raw.strip() == "$ xmodal demo"
                    while i < len(lines) and (demo or not lines[i].startswith("$ ")):
                        shown.append(lines[i])
                        i += 1
                    out.append(Example(doc, first + start, _strip_comment(raw[2:]),
                                       "\n".join(shown).strip()))
                    continue
                if not raw.startswith("xmodal "):
                    continue
                parts = [raw]
                while parts[-1].rstrip().endswith("\\") and i < len(lines):
                    parts[-1] = parts[-1].rstrip()[:-1]
                    parts.append(lines[i].strip())
                    i += 1
                out.append(Example(doc, first + start,
                                   " ".join(_strip_comment(p).strip() for p in parts)))
    return out


@dataclass(frozen=True)
class Plan:
    """How to run one example: skip it, mark it slow, or run other commands first."""

    skip: str = ""  # reason it cannot run here
    slow: str = ""  # reason it takes minutes: marked 'reproduce' (make test-slow)
    needs: tuple[str, ...] = ()  # folders under $XMODAL_DATA; skipped with the reason if absent
    before: str = ""  # shell commands run first (the example's own earlier steps)
    uses: tuple[str, ...] = ()  # ARTIFACTS the example reads (built once, then copied in)
    subs: dict = field(default_factory=dict)  # invented names the workspace cannot provide


CROWD_FILE = ("reads the file a crowd platform returns (MTurk batch results, a Label Studio "
              "export); tests/test_mitl_crowd.py builds one and imports it")
FLICKR_EVAL = "encodes the 1,000 Flickr8K test photos and their captions (minutes on 2 cores)"
PROPOSE = ("proposes with the dual encoder and trained Hodosh systems over all of Flickr8K's "
           "test split (tens of minutes); the other mitl examples run on a small stand-in "
           "campaign")
NO_COCO = "needs a local COCO / Flickr30K copy (~/data/coco) and a CLIP checkpoint"
NO_CC = "needs Conceptual Captions 18K in ../data/cc18k (README, 'Set up')"
SWEEP = ("xmodal eval -m dual -m random -p flickr8k-5cap -p skimage-ood --out runs/")
WIKI_RUNS = ("xmodal eval -p wikipedia -m scm --per-query --output scm.json > /dev/null && "
             "xmodal eval -p wikipedia -m cm --per-query --output cm.json > /dev/null && "
             "xmodal eval -p wikipedia -m ksm --per-query --output ksm.json > /dev/null")
# The earlier steps examples build on, run once per module (name -> command, files it makes)
ARTIFACTS = {
    "my-tags": ("xmodal train tagger ~/Pictures --captions caps.csv --out my-tags --min-images 2",
                ["my-tags"]),
    "wikipedia-runs": (WIKI_RUNS, ["scm.json", "cm.json", "ksm.json"]),
    "photos.emb": ("xmodal embed ~/Pictures photos.emb", ["photos.emb"]),
    "photos.ann": ("xmodal ann build photos.emb photos.ann", ["photos.ann"]),
}
ANN = ("photos.emb", "photos.ann")
TRAIN = "trains a tagger on the sample photos (spaCy lemmas, image features: ~40 s)"
KSM = "trains kernel logistic SMNs on Wikipedia (~1.5 min)"
COCO_STANDIN = (f"PYTHONPATH={REPO} python -m benchmarks.coco_standin coco 239 > /dev/null && "
                "xmodal eval -m random -m fast -m dual -p coco5k -p coco1k --data coco --out runs"
                " > /dev/null")
STANDIN_RUN = ("encodes 239 Flickr8K photos linked as a COCO stand-in with three models "
               "(3.5 min); the stand-in goes to ./coco, not /tmp/coco")
UNBUNDLED = "cp .proposed.db flickr.db"  # the stand-in campaign before its HITs
MOVED = "xmodal duplicates --move-to ~/dupes > /dev/null"

# Keyed by the command as the doc writes it (comment stripped). A test fails when a key
# matches no example, so the table shrinks with the docs.
PLANS: dict[str, Plan] = {
    'xmodal compare runs/ -p flickr8k-5cap --baseline random --format latex --out table.tex':
        Plan(slow=FLICKR_EVAL, needs=("flickr8k",), before=SWEEP + " > /dev/null"),
    'xmodal eval -p coco5k --data ~/data/coco -m $CLIP --export-run trec runs/clip-trec': Plan(
        skip=NO_COCO),
    'xmodal eval -p coco5k --data ~/data/coco -m run:their-system/': Plan(
        skip=NO_COCO + " (and their-system/, another system's TREC runs)"),
    'xmodal eval -m fast -m dual -m openclip:ViT-B-32:~/models/vit-b-32.pt -p coco5k -p coco1k '
    '--data ~/data/coco --out runs/coco --device cuda': Plan(skip=NO_COCO + " (and a CUDA GPU)"),
    'xmodal compare runs/coco -p coco5k --baseline fast --format latex --out coco5k.tex': Plan(
        skip=NO_COCO + " (the runs of the example before)"),
    'xmodal compare runs/coco -p coco5k --all-pairs --short-labels --format markdown': Plan(
        skip=NO_COCO + " (the runs of the example before)"),
    'xmodal eval -m random -m fast -m dual -p coco5k -p coco1k --data /tmp/coco --out runs':
        Plan(slow=STANDIN_RUN, needs=("flickr8k",), subs={"/tmp/coco": "coco"},
             before=f"PYTHONPATH={REPO} python -m benchmarks.coco_standin coco 239 > /dev/null"),
    'xmodal compare runs -p coco5k --baseline fast --format latex --out table.tex': Plan(
        slow=STANDIN_RUN, needs=("flickr8k",), before=COCO_STANDIN),
    'xmodal compare runs -p coco5k --baseline fast --format markdown': Plan(
        slow=STANDIN_RUN, needs=("flickr8k",), before=COCO_STANDIN),
    'xmodal mitl hits flickr.db': Plan(before=UNBUNDLED),
    'xmodal mitl hits flickr.db --size 16 --judgments 3': Plan(before=UNBUNDLED),
    'xmodal mitl workers add flickr.db alice': Plan(before=UNBUNDLED),
    'xmodal train tagger ~/Pictures --captions caps.csv --out my-tags': Plan(slow=TRAIN,
        subs={"--captions caps.csv": "--captions caps.csv --min-images 2"}),
    'xmodal tag photo.jpg --model my-tags': Plan(slow=TRAIN, uses=("my-tags",)),
    'xmodal gist photo.jpg --caption "..."': Plan(
        subs={'"..."': '"a cup of coffee on a saucer"'}),
    'xmodal eval --protocol flickr8k-5cap --model dual': Plan(slow=FLICKR_EVAL,
                                                            needs=("flickr8k",)),
    'xmodal eval --protocol eccv --scores my_scores.npz': Plan(
        skip="needs a 5,000 x 25,000 COCO score matrix of your own (my_scores.npz) and the "
             "eccv-caption positives; tests/test_protocols_eval.py scores eccv from a file"),
    'xmodal eval -p folder --data ~/trip --captions trip.csv -m dual': Plan(),
    'xmodal eval -p cc-heldout -m dual': Plan(skip=NO_CC),
    'xmodal eval -p skimage-ood -m dual': Plan(slow=FLICKR_EVAL, needs=("flickr8k",)),
    'xmodal eval -p coco5k --data ~/data/coco -m openclip:ViT-B-32:vit-b-32.pt': Plan(
        skip=NO_COCO),
    SWEEP: Plan(slow=FLICKR_EVAL, needs=("flickr8k",)),
    'xmodal compare runs/cells/flickr8k-5cap__random.json runs/cells/flickr8k-5cap__dual.json':
        Plan(slow=FLICKR_EVAL, needs=("flickr8k",), before=SWEEP + " > /dev/null"),
    'xmodal mitl propose flickr.db -p flickr8k-hodosh -a dual -a hodosh-bow5-effnet '
    '-a tagger-lemmas': Plan(slow=PROPOSE, needs=("flickr8k",)),
    'xmodal mitl propose flickr.db -p flickr8k-hodosh -a dual -a hodosh-bow5-effnet '
    '-a hodosh-nn -a tagger-lemmas -a mine=my_scores.npz --queries 200 --k 5 --seed 0': Plan(
        skip="needs my_scores.npz, your own 1,000 x 1,000 Flickr8K score matrix; " + PROPOSE),
    'xmodal eval -p flickr8k-hodosh -m dual --positives flickr-positives/': Plan(
        slow=FLICKR_EVAL, needs=("flickr8k",),
        before="xmodal mitl export flickr.db flickr-positives/ > /dev/null"),
    'xmodal mitl simulate -p flickr8k-hodosh --judgments crowd': Plan(
        slow="proposes over all of Flickr8K's test split (minutes)", needs=("flickr8k",)),
    'xmodal mitl simulate -p flickr8k-hodosh --judgments crowd --json': Plan(
        slow="proposes over all of Flickr8K's test split (minutes)", needs=("flickr8k",)),
    'xmodal mitl simulate -p flickr8k-hodosh --judgments expert --plot yield.png --export '
    'positives/ --out sim/': Plan(
        slow="proposes over all of Flickr8K's test split (minutes)", needs=("flickr8k",)),
    'xmodal mitl crowd import flickr.db Batch_123_batch_results.csv': Plan(skip=CROWD_FILE),
    'xmodal mitl crowd import flickr.db project-1-at-2026-11-28.json': Plan(skip=CROWD_FILE),
    'xmodal mitl crowd import flickr.db prolific_export_STUDY_ID.csv --platform prolific': Plan(
        skip=CROWD_FILE),
    'xmodal eval -p coco5k --data ~/data/coco -m $CLIP': Plan(skip=NO_COCO),
    'xmodal eval -p flickr30k --data ~/data/flickr30k -m $CLIP': Plan(skip=NO_COCO),
    'xmodal eval -m $CLIP -m dual -p coco5k -p coco1k -p eccv -p cxc -p flickr30k --data '
    '~/data/coco --data flickr30k=~/data/flickr30k --out runs/clip': Plan(skip=NO_COCO),
    'xmodal eval -m dual -m efficientnet-minilm-zeroshot -m random -p flickr8k-5cap '
    '-p flickr8k-hodosh-crowd -p skimage-ood -p wikipedia --out runs/': Plan(
        slow=FLICKR_EVAL, needs=("flickr8k", "wikipedia")),
    'xmodal compare scm.json cm.json ksm.json --metric R@1 --metric MAP --format markdown': Plan(
        slow=KSM, needs=("wikipedia",), uses=("wikipedia-runs",)),
    'xmodal eval -p wikipedia -m scm --per-query --output scm.json': Plan(needs=("wikipedia",)),
    'xmodal eval -p wikipedia -m cm --per-query --output cm.json': Plan(needs=("wikipedia",)),
    'xmodal eval -p wikipedia -m ksm --per-query --output ksm.json': Plan(slow=KSM,
                                                                         needs=("wikipedia",)),
    'xmodal eval --protocol wikipedia --model random --json': Plan(needs=("wikipedia",)),
    'xmodal duplicates --undo ~/dupes/.xmodal-moves-20261128-021500.jsonl': Plan(
        before=MOVED, subs={".xmodal-moves-20261128-021500.jsonl": ".xmodal-moves-*.jsonl"}),
    'xmodal embed /data/images.txt photos.emb --engine ray --address auto --workers 8': Plan(
        skip="joins a running Ray cluster (--address auto); tests/test_scale_ray.py starts a "
             "local one"),
    'xmodal ann build photos.emb photos.ann --memory-budget 4GB': Plan(uses=("photos.emb",)),
    "xmodal ann build part1.emb part2.emb photos.ann --factory 'IVF8192_HNSW32,SQ8'": Plan(
        skip="an IVF8192 index trains on hundreds of thousands of vectors; docs/scale.md's "
             "benchmarks build it (python -m benchmarks.scale_ann build)"),
    'xmodal ann build photos.emb photos.ann --stage train --stage add --time-limit 900': Plan(
        uses=("photos.emb",)),
    'xmodal search "a red bus in the rain" --ann photos.ann -k 10 --json': Plan(uses=ANN),
    'xmodal search "a red bus in the rain" --ann photos.ann --nprobe 64': Plan(uses=ANN),
    'xmodal serve --ann photos.ann': Plan(uses=ANN),
    'xmodal serve --db photos.db --reports reports/json --host 127.0.0.1 --port 8000': Plan(
        before="mkdir -p reports/json"),
}

EXAMPLES = collect()


def _key(command: str) -> str:
    return " ".join(command.split())


def _plan(ex: Example) -> Plan:
    return PLANS.get(_key(ex.command), Plan())


def _params():
    for ex in EXAMPLES:
        plan = _plan(ex)
        marks = [pytest.mark.reproduce(plan.slow)] if plan.slow else []  # make test-slow
        yield pytest.param(ex, id=ex.id, marks=marks)


def test_every_plan_names_an_example():
    commands = {_key(ex.command) for ex in EXAMPLES}
    assert set(PLANS) <= commands, sorted(set(PLANS) - commands)
    assert len(EXAMPLES) > 100  # README and every docs page were read


def test_the_collector_reads_prompts_continuations_and_comments(tmp_path, monkeypatch):
    doc = tmp_path / "x.md"
    doc.write_text("```bash\nxmodal a --b \\\n    c   # note\nls\n```\n\n```text\n$ xmodal d "
                   "'# kept'\nshown\n\n$ other\n```\n```python\nxmodal e\n```\n")
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    got = collect(["x.md"])
    assert [(e.line, e.command, e.shown) for e in got] == [
        (2, "xmodal a --b c", ""), (8, "xmodal d '# kept'", "shown")]


# ----------------------------------------------------------------------------- the workspace

def _sample(name: str):
    from PIL import Image

    from xmodal.cli.demo_cmd import sample_photo_dir

    return Image.open(sample_photo_dir() / name).convert("RGB")


def _build_workspace(root: Path, env: dict) -> None:
    from xmodal.cli.demo_cmd import copy_sample_photos

    home, work = root / "home", root / "work"
    pictures = home / "Pictures"
    copy_sample_photos(pictures)
    _sample("chelsea.png").save(pictures / "cat.jpg", quality=90)  # a near-duplicate
    (pictures / "2019").mkdir()
    _sample("rocket.jpg").resize((256, 384)).save(pictures / "2019" / "launch.jpg")
    trip = home / "trip"
    trip.mkdir()
    caps = ["image,caption"]
    for n, (name, words) in enumerate([("coffee.png", "a cup of coffee"),
                                       ("chelsea.png", "a cat"),
                                       ("rocket.jpg", "a rocket on the launch pad"),
                                       ("astronaut.png", "an astronaut in a space suit")]):
        shutil.copy(pictures / name, trip / name)
        caps.append(f"{name},{words}")
    work.mkdir()
    (work / "trip.csv").write_text("\n".join(caps) + "\n")
    shutil.copytree(trip, work / "photos")
    (work / "captions.csv").write_text("\n".join(caps) + "\n")
    _sample("coffee.png").save(work / "photo.jpg")
    _sample("grass.png").save(work / "pool.jpg")
    _sample("gravel.png").save(work / "beach.jpg")
    pool = ["a cup of coffee on a saucer", "a cat lying on a rug", "a rocket on the launch pad",
            "a brick wall", "green grass", "a page of printed text"]
    (work / "captions.txt").write_text("\n".join(pool) + "\n")
    (work / "pool.txt").write_text("\n".join(pool) + "\n")
    # your own keywords: two captions a photo, words shared by at least two photos
    lines = ["image,caption"]
    words = {"astronaut.png": "a person in a white suit", "camera.png": "a person with a camera",
             "chelsea.png": "an animal on a rug", "cat.jpg": "an animal on a rug",
             "coffee.png": "a white cup on a table", "page.png": "a white page of text",
             "text.png": "a page of text", "rocket.jpg": "a rocket in the sky",
             "2019/launch.jpg": "a rocket in the sky", "brick.png": "a red wall",
             "motorcycle.png": "a red motorcycle", "coins.png": "old coins on a table",
             "moon.png": "the sky at night", "hubble_deep_field.jpg": "the sky at night"}
    for name, caption in words.items():
        lines += [f"{name},{caption}", f"{name},a photo of {caption}"]
    (work / "caps.csv").write_text("\n".join(lines) + "\n")
    # photos whose EXIF the filter examples select: date, GPS place, camera
    from exif_photos import Planned, exif_bytes

    for name, sample, planned in [
        ("lisbon/boat.jpg", "coffee.png",
         Planned("", "2023-07-14T19:30:00", None, "lisbon", ("Apple", "iPhone 12"))),
        ("saopaulo.jpg", "astronaut.png",
         Planned("", "2022-05-02T10:00:00", None, "saopaulo", ("NIKON CORPORATION", "D750"))),
        ("old-phone/img_0001.jpg", "brick.png", Planned("", "2012-03-01T12:00:00", None, None,
                                                        ("Apple", "iPhone 4")))]:
        (pictures / name).parent.mkdir(exist_ok=True)
        _sample(sample).resize((200, 150)).save(pictures / name, exif=exif_bytes(planned))
    # a small judging campaign stands in for flickr.db (and, before its HITs, .proposed.db)
    from mitl_fixtures import judged_campaign

    shutil.copy(judged_campaign(root / "campaign", work / ".proposed.db"), work / "flickr.db")
    # the photo index of ~/Pictures, in the default place and a copy as photos.db
    subprocess.run(["xmodal", "index", str(pictures), "-q"], cwd=work, env=env, check=True,
                   capture_output=True, timeout=900)
    default = home / ".local" / "share" / "xmodal" / "photos.db"
    with sqlite3.connect(default) as src, sqlite3.connect(work / "photos.db") as dst:
        src.backup(dst)
    shutil.copy(str(default) + ".faiss.npz", str(work / "photos.db") + ".faiss.npz")


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """(live folder, env): the workspace of every example, restored from a template first."""
    root = tmp_path_factory.mktemp("doc-examples")
    live, template = root / "live", root / "template"
    venv_bin = str(Path(sys.executable).parent)
    env = {**os.environ, "HOME": str(live / "home"),
           "XDG_DATA_HOME": str(live / "home" / ".local" / "share"),
           "PATH": venv_bin + os.pathsep + os.environ.get("PATH", ""),
           "XMODAL_CACHE": str(root / "cache"), "XMODAL_DATA": str(DATA_ROOT),
           "XMODAL_RESULTS": str(live / "work" / "results"),
           "XMODAL_REPORTS": str(live / "work" / "reports"),
           "XMODAL_MODELS": os.environ["XMODAL_MODELS"]}
    for var in ("XMODAL_DB", "XMODAL_ENGINE", "XMODAL_NPROBE"):
        env.pop(var, None)
    _build_workspace(live, env)
    shutil.copytree(live, template, symlinks=True)
    yield live, template, env
    shutil.rmtree(root, ignore_errors=True)


def _restore(live: Path, template: Path) -> None:
    shutil.rmtree(live)
    shutil.copytree(template, live, symlinks=True)  # same paths: the index stays valid


def _copy(src: Path, dst: Path) -> None:
    if src.is_dir():
        shutil.copytree(src, dst, symlinks=True)
    else:
        shutil.copy2(src, dst)


def _artifact(name: str, live: Path, template: Path, env: dict) -> None:
    """Run an earlier step once (in a fresh workspace) and keep what it makes."""
    store = live.parent / "artifacts"
    cmd, made = ARTIFACTS[name]
    if all((store / m).exists() for m in made):
        return
    _restore(live, template)
    store.mkdir(exist_ok=True)
    for other in ARTIFACTS:  # what this step reads from the steps before it
        if other != name and all((store / m).exists() for m in ARTIFACTS[other][1]):
            for m in ARTIFACTS[other][1]:
                _copy(store / m, live / "work" / m)
    run = subprocess.run(["bash", "-c", cmd], cwd=live / "work", env=env, capture_output=True,
                         text=True, timeout=1800)
    assert run.returncode == 0, f"{cmd}\n{run.stderr[-3000:]}"
    for m in made:
        _copy(live / "work" / m, store / m)


def _command(ex: Example, plan: Plan, port: int) -> str:
    cmd = ex.command
    for old, new in plan.subs.items():
        assert old in cmd, (old, cmd)
        cmd = cmd.replace(old, new)
    if "xmodal serve" in cmd:
        # tests listen on a free port of the loopback interface only
        cmd = cmd.replace("--host 0.0.0.0", "--host 127.0.0.1")
        cmd = re.sub(r"--port \d+", f"--port {port}", cmd)
        if "--port" not in cmd:
            cmd += f" --port {port}"
    return f"{plan.before} && {cmd}" if plan.before else cmd


def _no_traceback(out: str, err: str, cmd: str) -> None:
    assert "Traceback (most recent call last)" not in out + err, f"{cmd}\n{err[-3000:]}"


def _serve(cmd: str, port: int, cwd: Path, env: dict) -> None:
    token = re.search(r"--token (\S+)", cmd)
    proc = subprocess.Popen(["bash", "-c", cmd], cwd=cwd, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    status, deadline = None, time.monotonic() + 300
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/health", timeout=5) \
                        as r:
                    status = r.status
                    break
            except urllib.error.HTTPError as e:  # 401 without the token: it answers
                status = e.code
                break
            except OSError:
                time.sleep(0.5)
    finally:
        out, err = stop_group(proc)
    _no_traceback(out, err, cmd)
    assert status in (200, 401) or (token and status == 401), f"{cmd}: {status}\n{err[-3000:]}"


def _watch(cmd: str, cwd: Path, env: dict) -> None:
    proc = subprocess.Popen(["bash", "-c", cmd], cwd=cwd, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    seen, deadline = [], time.monotonic() + 300
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            line = proc.stdout.readline()
            seen.append(line)
            if "watching" in line:
                break
    finally:
        out, _ = stop_group(proc)
    text = "".join(seen) + out
    _no_traceback(text, "", cmd)
    assert "watching" in text, f"{cmd}\n{text[-3000:]}"


@pytest.mark.parametrize("ex", list(_params()))
def test_doc_example_runs(ex: Example, workspace, request):
    plan = _plan(ex)
    if plan.skip:
        pytest.skip(plan.skip)
    for name in plan.needs:
        if not (DATA_ROOT / name).is_dir():
            pytest.skip(f"needs the {name} data at {DATA_ROOT / name} (set XMODAL_DATA)")
    live, template, env = workspace
    if ex.command == "xmodal demo":  # the demo's own run, checked against the docs below
        demo_run = request.getfixturevalue("demo_run")
        if ex.shown:
            _compare_shown(ex, demo_run)
        return
    for name in plan.uses:
        _artifact(name, live, template, env)
    _restore(live, template)
    for name in plan.uses:
        for made in ARTIFACTS[name][1]:
            _copy(live.parent / "artifacts" / made, live / "work" / made)
    port = free_port()
    cmd = _command(ex, plan, port)
    cwd = live / "work"
    if "xmodal serve" in cmd:
        return _serve(cmd, port, cwd, env)
    if "--watch" in cmd:
        return _watch(cmd, cwd, env)
    run = subprocess.run(["bash", "-c", cmd], cwd=cwd, env=env, capture_output=True, text=True,
                         timeout=1800)
    _no_traceback(run.stdout, run.stderr, cmd)
    assert run.returncode == 0, f"{cmd}\nexit {run.returncode}\n{run.stderr[-3000:]}"
    if ex.shown:
        _compare_shown(ex, run.stdout + run.stderr)


# ------------------------------------------------------------------- output shown in the docs

_SCORE = re.compile(r"\d+\.\d{3}")


def _skeleton(text: str) -> tuple[list[str], list[float]]:
    """Lines with scores, times, temporary paths and wrapping taken out; the scores apart."""
    text = re.sub(r"/(?:[^\s/]+/)+", "", text)  # where the photos were copied / live
    text = re.sub(r"in \d+\.\d s", "in N s", text)
    text = re.sub(r"\d+(\.\d+)?%", "N%", text)  # calibrated match: varies with the scores
    scores = [float(s) for s in _SCORE.findall(text)]
    text = _SCORE.sub("S", text)
    text = re.sub(r"\s+", " ", text)
    return text.strip().split(" "), scores


def _compare_shown(ex: Example, got: str) -> None:
    want_words, want_scores = _skeleton(ex.shown)
    got_words, got_scores = _skeleton(got)
    # the doc's output comes whole and in order in the fresh run (which may say more)
    joined, sub = " ".join(got_words), " ".join(want_words)
    assert sub in joined, f"{ex.id}: the output differs from the doc\n{ex.shown}\n---\n{got}"


def _demo_sections(text: str) -> list[tuple[str, list[str], list[float]]]:
    """The demo's searches: (query line, photos shown, their scores and match %)."""
    out = []
    for block in re.split(r"\n(?=\$ xmodal search)", text)[1:]:
        head, _, body = block.partition("\n")
        photos = re.findall(r"│\s+(\S+\.(?:png|jpg))\s+│", body)
        scores = [float(s) for s in re.findall(r"│\s+(\d\.\d{3})\s+│", body)]
        closest = re.search(r"The closest is (\S+) \(score\s+(\d\.\d{3})", body.replace("\n", " "))
        if closest:
            photos.append(closest.group(1))
            scores.append(float(closest.group(2)))
        hidden = re.search(r"(\d+) of the best (\d+) matches hidden", body)
        out.append((head.strip(), photos, scores, hidden and hidden.groups()))
    return out


@pytest.fixture(scope="module")
def demo_run(workspace):
    live, template, env = workspace
    _restore(live, template)
    run = subprocess.run(["xmodal", "demo"], cwd=live / "work", env=env, capture_output=True,
                         text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout


@pytest.mark.parametrize("doc, start", [("docs/demo_output.txt", 0), ("README.md", None)])
def test_the_shown_demo_output_matches_a_fresh_run(doc, start, demo_run):
    text = (REPO / doc).read_text()
    if start is None:  # README: the text block that begins with '$ xmodal demo'
        text = next(ex.shown for ex in EXAMPLES if ex.doc == doc and ex.command == "xmodal demo")
    want, got = _demo_sections(text), _demo_sections(demo_run)
    assert len(want) == 4 and [w[0] for w in want] == [g[0] for g in got]
    for (query, w_photos, w_scores, w_hidden), (_, g_photos, g_scores, g_hidden) in zip(want, got):
        assert w_photos == g_photos, (doc, query)
        assert w_hidden == g_hidden, (doc, query)
        assert g_scores == pytest.approx(w_scores, abs=0.01), (doc, query)
    names = re.search(r"photos: (.*?)\n(?=indexed)", demo_run, re.S).group(1).split()
    shown = re.search(r"photos: (.*?)\n(?=indexed)", text, re.S).group(1).split()
    assert names == shown
