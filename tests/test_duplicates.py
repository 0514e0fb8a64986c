"""Near-duplicate groups: library, ``xmodal duplicates`` (move, undo, crash recovery), API, page.

Photos are synthetic (smooth random patterns, tinted) and embedded by the fake ColourModel (the
mean colour): copies of a photo have its colour and its perceptual hash; "distinct photos of the
same scene" have the same colour (so the embeddings alone cannot tell them apart) but another
pattern. One test uses real Flickr8K photos with the default model (skipped without the data).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageEnhance, ImageOps
from typer.testing import CliRunner

from xmodal.cli import app
from xmodal.errors import XmodalError
from xmodal.factory import open_photo_index
from xmodal.index import PhotoIndex
from xmodal.index import duplicates as dup

REPO = Path(__file__).resolve().parents[1]
FAKE = "python:tests.fake_models:ColourModel"
ARTIFACTS = REPO / "test-artifacts"
runner = CliRunner()
TINTS = {"sea": (40, 90, 200), "forest": (40, 160, 60), "sunset": (220, 120, 40)}


def pattern(seed: int, tint, size=(320, 240)) -> Image.Image:
    """A smooth random picture (8x6 noise, upsampled) in the colour ``tint``."""
    rng = np.random.default_rng(seed)
    small = rng.uniform(0.3, 1.0, (6, 8))
    grey = Image.fromarray((small * 255).astype(np.uint8)).resize(size, Image.BICUBIC)
    g = np.asarray(grey, dtype=np.float32)[..., None] / 255
    return Image.fromarray(np.clip(g * np.array(tint, np.float32), 0, 255).astype(np.uint8))


def make_photos(root: Path) -> dict[str, list[Path]]:
    """Per scene: the original, four copies (resized, mirrored, re-encoded, brighter) and one
    distinct photo of the same colour. Originals are the oldest files."""
    families: dict[str, list[Path]] = {}
    for n, (scene, tint) in enumerate(TINTS.items()):
        folder = root / scene
        folder.mkdir(parents=True)
        original = pattern(n, tint)
        paths = [folder / "original.png"]
        original.save(paths[0])
        original.resize((160, 120), Image.LANCZOS).save(folder / "small.png")
        ImageOps.mirror(original).save(folder / "mirrored.png")
        original.save(folder / "reencoded.jpg", quality=35)
        ImageEnhance.Brightness(original).enhance(1.2).save(folder / "brighter.png")
        paths += [folder / n for n in ("small.png", "mirrored.png", "reencoded.jpg",
                                       "brighter.png")]
        pattern(100 + n, tint).save(folder / "other-shot.png")
        for k, p in enumerate(paths):  # the original is the oldest file
            os.utime(p, (1_600_000_000 + 3600 * k, 1_600_000_000 + 3600 * k))
        families[scene] = paths
    return families


def index_folder(folder: Path, db: Path) -> Path:
    from fake_models import ColourModel

    index = PhotoIndex(db, model=ColourModel())
    index.update(folder, progress=False)
    index.close()
    return db


@pytest.fixture
def collection(tmp_path):
    root = tmp_path / "photos"
    families = make_photos(root)
    return root, families, index_folder(root, tmp_path / "photos.db")


def names(groups) -> list[set[str]]:
    return [{str(Path(m.path).relative_to(m.path.rsplit("/", 2)[0])) for m in g.members}
            for g in groups]


def sha1(path: Path) -> str:
    return hashlib.sha1(path.read_bytes()).hexdigest()


# ----- library --------------------------------------------------------------------------------
def test_groups_hold_the_copies_and_not_the_distinct_shots(collection):
    root, families, db = collection
    index = PhotoIndex(db, create=False)
    groups = dup.find_duplicates(index)
    found = sorted(names(groups), key=sorted)
    expected = sorted(({f"{scene}/{p.name}" for p in paths} for scene, paths in families.items()),
                      key=sorted)
    assert found == expected  # every copy with its original; no "other-shot" anywhere
    for g in groups:
        assert g.keep.path.endswith("/original.png")  # largest resolution, then the oldest
        assert g.keep.keep and not any(m.keep for m in g.extra)
        assert (g.keep.width, g.keep.height) == (320, 240)
        small = next(m for m in g.members if m.path.endswith("small.png"))
        assert (small.width, small.height) == (160, 120) and small.bytes > 0
        assert g.keep.date.startswith("2020-09-1")  # the original's mtime (any time zone)
    # the embeddings alone (hash weight 0) group the distinct shots of one colour as well: the
    # perceptual hash is what keeps them apart
    loose = dup.find_duplicates(index, hash_weight=0.0)
    assert any("sea/other-shot.png" in g for g in names(loose))
    index.close()


def test_byte_identical_files_are_grouped_without_any_similar_pair(collection, monkeypatch):
    root, families, db = collection
    (root / "backup").mkdir()
    shutil.copy2(families["sea"][0], root / "backup" / "original-copy.png")
    index_folder(root, db)
    none = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32))
    monkeypatch.setattr(dup, "candidate_pairs", lambda *a, **k: none)  # embeddings find nothing
    groups = dup.find_duplicates(PhotoIndex(db, create=False))
    assert [sorted(n) for n in names(groups)] == [["backup/original-copy.png",
                                                   "sea/original.png"]]
    assert [m.identical for m in groups[0].members] == [False, True]


def test_the_date_comes_from_photo_meta_when_the_index_has_it(collection):
    root, families, db = collection
    store = PhotoIndex(db, create=False).store
    fid = store.file_id(str(families["forest"][2].resolve()))
    with store.conn:
        store.conn.execute("CREATE TABLE IF NOT EXISTS photo_meta (file_id INTEGER PRIMARY KEY, "
                           "taken_at TEXT)")
        cols = {r[1] for r in store.conn.execute("PRAGMA table_info(photo_meta)")}
        extra = {"version": 1} if "version" in cols else {}
        keys = ["file_id", "taken_at", *extra]
        store.conn.execute(f"INSERT OR REPLACE INTO photo_meta({', '.join(keys)}) VALUES "
                           f"({', '.join('?' * len(keys))})",
                           [fid, "2001-02-03T04:05:06", *extra.values()])
    groups = dup.find_duplicates(store)
    mirrored = next(m for g in groups for m in g.members if m.file_id == fid)
    assert mirrored.date == "2001-02-03T04:05:06" and mirrored.date_source != "mtime"
    forest = next(g for g in groups if any(m.file_id == fid for m in g.members))
    assert forest.keep.file_id == fid  # same resolution as the original, and older


def test_hashes_are_cached_by_content(collection, monkeypatch):
    root, families, db = collection
    dup.find_duplicates(PhotoIndex(db, create=False))
    calls = []
    real = dup.hash_file
    monkeypatch.setattr(dup, "hash_file", lambda p: calls.append(p) or real(p))
    (root / "sea" / "original.png").rename(root / "sea" / "renamed.png")
    index_folder(root, db)
    groups = dup.find_duplicates(PhotoIndex(db, create=False))
    assert calls == []  # a renamed file keeps its hash (keyed by SHA-1)
    assert any("sea/renamed.png" in n for n in names(groups))


def test_candidate_pairs_in_blocks_match_the_full_matrix(monkeypatch):
    rng = np.random.default_rng(3)
    base = rng.standard_normal((40, 16)).astype(np.float32)
    vecs = np.repeat(base, 3, axis=0) + 0.2 * rng.standard_normal((120, 16)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    full = vecs @ vecs.T
    want = {(i, j) for i in range(120) for j in range(i + 1, 120) if full[i, j] >= 0.5}
    monkeypatch.setattr(dup, "BLOCK_FLOATS", 120 * 16)  # 16 rows a block: 8 blocks
    i, j, s = dup.candidate_pairs(vecs, 0.5)
    assert set(zip(i.tolist(), j.tolist())) == want and len(want) > 40
    np.testing.assert_allclose(s, full[i, j], rtol=1e-5)
    i, j, _ = dup.candidate_pairs(vecs, -1.0, max_neighbours=2)  # capped: the 2 nearest a row
    assert np.bincount(i).max() == 2


# ----- the keep rule on camera photos -----------------------------------------------------------
EDITOR = "Adobe Photoshop Lightroom Classic 13.0 (Windows)"


def camera_families(flickr8k_root: Path, root: Path, n: int = 3) -> dict[str, dict[str, Path]]:
    """Per Flickr8K photo: the camera original (EXIF date taken and camera, the oldest file but
    not the largest) and copies made the way people make them: brightened at the same size by
    an editor that keeps the EXIF and names itself, brightened and saved as PNG (no EXIF),
    letterboxed to 16:9 at a larger size with the EXIF kept, turned 90° without an EXIF
    orientation (EXIF dropped), and re-encoded at JPEG quality 30 with the EXIF kept."""
    import piexif
    from exif_photos import CAMERAS, Planned, exif_bytes

    images = sorted((flickr8k_root / "Flicker8k_Dataset").glob("*.jpg"))[10:10 + n]
    if len(images) < n:
        pytest.skip(f"Flickr8K photos missing under {flickr8k_root}")
    out = {}
    for k, src in enumerate(images):
        folder = root / f"f{k}"
        folder.mkdir(parents=True)
        exif = exif_bytes(Planned("x", f"2019-0{k + 1}-11T10:20:30", None, "lisbon",
                                  CAMERAS[k % len(CAMERAS)]))
        edited = piexif.load(exif)
        edited["0th"][piexif.ImageIFD.Software] = EDITOR.encode()
        with Image.open(src) as im:
            im = im.convert("RGB")
        w, h = im.size
        bright = ImageEnhance.Brightness(im).enhance(1.25)
        canvas = Image.new("RGB", (round(h * 1.5 * 16 / 9), round(h * 1.5)))  # black 16:9
        big = im.resize((round(w * 1.5), round(h * 1.5)), Image.LANCZOS)
        canvas.paste(big, ((canvas.width - big.width) // 2, 0))
        paths = {name: folder / name for name in (
            "original.jpg", "brightened.jpg", "brightened.png", "letterboxed.jpg",
            "turned.jpg", "reencoded.jpg")}
        im.save(paths["original.jpg"], quality=80, exif=exif)
        bright.save(paths["brightened.jpg"], quality=97, exif=piexif.dump(edited))
        bright.save(paths["brightened.png"])
        canvas.save(paths["letterboxed.jpg"], quality=92, exif=exif)
        im.transpose(Image.Transpose.ROTATE_90).save(paths["turned.jpg"], quality=90)
        im.save(paths["reencoded.jpg"], quality=30, exif=exif)
        for n_, p in enumerate(paths.values()):  # the original first, copies later
            os.utime(p, (1_700_000_000 + 60 * n_, 1_700_000_000 + 60 * n_))
        out[f"f{k}"] = paths
    return out


def test_the_camera_original_is_kept_and_turned_and_letterboxed_copies_found(flickr8k_root,
                                                                               tmp_path):
    """Ties used to go to the larger file: a same-size brightened copy was kept over its
    original, every larger letterboxed copy won, and a copy turned 90° was never grouped."""
    root = tmp_path / "photos"
    families = camera_families(flickr8k_root, root)
    db = index_folder(root, tmp_path / "photos.db")
    sizes = {name: p.stat().st_size for name, p in families["f0"].items()}
    assert len(set(sizes.values())) == len(sizes)  # no tie on the file size to fall back on
    assert families["f0"]["brightened.png"].stat().st_size > \
        families["f0"]["original.jpg"].stat().st_size
    groups = dup.find_duplicates(PhotoIndex(db, create=False))
    found = sorted(sorted(Path(m.path).name for m in g.members) for g in groups)
    assert found == [sorted(paths) for paths in families.values()]  # every copy, no mix-up
    for g in groups:
        assert Path(g.keep.path).name == "original.jpg", [m.path for m in g.members]
        assert g.keep.camera_original and g.keep.why.startswith("kept: the camera original")
        why = {Path(m.path).name: m.why for m in g.members}
        assert why["brightened.jpg"] == f"edited with {EDITOR}"
        assert why["brightened.png"] == "no camera date in its EXIF"
        assert why["turned.jpg"] == "turned 90° anticlockwise; no camera date in its EXIF"
        assert why["letterboxed.jpg"].startswith("letterboxed: a ")
        assert why["reencoded.jpg"] == "a newer file"
        boxed = next(m for m in g.members if m.path.endswith("letterboxed.jpg"))
        assert boxed.content_pixels > g.keep.pixels  # the larger picture, and still not kept
        assert abs(boxed.content_width / boxed.content_height - g.keep.width / g.keep.height) \
            < 0.02
    res = runner.invoke(app, ["duplicates", "--db", str(db), "--json", "-q"])
    out = json.loads(res.stdout)["groups"][0]
    assert out["reason"].startswith("kept: the camera original")
    member = out["members"][1]
    assert {"why", "camera_original", "content_width", "software", "turned"} <= set(member)
    table = runner.invoke(app, ["duplicates", "--db", str(db), "-q"], terminal_width=200)
    assert "edited with Adobe" in " ".join(table.output.split())


def test_borders_are_trimmed_only_where_both_sides_have_one():
    picture = pattern(7, (200, 150, 90), size=(400, 300))
    def near(box, want):  # found on a copy of at most 256 pixels a side: within 2 of them
        return all(abs(a - b) <= 2 * max(want) / 256 for a, b in zip(box, want))

    letterboxed = Image.new("RGB", (400, 400))
    letterboxed.paste(picture, (0, 50))
    assert near(dup.content_box(letterboxed), (0, 50, 400, 350))
    framed = Image.new("RGB", (440, 340), (255, 255, 255))
    framed.paste(picture, (20, 20))
    assert near(dup.content_box(framed), (20, 20, 420, 320))
    dark_sky = Image.new("RGB", (400, 360))
    dark_sky.paste(picture, (0, 60))  # black along the top edge only: no added border
    assert dup.content_box(dark_sky) == (0, 0, 400, 360)
    assert dup.content_box(picture) == (0, 0, 400, 300)
    hashes = dup.perceptual_hashes(picture)
    turned = dup.perceptual_hashes(picture.transpose(Image.Transpose.ROTATE_270))
    assert min(bin(hashes[0] ^ t).count("1") for t in turned) <= 2
    assert bin(hashes[0] ^ turned[0]).count("1") > 10


# ----- command line ---------------------------------------------------------------------------
def test_cli_json_shape(collection):
    root, families, db = collection
    res = runner.invoke(app, ["duplicates", "--db", str(db), "--json", "-q"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["threshold"] == dup.THRESHOLD and out["hash_weight"] == dup.HASH_WEIGHT
    assert len(out["groups"]) == 3
    group = out["groups"][0]
    assert set(group) == {"keep", "reason", "size", "extra_bytes", "members"}
    assert group["size"] == 5 == len(group["members"])
    member = group["members"][0]
    assert {"path", "bytes", "width", "height", "date", "date_source", "sha1", "similarity",
            "identical", "keep"} <= set(member)
    assert member["keep"] and member["path"] == group["keep"]
    assert group["extra_bytes"] == sum(m["bytes"] for m in group["members"][1:])
    table = runner.invoke(app, ["duplicates", "--db", str(db), "-q"])  # rich table on stderr
    assert table.exit_code == 0 and "keep" in table.output and "3 group(s)" in table.output


def test_move_then_undo_restores_identical_files(collection, tmp_path):
    root, families, db = collection
    before = {p: sha1(p) for p in root.rglob("*") if p.is_file()}
    dest, log = tmp_path / "aside", tmp_path / "moves.jsonl"
    res = runner.invoke(app, ["duplicates", "--db", str(db), "--move-to", str(dest), "--log",
                              str(log), "--json", "-q"])
    assert res.exit_code == 0, res.output
    moved = json.loads(res.stdout)["moved"]
    assert len(moved["moved"]) == 12 and not moved["skipped"]  # 4 copies of 3 originals
    for scene, paths in families.items():
        assert paths[0].is_file()  # the keep stays
        for p in paths[1:]:
            assert not p.exists()
            assert dup.destination(p.resolve(), dest).is_file()  # absolute path below DEST
    assert (root / "sea" / "other-shot.png").is_file()
    again = runner.invoke(app, ["duplicates", "--db", str(db), "--json", "-q"])
    assert json.loads(again.stdout)["groups"] == []  # moved files leave their groups

    res = runner.invoke(app, ["duplicates", "--undo", str(log), "--json", "-q"])
    assert res.exit_code == 0, res.output
    assert len(json.loads(res.stdout)["restored"]) == 12
    assert {p: sha1(p) for p in root.rglob("*") if p.is_file()} == before
    assert not any(p.is_file() for p in dest.rglob("*"))
    twice = dup.undo_moves(log)  # nothing left to do, nothing overwritten
    assert twice.restored == [] and len(twice.skipped) == 12


def test_moved_copies_leave_the_search_results(collection, tmp_path):
    """After --move-to, searches used to list the moved copies at paths that no longer exist
    (until the next 'xmodal index'); after --undo, they are back in the index at once."""
    from fake_models import ColourModel

    root, families, db = collection

    def searched() -> set[str]:
        index = PhotoIndex(db, model=ColourModel())
        try:
            return {r.path for r in index.find("blue", 30, min_relevance=0).results}
        finally:
            index.close()

    before = searched()
    log = tmp_path / "moves.jsonl"
    res = runner.invoke(app, ["duplicates", "--db", str(db), "--move-to",
                              str(tmp_path / "aside"), "--log", str(log), "--json", "-q"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["moved"]["unindexed"] == 12
    assert searched() == {p for p in before if Path(p).exists()} and len(before) == 18
    res = runner.invoke(app, ["duplicates", "--undo", str(log), "-q"])
    said = " ".join(res.output.split())
    assert "and into the index" in said and "(not embedded again)" in said
    assert searched() == before  # back in the index at once
    from xmodal.index.photo_index import writer_lock

    with writer_lock(db):  # an 'xmodal index' at work: the files move, the index waits
        res = runner.invoke(app, ["duplicates", "--db", str(db), "--move-to",
                                  str(tmp_path / "aside2"), "-q"])
    assert res.exit_code == 0 and "another 'xmodal index' is updating" in res.output
    assert not (root / "sea" / "small.png").exists()


def test_undo_embeds_nothing_again(collection, tmp_path):
    """Undoing --move-to used to leave the restored photos out of the index until 'xmodal
    index' embedded every one of them again; their vectors are kept by content now."""
    from fake_models import CountingColourModel

    root, families, db = collection
    index = PhotoIndex(db, model=CountingColourModel())
    before = {r.path for r in index.find("blue", 30, min_relevance=0).results}
    index.close()
    for n, via_cli in enumerate((True, False)):
        log = tmp_path / f"moves{n}.jsonl"
        res = runner.invoke(app, ["duplicates", "--db", str(db), "--move-to",
                                  str(tmp_path / f"aside{n}"), "--log", str(log), "-q"])
        assert res.exit_code == 0, res.output
        CountingColourModel.embedded = 0
        if via_cli:  # the command puts them back into the index the log names
            res = runner.invoke(app, ["duplicates", "--undo", str(log), "--json", "-q"])
            assert json.loads(res.stdout)["reindexed"] == 12
        else:  # moved back without the index: the next 'xmodal index' finds their vectors
            assert dup.undo_moves(log).reindexed == 0
        index = PhotoIndex(db, model=CountingColourModel())
        stats = index.update(root, progress=False)
        assert CountingColourModel.embedded == 0  # not one photo embedded again
        assert (stats.unchanged, stats.reused) == ((18, 0) if via_cli else (6, 12))
        assert {r.path for r in index.find("blue", 30, min_relevance=0).results} == before
        assert index.store.conn.execute("SELECT COUNT(*) FROM retired_vectors").fetchone()[0] \
            == (0 if via_cli else 12)
        index.close()


