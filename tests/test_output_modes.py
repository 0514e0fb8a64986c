"""Every CLI command runs in each of its output modes and says the right thing.

The commands are read from the Typer app, so a new command fails ``test_every_command_is_listed``
until it has a row in ``CASES`` (how to run it on small inputs and a word its answer must hold)
or a reason to leave it out. Modes: the table (stdout to a pipe, and to a pseudo-terminal),
``--json`` (valid JSON on stdout), ``-o/--output FILE`` where a command has it, and
``-q/--quiet``. An error under ``--json`` is JSON too: ``{"error": {"message", "kind",
"exit_code"}}`` on stdout, with the exit code (``docs/architecture.md``, conventions).

Inputs are small and built here: solid-colour photos indexed with the colour test model
(``tests.fake_models``), a judged campaign of generated photos (``mitl_fixtures``), runs of the
folder protocol. The pipe, JSON, file and quiet modes run in this process (CliRunner); the
terminal mode runs every command in one child process on a pseudo-terminal.
"""

from __future__ import annotations

import json
import os
import pty
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import typer
from PIL import Image
from typer.testing import CliRunner

from xmodal.cli import app

REPO = Path(__file__).resolve().parents[1]
FAKE = "python:tests.fake_models:ColourModel"
WORDNET = Path("/usr/share/wordnet")
runner = CliRunner()


@dataclass(frozen=True)
class Case:
    args: object = None  # callable(ws) -> list of arguments
    expect: str = ""  # in the answer (table and JSON alike)
    skip: str = ""  # why the command is not run here
    output: str = ""  # its FILE option when not -o/--output
    json_expect: str = ""  # in the JSON answer, when it differs from ``expect``


class Workspace:
    """Small inputs in one folder; ``fresh`` copies a file for a command that changes it."""

    def __init__(self, root: Path):
        self.root = root
        self.n = 0

    def __getattr__(self, name):  # ws.photos, ws.db, ...
        return str(self.root / name.replace("_", "."))

    def fresh(self, name: str) -> str:
        self.n += 1
        src = self.root / name
        dst = self.root / f"copy{self.n}-{src.name}"
        (shutil.copytree if src.is_dir() else shutil.copy)(src, dst)
        if (self.root / (name + ".faiss.npz")).exists():
            shutil.copy(self.root / (name + ".faiss.npz"), str(dst) + ".faiss.npz")
        return str(dst)

    def new(self, name: str) -> str:
        self.n += 1
        return str(self.root / f"new{self.n}-{name}")


