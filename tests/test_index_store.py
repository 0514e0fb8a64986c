"""The photo index: add, update, delete, rebuild, bad files, a kill -9 midway through indexing."""

from __future__ import annotations

import os
import signal
import sqlite3
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest
from PIL import Image

from tests.fake_models import ColourModel
from xmodal.errors import XmodalError
from xmodal.factory import open_photo_index
from xmodal.index import PhotoIndex

REPO = Path(__file__).resolve().parents[1]


def solid(path: Path, colour, size=(32, 24), fmt=None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size, colour).save(path, format=fmt)
    return path


def png_header_claiming(path: Path, width: int, height: int) -> Path:
    """A tiny PNG whose header claims a huge size (a decompression bomb, cheaply)."""

    def chunk(kind, data):
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IEND", b""))
    return path


@pytest.fixture
def photos(tmp_path):
    root = tmp_path / "photos"
    solid(root / "red.jpg", (250, 10, 10))
    solid(root / "sub" / "green.png", (10, 240, 10))
    solid(root / "sub" / "deeper" / "blue.jpg", (10, 10, 250))
    (root / "empty.jpg").write_bytes(b"")
    good = solid(tmp_path / "whole.jpg", (200, 200, 0), size=(200, 200))
    (root / "truncated.jpg").write_bytes(good.read_bytes()[:300])
    (root / "garbage.png").write_bytes(b"this is not a png at all")
    (root / "notes.txt").write_text("not a photo")
    png_header_claiming(root / "bomb.png", 20000, 20000)
    return root


def test_big_camera_jpegs_heic_and_avif_are_indexed_and_big_pngs_refused(tmp_path):
    """A 108-megapixel JPEG (above Pillow's own bomb warning) is decoded at a reduced scale,
    indexed and thumbnailed; HEIC and AVIF photos are indexed; a PNG above the 64-megapixel
    limit is refused by its header."""
    import warnings

    from xmodal.index.scan import load_checked
    from xmodal.server.thumbnails import ThumbnailCache

    root = tmp_path / "photos"
    root.mkdir()
    Image.new("L", (12000, 9000), 128).save(root / "camera.jpg", quality=30)
    png_header_claiming(root / "poster.png", 9000, 9000)
    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        image, reason = load_checked(str(root / "camera.jpg"))
        assert reason is None and max(image.size) == 448 and image.mode == "RGB"
        assert image.info["original_size"] == (12000, 9000)
        thumb = ThumbnailCache(tmp_path / "thumbs").get(root / "camera.jpg", 256)
        with Image.open(thumb) as t:
            assert t.size == (256, 192)
    _, reason = load_checked(str(root / "poster.png"))
    assert reason == "image too large (9000x9000 pixels; the limit is 64 million for PNG)"
    solid(root / "phone.heic", (250, 10, 10), size=(64, 48))  # iPhone default format
    solid(root / "web.avif", (10, 10, 250), size=(64, 48))
    heic = (root / "phone.heic").read_bytes()
    (root / "cut.heic").write_bytes(heic[: len(heic) - 20])  # image data cut short
    index = PhotoIndex(tmp_path / "db.sqlite", model=ColourModel())
    stats = index.update(root, progress=False)
    assert (stats.added, stats.skipped) == (3, 2)
    reason = dict(index.skipped())[str(root / "cut.heic")]
    assert reason.startswith("corrupt image") and "\n" not in reason
    assert Path(index.search("red", k=1)[0].path).name == "phone.heic"
    assert Path(index.search("blue", k=1)[0].path).name == "web.avif"


def test_a_photo_turned_by_exif_reports_its_upright_size(tmp_path):
    """A phone's portrait JPEG is stored landscape with EXIF orientation 6: search results and
    the duplicates table used to report 2000 x 1500 for a photo seen (and thumbnailed) as
    1500 x 2000."""
    from xmodal.index import duplicates as dup

    root = tmp_path / "photos"
    root.mkdir()
    exif = Image.Exif()
    exif[0x0112] = 6
    for name, options in (("portrait.jpg", {"exif": exif.tobytes()}), ("landscape.jpg", {})):
        Image.new("RGB", (200, 150), (250, 10, 10)).save(root / name, **options)
    index = PhotoIndex(tmp_path / "db.sqlite", model=ColourModel())
    index.update(root, progress=False)
    sizes = {Path(r.path).name: (r.width, r.height)
             for r in index.find("red", 2, min_relevance=0).results}
    assert sizes == {"portrait.jpg": (150, 200), "landscape.jpg": (200, 150)}
    group, = dup.find_duplicates(index)
    assert {Path(m.path).name: (m.width, m.height) for m in group.members} == sizes