def test_a_crash_mid_move_is_undone_from_the_log(collection, tmp_path, monkeypatch):
    root, families, db = collection
    before = {p: sha1(p) for p in root.rglob("*") if p.is_file()}
    groups = dup.find_duplicates(PhotoIndex(db, create=False))
    real, done = dup.move_file, []

    def dies_on_the_fifth(src, to):
        if len(done) == 4:  # the log line is written; the process dies before the move
            raise KeyboardInterrupt
        real(src, to)
        done.append(src)

    monkeypatch.setattr(dup, "move_file", dies_on_the_fifth)
    log = tmp_path / "moves.jsonl"
    with pytest.raises(KeyboardInterrupt):
        dup.move_duplicates(groups, tmp_path / "aside", log)
    with open(log, "a") as f:  # and a last line cut short
        f.write('{"from": "/half')
    monkeypatch.setattr(dup, "move_file", real)
    assert len(dup.read_move_log(log)) == 5  # four moved, one announced
    report = dup.undo_moves(log)
    assert len(report.restored) == 4
    assert [s["reason"] for s in report.skipped] == ["in place already (not moved, or "
                                                     "restored before)"]
    assert {p: sha1(p) for p in root.rglob("*") if p.is_file()} == before


def test_undo_never_overwrites(collection, tmp_path):
    root, families, db = collection
    groups = dup.find_duplicates(PhotoIndex(db, create=False))
    log = tmp_path / "moves.jsonl"
    report = dup.move_duplicates(groups, tmp_path / "aside", log)
    first = Path(report.moved[0]["from"])
    first.write_bytes(b"a new file in the old place")
    undo = dup.undo_moves(log)
    assert len(undo.restored) == 11
    assert first.read_bytes() == b"a new file in the old place"
    assert Path(report.moved[0]["to"]).is_file()  # left where it was moved to
    assert "both" in undo.skipped[0]["reason"]