CASES: dict[str, Case] = {
    "eval": Case(lambda ws: ["eval", "-p", "folder", "--data", ws.photos, "--captions",
                             ws.caps_csv, "-m", FAKE], expect="R@1"),
    "protocols": Case(lambda ws: ["protocols"], expect="wikipedia"),
    "models": Case(lambda ws: ["models"], expect="scm"),
    "index": Case(lambda ws: ["index", ws.photos, "--db", ws.new("photos.db"), "--model", FAKE],
                  expect="new", json_expect="added"),
    "search": Case(lambda ws: ["search", "a red square", "--db", ws.photos_db, "--min-score",
                               "0"], expect="red.png"),
    "similar": Case(lambda ws: ["similar", ws.photos + "/red.png", "--db", ws.photos_db],
                    expect="red2.png"),
    "describe": Case(lambda ws: ["describe", ws.photos + "/red.png", "--captions", ws.pool_txt,
                                 "--model", FAKE], expect="a red square"),
    "photos": Case(lambda ws: ["photos", "--db", ws.photos_db], expect="test-colour-v1"),
    "forget": Case(lambda ws: ["forget", ws.photos + "/sub", "--db", ws.fresh("photos.db")],
                   expect="removed"),
    "prune": Case(lambda ws: ["prune", "--db", ws.photos_db], expect="removed"),
    "tag": Case(lambda ws: ["tag", ws.photos + "/red.png"], expect="keywords",
                json_expect="red.png"),
    "gist": Case(lambda ws: ["gist", ws.photos + "/red.png", "--caption", "a dog runs on grass"],
                 expect="dog"),
    "serve": Case(skip="a server, no output mode: tests/test_doc_examples.py starts it on each "
                       "documented command line, tests/test_concurrency.py beside other "
                       "commands"),
    "demo": Case(lambda ws: ["demo", ws.photos, "--model", FAKE, "--db", ws.new("demo.db"), "-q",
                             "a red square"], expect="red.png"),
    "embed": Case(lambda ws: ["embed", ws.photos, ws.new("emb"), "--model", FAKE],
                  expect="shards", json_expect="shard"),
    "duplicates": Case(lambda ws: ["duplicates", "--db", ws.photos_db], expect="red"),
    "compare": Case(lambda ws: ["compare", ws.fakerun_json, ws.randomrun_json, "--resamples",
                                "200"], expect="randomrun"),
    "train dual": Case(skip="trains on Flickr8K and Conceptual Captions features (minutes); "
                            "tests/test_dual_cli.py runs its command on a tiny grid"),
    "train tagger": Case(skip="spaCy lemmas and image features of every photo (~40 s a run); "
                              "tests/test_doc_examples.py runs it once as the README does"),
    "train kcca": Case(skip="trains a Hodosh system on Flickr8K (minutes); tests/"
                            "test_hodosh_systems.py trains them"),
    "mitl propose": Case(lambda ws: ["mitl", "propose", ws.new("c.db"), "-p", "folder", "--data",
                                     str(ws.root / "mitl" / "photos"), "--captions",
                                     str(ws.root / "mitl" / "caps.csv"), "-a",
                                     ws.annotator0_npy, "-a", ws.annotator1_npy, "-n", "8"],
                         expect="annotator0"),
    "mitl hits": Case(lambda ws: ["mitl", "hits", ws.fresh("proposed.db")], expect="HITs",
                      json_expect="hits"),
    "mitl status": Case(lambda ws: ["mitl", "status", ws.campaign_db], expect="accepted"),
    "mitl aggregate": Case(lambda ws: ["mitl", "aggregate", ws.fresh("campaign.db")],
                           expect="positive"),
    "mitl export": Case(lambda ws: ["mitl", "export", ws.fresh("campaign.db"), ws.new("pos")],
                        expect="verified_positive"),
    "mitl next-round": Case(lambda ws: ["mitl", "next-round", ws.fresh("campaign.db"),
                                        "--budget", "4"], expect="4"),
    "mitl simulate": Case(skip="proposes over all of Flickr8K's test split with five annotator "
                               "families (minutes); tests/test_mitl.py simulates"),
    "mitl workers add": Case(lambda ws: ["mitl", "workers", "add", ws.fresh("campaign.db"),
                                         "carol"], expect="carol"),
    "mitl workers reissue": Case(lambda ws: ["mitl", "workers", "reissue",
                                             ws.fresh("campaign.db"), "alice"], expect="alice"),
    "mitl workers link": Case(lambda ws: ["mitl", "workers", "link", ws.fresh("campaign.db"),
                                          "alice"], expect="code="),
    "mitl workers revoke": Case(lambda ws: ["mitl", "workers", "revoke",
                                            ws.fresh("campaign.db"), "alice"], expect="alice"),
    "mitl workers list": Case(lambda ws: ["mitl", "workers", "list", ws.campaign_db],
                              expect="w1"),
    "mitl crowd export": Case(lambda ws: ["mitl", "crowd", "export", ws.campaign_db,
                                          ws.new("hits"), "--platform", "mturk", "--image-url",
                                          "https://example.org/images"], expect="images"),
    "mitl crowd import": Case(skip="reads a platform's results file; tests/test_mitl_crowd.py "
                                   "builds MTurk and Label Studio ones and imports them"),
    "mitl answers": Case(lambda ws: ["mitl", "answers", ws.campaign_db, ws.new("answers.csv")],
                         expect="answers.csv"),
    "prepare": Case(skip="exports a model's towers to ONNX (minutes) and replaces the copies "
                         "in the models folder that every test shares; tests/test_onnx_export.py "
                         "exports"),
    "mitl crowd pay": Case(lambda ws: ["mitl", "crowd", "pay", ws.campaign_db, "--reward",
                                       "0.1"], expect="w1"),
    "ann build": Case(lambda ws: ["ann", "build", ws.emb, ws.new("ann")], expect="nprobe"),
    **{f"reproduce {name}": Case(skip="a reproduction: minutes to hours of training; its numbers "
                                      "are checked by tests/test_reproduce.py (make test-slow)")
       for name in ("wikipedia", "corel5k", "hodosh", "gist", "dual", "mitl", "tagger",
                    "calibration")},
}