def test_heic_reaches_the_tower_through_its_embedded_copy(tmp_path, monkeypatch):
    """An iPhone-style HEIC (a 320 x 240 copy inside) reaches a 260-px tower through its copy,
    upright and close to the photo decoded whole; without a big-enough copy, or when asked
    not to, the photo itself is decoded."""
    import numpy as np
    from pillow_heif import as_plugin

    from xmodal.index.scan import load_checked

    chosen = []
    draft = as_plugin.HeifImageFile.draft

    def spy(self, mode, size):
        chosen.append(draft(self, mode, size))
        return chosen[-1]

    monkeypatch.setattr(as_plugin.HeifImageFile, "draft", spy)
    y, x = np.mgrid[0:960, 0:1280]
    pixels = np.stack([x * 255 // 1280, y * 255 // 960, 255 * (x < 300) * (y < 200)], -1)
    photo = Image.fromarray(pixels.astype(np.uint8))
    exif = Image.Exif()
    exif[0x0112] = 6  # shown turned right: the copy must come out upright too
    for name, options, upright in (("plain", {}, (1280, 960)),
                                   ("turned", {"exif": exif.tobytes()}, (960, 1280))):
        path = tmp_path / f"{name}.heic"
        photo.save(path, format="HEIF", quality=90, thumbnails=[320], **options)
        whole, _ = load_checked(str(path), square=260, thumbnails=False)
        assert chosen == []
        small, reason = load_checked(str(path), square=260)
        assert reason is None and small.size == (260, 260)
        assert small.info["original_size"] == whole.info["original_size"] == upright
        diff = np.abs(np.asarray(small, float) - np.asarray(whole, float))
        assert diff.mean() < 4, name  # a turned or wrong copy would differ by ~100
        assert chosen.pop() is not None, name
    path = tmp_path / "no_copy.heic"
    photo.save(path, format="HEIF", quality=90)
    load_checked(str(path), square=260)
    assert chosen.pop() is None
    load_checked(str(tmp_path / "plain.heic"))  # 448 px for describing: the copy is too small
    assert chosen.pop() is None
    from xmodal.server.thumbnails import ThumbnailCache

    with Image.open(ThumbnailCache(tmp_path / "thumbs").get(tmp_path / "plain.heic", 256)) as t:
        assert t.size == (256, 192)  # the web page's thumbnail, from the copy
    assert chosen.pop() == ("RGB", (0, 0, 320, 240))


def test_index_search_and_skips(photos, tmp_path):
    index = PhotoIndex(tmp_path / "db.sqlite", model=ColourModel())
    stats = index.update(photos, progress=False)
    assert (stats.added, stats.updated, stats.deleted) == (3, 0, 0)
    assert stats.skipped == 5
    reasons = dict(index.skipped())
    assert reasons[str(photos / "empty.jpg")] == "empty file"
    assert reasons[str(photos / "notes.txt")].startswith("not an image")
    assert "too large" in reasons[str(photos / "bomb.png")]
    assert reasons[str(photos / "truncated.jpg")].startswith("corrupt")
    assert reasons[str(photos / "garbage.png")] == "not a readable image"
    hits = index.search("a red thing", k=3)
    assert Path(hits[0].path).name == "red.jpg"
    assert [Path(h.path).name for h in index.search("blue", k=1)] == ["blue.jpg"]
    assert hits[0].score >= hits[1].score >= hits[2].score
    assert index.stats()["indexed"] == 3


class _TunedTextColourModel(ColourModel):
    """ColourModel with another text side: the same photo vectors under a new id."""

    model_id = "test-colour-v2"
    image_space_id = ColourModel.model_id


def test_a_text_side_tuning_takes_over_the_vectors_without_re_embedding(photos, tmp_path):
    db = tmp_path / "db.sqlite"
    PhotoIndex(db, model=ColourModel()).update(photos, progress=False)
    tuned = PhotoIndex(db, model=_TunedTextColourModel())
    assert Path(tuned.search("red", k=1)[0].path).name == "red.jpg"  # no "indexed with" error
    assert tuned.store.get_meta("model") == "test-colour-v2"
    again = PhotoIndex(db, model=_TunedTextColourModel()).update(photos, progress=False)
    assert (again.added, again.updated, again.unchanged) == (0, 0, 3)  # nothing re-embedded
    # a model of another image side is still refused
    with pytest.raises(XmodalError, match="was indexed with model test-colour-v2"):
        PhotoIndex(db, model=ColourModel()).search("red", k=1)


def test_incremental_update_change_and_delete(photos, tmp_path):
    db = tmp_path / "db.sqlite"
    index = PhotoIndex(db, model=ColourModel())
    index.update(photos, progress=False)
    again = index.update(photos, progress=False)
    assert (again.added, again.updated, again.unchanged) == (0, 0, 3)
    # change red -> yellow (new content), delete green, add a new white one
    time.sleep(0.01)
    solid(photos / "red.jpg", (250, 250, 5))
    (photos / "sub" / "green.png").unlink()
    solid(photos / "new" / "white.png", (255, 255, 255))
    stats = index.update(photos, progress=False)
    assert (stats.added, stats.updated, stats.deleted) == (1, 1, 1)
    assert Path(index.search("yellow", k=1)[0].path).name == "red.jpg"
    names = {Path(h.path).name for h in index.search("green", k=10)}
    assert "green.png" not in names and len(names) == 3
    # a touched file with the same content is not re-embedded
    os.utime(photos / "red.jpg", None)
    assert index.update(photos, progress=False).unchanged == 3


def test_ann_rebuilds_from_sqlite(photos, tmp_path):
    db = tmp_path / "db.sqlite"
    PhotoIndex(db, model=ColourModel()).update(photos, progress=False)
    saved = tmp_path / "db.sqlite.faiss.npz"
    assert saved.is_file()
    saved.unlink()  # missing: rebuilt from SQLite
    fresh = PhotoIndex(db, model=ColourModel())
    assert Path(fresh.search("green", k=1)[0].path).name == "green.png"
    assert saved.is_file()
    saved.write_bytes(b"corrupt")  # unreadable: rebuilt
    assert Path(PhotoIndex(db, model=ColourModel()).search("blue", k=1)[0].path).name == "blue.jpg"
    # stale: another process changed the collection after this one loaded its index
    reader = PhotoIndex(db, model=ColourModel())
    assert len(reader.search("red", k=10)) == 3
    (photos / "red.jpg").unlink()
    PhotoIndex(db, model=ColourModel()).update(photos, progress=False)
    assert {Path(h.path).name for h in reader.search("red", k=10)} == {"green.png", "blue.jpg"}
    assert reader.rebuild_ann() == 2


def test_similar_and_describe(photos, tmp_path):
    index = PhotoIndex(tmp_path / "db.sqlite", model=ColourModel())
    index.update(photos, progress=False)
    sim = index.similar(photos / "red.jpg", k=2)
    assert all(Path(h.path).name != "red.jpg" for h in sim) and len(sim) == 2
    outside = solid(tmp_path / "other.png", (0, 0, 255))
    assert Path(index.similar(outside, k=1)[0].path).name == "blue.jpg"
    ranked = index.describe(photos / "red.jpg", ["a green field", "a red wall", "blue sky"], k=2)
    assert ranked[0][0] == "a red wall" and len(ranked) == 2


def test_bad_queries_are_clear_errors(photos, tmp_path):
    index = PhotoIndex(tmp_path / "db.sqlite", model=ColourModel())
    index.update(photos, progress=False)
    with pytest.raises(XmodalError, match="empty"):
        index.search("   ")
    with pytest.raises(XmodalError, match="cannot use"):
        index.similar(photos / "garbage.png")
    with pytest.raises(XmodalError, match="not a folder"):
        index.update(tmp_path / "missing")
    with pytest.raises(XmodalError, match="xmodal index"):
        PhotoIndex(tmp_path / "none.db", model=ColourModel(), create=False)


def test_captions_are_stored(photos, tmp_path):
    index = PhotoIndex(tmp_path / "db.sqlite", model=ColourModel())
    index.update(
        photos, captions={"red.jpg": ["a red square"], "sub/green.png": ["green"]}, progress=False
    )
    assert sorted(t for _, t in index.captions()) == ["a red square", "green"]


def test_kill_9_midway_leaves_usable_index(tmp_path):
    root = tmp_path / "many"
    for i in range(48):
        solid(root / f"img{i:02d}.png", ((i * 5) % 256, 100, 200 - i))
    db = tmp_path / "db.sqlite"
    cmd = [
        sys.executable,
        "-m",
        "xmodal",
        "index",
        str(root),
        "--db",
        str(db),
        "--quiet",
        "--model",
        "python:tests.fake_models:SlowColourModel",
    ]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 120
    done = 0
    while time.time() < deadline:
        time.sleep(0.2)
        if db.exists():
            try:
                with sqlite3.connect(db, timeout=1) as c:
                    done = c.execute("SELECT COUNT(*) FROM vectors").fetchone()[0]
            except sqlite3.OperationalError:
                continue
            if done >= 16:
                break
        assert proc.poll() is None, proc.stderr.read().decode()
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    with sqlite3.connect(db) as c:
        assert c.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        n_vec = c.execute("SELECT COUNT(*) FROM vectors").fetchone()[0]
    assert 16 <= n_vec < 48, "the kill should land midway"
    # the interrupted index is usable as it is
    partial = open_photo_index(db, "python:tests.fake_models:ColourModel")
    assert len(partial.search("blue", k=100)) == n_vec
    # running again finishes the job, without duplicates
    out = subprocess.run(
        cmd[:-1] + ["python:tests.fake_models:ColourModel", "--json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    with sqlite3.connect(db) as c:
        assert c.execute("SELECT COUNT(*) FROM vectors").fetchone()[0] == 48
        assert c.execute("SELECT COUNT(DISTINCT path) FROM files").fetchone()[0] == 48
        assert c.execute("SELECT COUNT(*) FROM files").fetchone()[0] == 48


class PickyModel(ColourModel):
    """Fails on mostly-green images, like an encoder choking on one file of a batch."""

    def embed_images(self, images, *, progress=False, cache=True):
        for im in images:
            r, g, b = Image.Image.resize(im.convert("RGB"), (1, 1)).getpixel((0, 0))
            if g > 200 and r < 100:
                raise RuntimeError("cannot embed this one")
        return super().embed_images(images)


class OtherModel(ColourModel):
    model_id = "test-colour-v2"


def test_a_model_failure_skips_only_that_file(photos, tmp_path):
    index = PhotoIndex(tmp_path / "db.sqlite", model=PickyModel())
    stats = index.update(photos, progress=False)
    assert stats.added == 2
    assert dict(index.skipped())[str(photos / "sub" / "green.png")].startswith("the model failed")


def test_a_different_model_must_reindex(photos, tmp_path):
    db = tmp_path / "db.sqlite"
    PhotoIndex(db, model=ColourModel()).update(photos, progress=False)
    other = PhotoIndex(db, model=OtherModel())
    with pytest.raises(XmodalError, match="indexed with model test-colour-v1, not test-colour-v2"
                       ".*xmodal index"):
        other.search("red")
    stats = other.update(photos, progress=False)
    assert (stats.added, stats.updated, stats.unchanged) == (0, 3, 0)
    assert Path(other.search("red", k=1)[0].path).name == "red.jpg"
    assert other.stats()["model"] == "test-colour-v2" and other.stats()["indexed"] == 3


def test_the_index_remembers_the_spec_of_its_model(photos, tmp_path):
    db, spec = tmp_path / "db.sqlite", "python:tests.fake_models:ColourModel"
    open_photo_index(db, spec, create=True).update(photos, progress=False)
    bare = PhotoIndex(db, create=False)  # no model: housekeeping works, embedding does not
    assert bare.model_spec == spec and bare.model_id == "test-colour-v1"
    assert bare.stats()["indexed"] == 3 and bare.rebuild_ann() == 3
    with pytest.raises(XmodalError, match="opened without a model"):
        bare.search("red")
    again = open_photo_index(db)  # the recorded spec builds the same model
    assert type(again.model) is ColourModel
    assert Path(again.search("red", k=1)[0].path).name == "red.jpg"
    with pytest.raises(XmodalError, match="indexed with model test-colour-v1, not test-colour-v2"):
        open_photo_index(db, "python:tests.test_index_store:OtherModel").search("red")


def test_database_inside_the_folder_and_repaired_files(photos):
    index = PhotoIndex(photos / "index.db", model=ColourModel())
    index.update(photos, progress=False)
    assert not any("index.db" in p for p, _ in index.skipped())
    solid(photos / "empty.jpg", (0, 0, 0))  # the empty file becomes a real photo
    stats = index.update(photos, progress=False)
    assert (stats.added, stats.updated) == (0, 1) and stats.skipped == 4
    assert Path(index.search("black", k=1)[0].path).name == "empty.jpg"


@pytest.mark.skipif(sys.platform != "linux", reason="needs a file system that takes any bytes")
def test_undecodable_file_name_is_counted_not_stored(tmp_path):
    root = tmp_path / "odd"
    good = solid(root / "ok.png", (255, 0, 0))
    with open(os.fsencode(root) + b"/\xff\xfe.png", "wb") as f:
        f.write(good.read_bytes())
    index = PhotoIndex(tmp_path / "db.sqlite", model=ColourModel())
    stats = index.update(root, progress=False)
    assert (stats.added, stats.skipped) == (1, 1)
    assert stats.skip_reasons == {"file name is not valid UTF-8": 1}
    assert index.stats()["files"] == 1


def test_captions_attach_to_symlinked_photos(tmp_path):
    """Captions given for a symlinked file attach to that file as the folder walk records it."""
    target = solid(tmp_path / "elsewhere" / "red.png", (250, 0, 0))
    root = tmp_path / "linked"
    root.mkdir()
    (root / "red-link.png").symlink_to(target)
    index = PhotoIndex(tmp_path / "db.sqlite", model=ColourModel())
    stats = index.update(root, captions={"red-link.png": ["a red square"]}, progress=False)
    assert stats.added == 1
    assert [(Path(p).name, t) for p, t in index.captions()] == [("red-link.png", "a red square")]


def test_contains_only_searchable_photos(photos, tmp_path):
    index = PhotoIndex(tmp_path / "db.sqlite", model=ColourModel())
    index.update(photos, progress=False)
    assert index.contains(str(photos / "red.jpg"))
    assert not index.contains(str(photos / "garbage.png"))  # recorded, but skipped
    assert not index.contains("/etc/passwd")


def test_search_under_a_folder_ranks_only_its_photos(photos, tmp_path):
    """``search(..., under=FOLDER)`` ranks only the photos inside FOLDER (any depth), exactly:
    the same order as the unfiltered search restricted to those photos."""
    weird = photos / "sub" / "50%_off"  # LIKE wildcards in a folder name must not match others
    solid(weird / "red2.jpg", (240, 20, 20))
    solid(photos / "sub_other" / "red3.jpg", (245, 15, 15))  # shares the prefix "sub"
    index = PhotoIndex(tmp_path / "db.sqlite", model=ColourModel())
    index.update(photos, progress=False)
    everything = [Path(h.path) for h in index.search("red", k=20)]
    inside = [Path(h.path) for h in index.search("red", k=20, under=photos / "sub")]
    assert inside == [p for p in everything if (photos / "sub") in p.parents]
    assert {p.name for p in inside} == {"green.png", "blue.jpg", "red2.jpg"}
    assert [Path(h.path).name for h in index.search("red", k=5, under=weird)] == ["red2.jpg"]
    with pytest.raises(XmodalError, match="no indexed photo"):
        index.search("red", under=tmp_path / "elsewhere")


def test_large_collections_switch_to_a_saved_hnsw_graph(tmp_path, monkeypatch):
    """Above the size threshold the ANN index is an HNSW graph: recall@10 against exact search,
    the graph reloads from disk, and a folder-restricted search stays exact."""
    import numpy as np

    from xmodal.index.ann import AnnIndex
    from xmodal.index.store import Store

    rng = np.random.default_rng(0)
    centres = rng.normal(size=(30, 32))
    vecs = centres[rng.integers(0, 30, 2000)] + 0.3 * rng.normal(size=(2000, 32))
    vecs = (vecs / np.linalg.norm(vecs, axis=1, keepdims=True)).astype(np.float32)
    store = Store(tmp_path / "big.db")
    with store.transaction() as conn:
        for n, v in enumerate(vecs):
            fid = store.upsert_file(conn, f"/p/{n}.jpg", 1, 1, None, 8, 8, "ok", None)
            store.put_vector(conn, fid, "m", v)
    queries = vecs[:50] + 0.05 * rng.normal(size=(50, 32)).astype(np.float32)
    exact = AnnIndex(store, "m", 32)
    assert exact.kind == "flat"
    _, truth = exact.search(queries, 10)
    monkeypatch.setenv("XMODAL_HNSW_ABOVE", "1000")
    graph = AnnIndex(store, "m", 32)
    graph.rebuild()
    assert graph.kind == "hnsw" and (tmp_path / "big.db.faiss").is_file()
    _, found = graph.search(queries, 10)
    recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(truth, found)])
    assert recall >= 0.95
    again = AnnIndex(store, "m", 32)  # from the saved graph, not rebuilt
    again.rebuild = lambda: (_ for _ in ()).throw(AssertionError("rebuilt"))
    np.testing.assert_array_equal(again.search(queries, 10)[1], found)
    among = truth[:, :3].ravel()[:20]
    s_exact, i_exact = exact.search(queries[:5], 5, among=among)
    s_graph, i_graph = again.search(queries[:5], 5, among=among)
    np.testing.assert_array_equal(i_graph, i_exact)
    np.testing.assert_allclose(s_graph, s_exact, atol=1e-5)


def test_forget_prune_roots_lock_and_duplicates(photos, tmp_path):
    import shutil

    from xmodal.index.photo_index import writer_lock

    index = PhotoIndex(tmp_path / "db.sqlite", model=ColourModel())
    index.update(photos, progress=False)
    other = tmp_path / "other"
    solid(other / "dark_red.jpg", (200, 20, 20))  # similar colour, other bytes
    shutil.copy(photos / "red.jpg", other / "same_bytes.jpg")  # same SHA-1 as red.jpg
    index.update(other, progress=False)
    assert {r["folder"] for r in index.roots()} == {str(photos.resolve()), str(other.resolve())}
    index.update(photos / "sub", progress=False)  # a folder inside an indexed one
    sub = next(r for r in index.roots() if r["folder"] == str((photos / "sub").resolve()))
    assert sub["inside"] == str(photos.resolve()) and sub["files"] >= 1
    assert all(r["inside"] is None for r in index.roots() if r != sub)
    index.forget(photos / "sub")  # forgetting it drops its files, which the outer root holds
    index.update(photos, progress=False)
    # copies with the same content are shown once, with their other paths
    hits = index.search("red", k=3)
    names = [Path(h.path).name for h in hits]
    assert names.count("red.jpg") + names.count("same_bytes.jpg") == 1
    first = next(h for h in hits if Path(h.path).name in ("red.jpg", "same_bytes.jpg"))
    assert [Path(p).name for p in first.duplicates] == (
        ["same_bytes.jpg"] if Path(first.path).name == "red.jpg" else ["red.jpg"])
    assert len(hits) == 3  # the page is still full
    # a second writer fails at once with a clear error
    with writer_lock(index.db_path):
        with pytest.raises(XmodalError, match="another 'xmodal index'"):
            index.update(other, progress=False)
    # a deleted folder: the indexer says how to forget it; forget removes its photos
    shutil.rmtree(other)
    with pytest.raises(XmodalError, match="xmodal forget"):
        index.update(other, progress=False)
    assert index.forget(other) == 2
    assert all("other" not in h.path for h in index.search("red", k=10))
    assert [r["folder"] for r in index.roots()] == [str(photos.resolve())]
    # prune: records of files deleted behind the index's back
    (photos / "sub" / "green.png").unlink()
    assert index.prune() == 1
    assert all(Path(h.path).name != "green.png" for h in index.search("green", k=10))
    with pytest.raises(XmodalError, match="nothing under"):
        index.forget(tmp_path / "never-indexed")


def test_a_jpeg_header_claiming_more_pixels_than_its_data_is_corrupt(tmp_path):
    """A 640-px JPEG whose SOF header was edited to claim 30000 x 30000 is refused, not indexed
    at 30000 x 30000; a real large JPEG of plain colour is still accepted."""
    import io

    root = tmp_path / "photos"
    root.mkdir()
    buf = io.BytesIO()
    Image.new("RGB", (640, 480), (90, 140, 200)).save(buf, "JPEG")
    data = bytearray(buf.getvalue())
    sof = data.index(b"\xff\xc0")  # baseline frame header: length(2) precision(1) h(2) w(2)
    data[sof + 5:sof + 9] = struct.pack(">HH", 30000, 30000)
    (root / "doctored.jpg").write_bytes(bytes(data))
    solid(root / "flat_big.jpg", (120, 120, 120), size=(4000, 3000))  # 12 MP of one colour
    index = PhotoIndex(tmp_path / "db.sqlite", model=ColourModel())
    stats = index.update(root, progress=False)
    reasons = dict(index.skipped())
    assert "header claims 30000x30000" in reasons[str(root / "doctored.jpg")]
    assert stats.added == 1 and str(root / "flat_big.jpg") not in reasons