def test_clear_errors(tmp_path, collection):
    root, families, db = collection
    missing = subprocess.run([sys.executable, "-m", "xmodal", "duplicates", "--db",
                              str(tmp_path / "none.db")], capture_output=True, text=True,
                             cwd=REPO, env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=120,
                             check=False)
    assert missing.returncode == 2
    assert "no photo index" in missing.stderr and "Traceback" not in missing.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    index_folder(empty, tmp_path / "empty.db")
    res = runner.invoke(app, ["duplicates", "--db", str(tmp_path / "empty.db")])
    assert isinstance(res.exception, XmodalError)
    assert "holds no indexed photos" in str(res.exception)
    for args, message in ((["--undo", str(tmp_path / "nolog.jsonl")], "no move log"),
                          (["--log", str(tmp_path / "l.jsonl")], "go with --move-to"),
                          (["--threshold", "2"], "cosine similarity in [-1, 1]")):
        res = runner.invoke(app, ["duplicates", "--db", str(db), *args])
        assert isinstance(res.exception, XmodalError), res.output
        assert message in str(res.exception)
    not_a_log = tmp_path / "notes.jsonl"
    not_a_log.write_text('{"hello": 1}\n')
    with pytest.raises(XmodalError, match="not a move log"):
        dup.undo_moves(not_a_log)