def _commands() -> dict[str, object]:
    """Every leaf command of the app: 'mitl workers add' -> its click command."""
    out = {}

    def walk(cmd, path):
        subs = getattr(cmd, "commands", None)
        if subs:
            for name, sub in subs.items():
                walk(sub, [*path, name])
        else:
            out[" ".join(path)] = cmd

    walk(typer.main.get_command(app), [])
    return out


COMMANDS = _commands()


def _opts(name: str) -> set[str]:
    return {o for p in COMMANDS[name].params for o in getattr(p, "opts", [])}


def _modes(name: str) -> list[str]:
    opts = _opts(name)
    modes = ["pipe"]
    if "--json" in opts:
        modes.append("json")
    if "--output" in opts or CASES[name].output:
        modes.append("output")
    if "--quiet" in opts:
        modes.append("quiet")
    return modes


def test_every_command_is_listed():
    assert set(COMMANDS) == set(CASES), (sorted(set(COMMANDS) - set(CASES)),
                                         sorted(set(CASES) - set(COMMANDS)))
    assert len(COMMANDS) > 40


def test_every_command_that_answers_has_json():
    """'--json on every command' (README): all but the server and the reproductions."""
    missing = [n for n in COMMANDS if "--json" not in _opts(n)
               and not n.startswith("reproduce ") and n != "serve"]
    assert not missing, missing


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    import mitl_fixtures

    root = tmp_path_factory.mktemp("modes")
    photos = root / "photos"
    (photos / "sub").mkdir(parents=True)
    for name, colour in [("red.png", (230, 20, 20)), ("red2.png", (228, 22, 20)),
                         ("green.png", (20, 230, 20)), ("sub/blue.jpg", (20, 20, 230))]:
        Image.new("RGB", (64, 48), colour).save(photos / name)
    (root / "caps.csv").write_text("image,caption\nred.png,a red square\nred2.png,a red tile\n"
                                   "green.png,a green square\nsub/blue.jpg,a blue square\n")
    (root / "pool.txt").write_text("a red square\na green square\na blue square\n")
    w = Workspace(root)
    res = runner.invoke(app, ["index", str(photos), "--db", w.photos_db, "--model", FAKE, "-q"])
    assert res.exit_code == 0, res.output
    campaign_root = root / "mitl"
    campaign_root.mkdir()
    shutil.copy(mitl_fixtures.judged_campaign(campaign_root, root / "proposed.db"),
                root / "campaign.db")
    for k in range(2):
        shutil.copy(campaign_root / f"annotator{k}.npy", root / f"annotator{k}.npy")
    for model, run in ((FAKE, "fakerun.json"), ("random", "randomrun.json")):
        res = runner.invoke(app, ["eval", "-p", "folder", "--data", str(photos), "--captions",
                                  w.caps_csv, "-m", model, "--per-query", "--json"])
        assert res.exit_code == 0, res.output
        (root / run).write_text(res.stdout)
    res = runner.invoke(app, ["embed", str(photos), w.emb, "--model", FAKE, "-q"])
    assert res.exit_code == 0, res.output
    return w


def _case(name: str, ws: Workspace) -> list[str]:
    case = CASES[name]
    if name == "gist" and not (WORDNET / "data.noun").is_file():
        pytest.skip("WordNet 3.0 not installed (apt-get install wordnet-base "
                    "wordnet-sense-index)")
    return case.args(ws)