# ----- server and web page ----------------------------------------------------------------------
@pytest.fixture
def app_for(collection, tmp_path):
    from fake_models import ColourModel

    from xmodal.server import create_app

    root, families, db = collection
    return create_app(db, thumbnail_dir=tmp_path / "thumbs", model=ColourModel())


def test_api_groups_with_thumbnails(app_for):
    from fastapi.testclient import TestClient

    with TestClient(app_for) as client:
        body = client.get("/api/duplicates").json()
        assert body["total_groups"] == 3 and body["total_extra"] == 12
        assert not body["has_more"]
        member = body["groups"][0]["members"][0]
        assert member["keep"] and member["id"] == member["path"]
        assert {"thumbnail", "preview", "bytes", "width", "height", "date", "score"} <= set(member)
        assert member["why"].startswith("kept: ")  # and each other photo says why not
        assert all(m["why"] for m in body["groups"][0]["members"])
        thumb = client.get(member["thumbnail"])
        assert thumb.status_code == 200 and thumb.headers["content-type"] == "image/jpeg"
        page = client.get("/api/duplicates", params={"limit": 1, "offset": 1}).json()
        assert len(page["groups"]) == 1 and page["has_more"]
        assert client.get("/api/duplicates", params={"threshold": 3}).status_code == 422
        assert client.get("/duplicates").status_code == 200


@pytest.mark.browser
def test_duplicates_page_on_a_phone(app_for):
    from live_server import chromium, live_server

    with live_server(app_for) as url, chromium() as browser:
        context = browser.new_context(viewport={"width": 390, "height": 844})
        page = context.new_page()
        page.set_default_timeout(15_000)
        errors = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(url + "/duplicates")
        page.wait_for_selector(".dup-group")
        assert page.locator(".dup-group").count() == 3
        assert page.locator(".dup-group").first.locator(".dup-photo").count() == 5
        assert page.locator(".dup-photo.keep").count() == 3
        first = page.locator(".dup-group").first.locator(".dup-photo").first
        assert "keep" in first.inner_text() and "320 × 240" in first.inner_text()
        assert "2020-09-1" in first.inner_text() and "kept: " in first.inner_text()
        page.wait_for_function("[...document.querySelectorAll('.dup-group:first-of-type img')]"
                               ".every(i => i.complete && i.naturalWidth > 0)")  # lazy below
        assert "12 photos beside the suggested keeps" in page.inner_text("#dup-status")
        # side by side, and nothing wider than the phone
        boxes = [page.locator(".dup-group").first.locator(".dup-photo").nth(k).bounding_box()
                 for k in range(2)]
        assert abs(boxes[0]["y"] - boxes[1]["y"]) < 1 and boxes[1]["x"] > boxes[0]["x"]
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        assert page.locator("nav a[href='/']").count() == 1
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "web-duplicates-390.png"), full_page=True)
        assert not errors
        context.close()