def _params():
    for name in sorted(CASES):
        if CASES[name].skip:
            yield pytest.param(name, "pipe", id=f"{name}-skipped",
                               marks=pytest.mark.skip(reason=CASES[name].skip))
            continue
        for mode in _modes(name):
            yield pytest.param(name, mode, id=f"{name}-{mode}")


def _invoke(args: list[str]):
    res = runner.invoke(app, args)
    assert res.exit_code == 0, f"{args}\n{res.output[-3000:]}\n{res.exception!r}"
    return res


@pytest.mark.parametrize("name, mode", list(_params()))
def test_command_in_mode(name, mode, ws):
    case = CASES[name]
    args = _case(name, ws)
    if mode == "pipe":
        res = _invoke(args)
        assert case.expect in res.output, res.output[-3000:]
    elif mode == "json":
        res = _invoke([*args, "--json"])
        data = json.loads(res.stdout)  # stdout holds the JSON only
        assert (case.json_expect or case.expect) in json.dumps(data), res.stdout[-3000:]
    elif mode == "output":
        out = Path(ws.new("out.json"))
        res = _invoke([*args, case.output or "--output", str(out)])
        text = out.read_text()
        assert case.expect in text
        json.loads(text)
    elif mode == "quiet":
        res = _invoke([*args, "--quiet"])
        assert "%|" not in res.output and "img/s]" not in res.output, res.output[-2000:]
        assert case.expect in res.output


# -------------------------------------------------------------------- on a pseudo-terminal

DRIVER = r"""
import json, sys
from xmodal.cli import app
for args in json.loads(sys.argv[1]):
    print("\n@@@START", flush=True)
    try:
        app(args, standalone_mode=False)
        code = 0
    except SystemExit as exc:
        code = exc.code or 0
    except BaseException as exc:
        code = repr(exc)
    print(f"\n@@@END {code}", flush=True)
"""
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")


@pytest.fixture(scope="module")
def on_a_terminal(ws):
    """Every runnable command's table output, with stdout on a pseudo-terminal (100 columns)."""
    import fcntl
    import struct
    import termios

    names = [n for n in sorted(CASES) if not CASES[n].skip and n != "gist"]
    calls = [_case(n, ws) for n in names]
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 100, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "100"}
    proc = subprocess.Popen([sys.executable, "-c", DRIVER, json.dumps(calls)], cwd=REPO,
                            stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
    os.close(slave)
    chunks = []
    try:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
    finally:
        proc.wait(timeout=600)
        os.close(master)
    text = ANSI.sub("", b"".join(chunks).decode(errors="replace"))
    parts = text.split("@@@START")[1:]
    assert len(parts) == len(names), text[-3000:]
    return {n: p for n, p in zip(names, parts)}


@pytest.mark.parametrize("name", [n for n in sorted(CASES) if not CASES[n].skip
                                  and n != "gist"])
def test_command_on_a_terminal(name, on_a_terminal):
    text = on_a_terminal[name]
    assert "@@@END 0" in text, text[-3000:]
    assert "Traceback" not in text
    assert CASES[name].expect in text, text[-3000:]


# ------------------------------------------------------------------- errors under --json

@pytest.mark.parametrize("args, kind", [
    (["photos", "--db", "/no/such/photos.db", "--json"], "error"),
    (["search", "--json"], "error"),
    (["search", "a dog", "--json", "--no-such-option"], "usage"),
    (["mitl", "status", "/no/such/campaign.db", "--json"], "error"),
])
def test_errors_under_json_are_json(args, kind):
    run = subprocess.run([sys.executable, "-m", "xmodal", *args], cwd=REPO, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 2, run.stderr
    error = json.loads(run.stdout)["error"]
    assert error["kind"] == kind and error["exit_code"] == 2 and error["message"]
    assert "Traceback" not in run.stderr


def test_errors_without_json_stay_text():
    run = subprocess.run([sys.executable, "-m", "xmodal", "photos", "--db", "/no/such.db"],
                         cwd=REPO, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and run.stdout == "" and "error:" in run.stderr