# ----- real photos ------------------------------------------------------------------------------
def test_real_photos_with_the_default_model(flickr8k_root, tmp_path):
    """Three Flickr8K photos with resized, cropped, mirrored, re-encoded, turned (90°, no EXIF
    orientation) and letterboxed copies, and two other shots of one photographer's session: the
    default model and thresholds group exactly the copies (turned and letterboxed copies used to
    be missed)."""
    images = flickr8k_root / "Flicker8k_Dataset"
    shots = ["241347760_d44c8d3a01.jpg", "241347803_afb04b12c4.jpg", "241347823_6b25c3e58e.jpg",
             "1000268201_693b08cb0e.jpg", "1001773457_577c3a7d70.jpg"]
    if not all((images / s).is_file() for s in shots):
        pytest.skip(f"Flickr8K photos missing under {images}")
    root = tmp_path / "photos"
    root.mkdir()
    for s in shots:
        shutil.copyfile(images / s, root / s)
    for s in (shots[0], shots[3], shots[4]):
        with Image.open(images / s) as im:
            im = im.convert("RGB")
            w, h = im.size
            im.resize((w // 2, h // 2), Image.LANCZOS).save(root / f"{s}-small.jpg", quality=90)
            im.crop((w // 20, h // 20, w, h)).save(root / f"{s}-crop.jpg", quality=90)
            ImageOps.mirror(im).save(root / f"{s}-mirror.jpg", quality=90)
            im.save(root / f"{s}-q30.jpg", quality=30)
            im.transpose(Image.Transpose.ROTATE_270).save(root / f"{s}-turned.jpg", quality=90)
            boxed = Image.new("RGB", (round(h * 16 / 9), h))  # 16:9, black bars
            boxed.paste(im, ((boxed.width - w) // 2, 0))
            boxed.save(root / f"{s}-boxed.jpg", quality=90)
    db = tmp_path / "photos.db"
    index = open_photo_index(db, create=True)  # the default model
    index.update(root, progress=False)
    groups = dup.find_duplicates(index)
    index.close()
    found = sorted(sorted(Path(m.path).name for m in g.members) for g in groups)
    expected = sorted(sorted([s] + [f"{s}-{k}.jpg" for k in ("small", "crop", "mirror", "q30",
                                                             "turned", "boxed")])
                      for s in (shots[0], shots[3], shots[4]))
    assert found == expected  # the other two shots of the session stay out
    for g in groups:  # no copy has a camera's EXIF: the largest picture, then the oldest file
        assert "-" not in Path(g.keep.path).name, [m.why for m in g.members]
