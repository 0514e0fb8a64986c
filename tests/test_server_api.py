"""API tests for ``xmodal.server`` with FastAPI's TestClient and fake library objects.

The fakes (``test_server_fakes.py``) make every right answer known by hand: solid-colour images,
colour-word queries. Malformed uploads must get a 4xx JSON error and leave the server serving.
"""

from __future__ import annotations

import io
import json
import re
import struct
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient
from PIL import Image
from test_server_fakes import COLOURS, fake_backends

from xmodal.server import ServerLimits, create_app


def png_bytes(image: Image.Image) -> bytes:
    buf = io.BytesIO()
    image.save(buf, "PNG")
    return buf.getvalue()


def jpeg_bytes(image: Image.Image) -> bytes:
    buf = io.BytesIO()
    image.save(buf, "JPEG", quality=90)
    return buf.getvalue()


def png_claiming(width: int, height: int) -> bytes:
    """A valid-looking PNG of a few hundred bytes whose header claims ``width`` x ``height``."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)  # 8-bit greyscale
    rows = zlib.compress(b"\x00" * (width + 1) * 2)
    signature = b"\x89PNG\r\n\x1a\n"
    return signature + chunk(b"IHDR", header) + chunk(b"IDAT", rows) + chunk(b"IEND", b"")


REPORT_A = {
    "protocol": "flickr8k-5cap", "model": "random", "seed": 0, "elapsed_s": 1.5,
    "n_queries": {"i2t": 1000, "t2i": 5000},
    "directions": {"i2t": {"R@1": 0.001, "R@5": 0.005, "R@10": 0.01, "medR": 2500.0},
                   "t2i": {"R@1": 0.001, "R@5": 0.005, "R@10": 0.01, "medR": 500.0}},
}
REPORT_B = {**REPORT_A, "model": "dual",
            "directions": {"i2t": {"R@1": 0.2, "R@5": 0.5, "R@10": 0.6, "medR": 5.0}},
            "curves": {"i2t": {"recall_at_k": {"1": 0.2, "5": 0.5, "10": 0.6},
                               "pr": {"recall": [0.0, 0.5, 1.0], "precision": [0.9, 0.4, 0.1]}}}}


@pytest.fixture()
def built(tmp_path):
    """(db path, {"model", "tagger"}): a real PhotoIndex of six solid-colour images."""
    return fake_backends(tmp_path)


@pytest.fixture()
def parts(built):
    return built[1]


def photo(tmp_path, name: str) -> str:
    """The id of an indexed photo: its absolute path."""
    return str((tmp_path / "photos" / name).resolve())


def names(results) -> list[str]:
    return [Path(r["id"]).name for r in results]


@pytest.fixture()
def reports_dir(tmp_path):
    folder = tmp_path / "reports"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.json").write_text(json.dumps(REPORT_A))
    (folder / "sub" / "b.json").write_text(json.dumps(REPORT_B))
    (folder / "not_a_report.json").write_text(json.dumps({"hello": 1}))
    (folder / "broken.json").write_text("{not json")
    (tmp_path / "secret.json").write_text(json.dumps(REPORT_A))
    return folder


@pytest.fixture()
def app(tmp_path, built, reports_dir):
    db, parts = built
    return create_app(db, reports_dir=reports_dir, thumbnail_dir=tmp_path / "thumbs", **parts)


@pytest.fixture()
def client(app):
    with TestClient(app) as c:
        yield c


def assert_error(response, status: int) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["error"]["status"] == status
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    return body["error"]["message"]


def assert_still_serving(client) -> None:
    assert client.get("/api/health").json()["status"] == "ok"
    assert names(client.get("/api/search", params={"q": "red"}).json()["results"])[0] == "0_red.png"


# -- health, stats, static pages ---------------------------------------------------------------
def test_health_and_stats(client):
    health = client.get("/api/health").json()
    assert health["status"] == "ok" and health["index_loaded"] is False  # opened lazily
    stats = client.get("/api/stats").json()
    assert (stats["indexed"], stats["captions"], stats["dim"]) == (6, 6, 3)
    assert stats["model"] == "fake-colour-v1"
    assert client.get("/api/health").json()["index_loaded"] is True


def test_preload_opens_index_and_model_at_start_up(tmp_path, built, reports_dir):
    import logging

    from xmodal.server import create_app

    records = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append(record.getMessage())

    logger = logging.getLogger("uvicorn.error")  # where the server logs (propagation may be off)
    handler, level = Keep(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    db, parts = built
    app = create_app(db, reports_dir=reports_dir, thumbnail_dir=tmp_path / "thumbs",
                     preload=True, **parts)
    try:
        with TestClient(app) as c:
            assert c.get("/api/health").json()["index_loaded"] is True  # before any search
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    assert any("loaded photo index" in m and "(6 photos)" in m for m in records), records


def test_host_check_token_and_security_headers(tmp_path, built, reports_dir):
    from xmodal.server import create_app

    db, parts = built
    app = create_app(db, reports_dir=reports_dir, thumbnail_dir=tmp_path / "thumbs",
                     allowed_hosts=["127.0.0.1", "localhost"], access_token="s3cret", **parts)
    with TestClient(app, base_url="http://127.0.0.1:8000") as c:
        # a DNS-rebinding page arrives with its own host name: refused, JSON
        assert_error(c.get("/api/health", headers={"host": "evil.example"}), 400)
        # no token, a wrong one: 401 JSON, nothing answered
        assert "token" in assert_error(c.get("/api/search", params={"q": "a red car"}), 401)
        assert_error(c.get("/api/health", headers={"Authorization": "Bearer nope"}), 401)
        ok = c.get("/api/search", params={"q": "a red car"},
                   headers={"Authorization": "Bearer s3cret"})
        assert ok.status_code == 200 and ok.json()["results"]
        for name, value in (("x-content-type-options", "nosniff"), ("x-frame-options", "DENY"),
                            ("referrer-policy", "no-referrer")):
            assert ok.headers[name] == value
        # a page opened once with ?access_token= sets the cookie the pages then carry
        r = c.get("/?access_token=s3cret", follow_redirects=False)
        # a page that replaces itself with the clean address (see tests/test_access_link.py)
        assert r.status_code == 200 and "access_token" not in r.text
        assert 'id="continue" href="http' in r.text and "location.replace" in r.text
        assert "httponly" in r.headers["set-cookie"].lower()
        assert c.get("/api/stats").status_code == 200  # the cookie is now sent
        stats, health = c.get("/api/stats").json(), c.get("/api/health").json()
        assert "/" not in str(stats.get("db")) and "/" not in str(health.get("db"))


def test_serve_refuses_a_network_address_without_a_token():
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-c", "from xmodal.cli import main; main()", "serve",
                          "--host", "0.0.0.0", "--port", "1"], capture_output=True, text=True,
                         timeout=120, env={**__import__("os").environ, "XMODAL_TOKEN": ""})
    assert run.returncode == 2 and "--token" in run.stderr


def test_pages_and_openapi(client):
    home = client.get("/")
    assert home.status_code == 200 and 'id="search-form"' in home.text
    assert 'id="report-a"' in client.get("/eval").text
    assert "function runSearch" in client.get("/static/search.js").text
    paths = client.get("/openapi.json").json()["paths"]
    for path in ("/api/search", "/api/similar", "/api/thumbnail", "/api/describe", "/api/tag",
                 "/api/stats", "/api/health", "/api/reports", "/api/reports/{name}"):
        assert path in paths
    assert_error(client.get("/api/no-such-thing"), 404)
    # Swagger UI works offline: its assets come from this server, none from another host
    docs = client.get("/docs").text
    assert "/swagger-ui/swagger-ui-bundle.js" in docs
    assert not re.search(r"""(src|href)=["'](https?:)?//""", docs)
    assert client.get("/swagger-ui/swagger-ui-bundle.js").status_code == 200


# -- search, similar, thumbnails ----------------------------------------------------------------
def test_search_ranks_and_pages(client):
    body = client.get("/api/search", params={"q": "a red car", "limit": 6}).json()
    ids = names(body["results"])
    assert ids[0] == "0_red.png"
    # hand check: purple (150,20,170) is the next closest colour to red + the (1,1,1) bias
    scores = [r["score"] for r in body["results"]]
    assert scores == sorted(scores, reverse=True)
    assert [r["rank"] for r in body["results"]] == [1, 2, 3, 4, 5, 6]
    assert body["has_more"] is False
    page = client.get("/api/search", params={"q": "a red car", "limit": 2, "offset": 2}).json()
    assert names(page["results"]) == ids[2:4]
    assert [r["rank"] for r in page["results"]] == [3, 4]
    assert page["has_more"] is True
    assert page["results"][0]["thumbnail"].startswith("/api/thumbnail?id=")


def test_search_rejects_bad_parameters(client):
    assert "empty" in assert_error(client.get("/api/search", params={"q": "   "}), 400)
    # no q and no filter: nothing to search for or to list (a filter alone lists, by date)
    assert "choose a filter" in assert_error(client.get("/api/search"), 400)
    assert "limit" in assert_error(client.get("/api/search", params={"q": "x", "limit": 10**6}), 400)
    assert_error(client.get("/api/search", params={"q": "x", "offset": -1}), 422)


def test_similar_excludes_the_image_itself(client, tmp_path):
    blue = photo(tmp_path, "2_blue.png")
    body = client.get("/api/similar", params={"id": blue, "limit": 3}).json()
    ids = names(body["results"])
    assert "2_blue.png" not in ids and len(ids) == 3
    # by hand: cos(blue, purple) = 40050 / (213.6 * 227.6) = 0.824 > cos(blue, cyan) = 0.815
    assert ids[0] == "4_purple.png"
    assert "no indexed image" in assert_error(client.get("/api/similar", params={"id": "nope"}), 404)
    page2 = client.get("/api/similar", params={"id": blue, "limit": 3, "offset": 3}).json()
    assert len(page2["results"]) == 2 and page2["has_more"] is False
    assert set(names(page2["results"])).isdisjoint(ids)


def test_thumbnails_are_generated_once(client, app, tmp_path):
    cache = app.state.xmodal.thumbnails
    cyan = photo(tmp_path, "5_cyan.png")
    r1 = client.get("/api/thumbnail", params={"id": cyan})
    assert r1.status_code == 200 and r1.headers["content-type"] == "image/jpeg"
    thumb = Image.open(io.BytesIO(r1.content))
    assert thumb.format == "JPEG" and max(thumb.size) <= 256
    r, g, b = thumb.convert("RGB").getpixel((thumb.width // 2, thumb.height // 2))
    assert abs(r - 20) < 12 and abs(g - 200) < 12 and abs(b - 210) < 12
    assert cache.generated == 1
    assert client.get("/api/thumbnail", params={"id": cyan}).content == r1.content
    assert cache.generated == 1
    assert client.get("/api/thumbnail", params={"id": cyan, "size": "large"}).status_code == 200
    assert cache.generated == 2
    assert_error(client.get("/api/thumbnail", params={"id": cyan, "size": "huge"}), 400)
    assert_error(client.get("/api/thumbnail", params={"id": "../../etc/passwd"}), 404)
    outside = tmp_path / "not_indexed.png"  # a real image the index does not hold
    Image.new("RGB", (4, 4)).save(outside)
    assert_error(client.get("/api/thumbnail", params={"id": str(outside)}), 404)
    # an indexed file swapped for a huge image: refused from its header, never decoded
    Path(photo(tmp_path, "3_yellow.png")).write_bytes(png_claiming(20000, 20000))
    message = assert_error(client.get("/api/thumbnail", params={"id": photo(tmp_path,
                                                                            "3_yellow.png")}), 422)
    assert "too large" in message


# -- describe and tag -----------------------------------------------------------------------------
def test_describe_with_uploaded_captions(client):
    image = png_bytes(Image.new("RGB", (64, 48), COLOURS["red"]))
    captions = b"c1\ta blue sky\nc2\ta red square\n\nc3\ta green field\n"
    response = client.post("/api/describe",
                           files={"image": ("red.png", image, "image/png"),
                                  "captions": ("caps.txt", captions, "text/plain")},
                           data={"limit": "2"})
    body = response.json()
    assert response.status_code == 200, body
    assert body["pool"] == "upload" and body["pool_size"] == 3
    assert len(body["captions"]) == 2
    assert body["captions"][0]["id"] == "c2" and body["captions"][0]["text"] == "a red square"
    assert body["captions"][0]["score"] > body["captions"][1]["score"]
    assert body["image"] == {"width": 64, "height": 48}


def test_describe_subtracts_the_models_caption_offsets(tmp_path, built):
    """POST /api/describe ranks as `xmodal describe` does: with the model's querybank."""
    db, parts = built

    class Penalised(type(parts["model"])):  # offsets that push red captions down
        def caption_offsets(self, vecs):
            return np.where(vecs[:, 0] > 0.9, 1.0, 0.0)

    image = png_bytes(Image.new("RGB", (64, 48), COLOURS["red"]))
    captions = b"c1\ta blue sky\nc2\ta red square\n"
    app = create_app(db, reports_dir=None, thumbnail_dir=tmp_path / "thumbs",
                     **{**parts, "model": Penalised()})
    with TestClient(app) as c:
        body = c.post("/api/describe", files={"image": ("red.png", image, "image/png"),
                                              "captions": ("caps.txt", captions, "text/plain")},
                      data={"limit": "2"}).json()
    assert [r["id"] for r in body["captions"]] == ["c1", "c2"]


def test_describe_with_collection_captions(client, tmp_path):
    image = jpeg_bytes(Image.new("RGB", (40, 40), COLOURS["yellow"]))
    body = client.post("/api/describe", files={"image": ("y.jpg", image, "image/jpeg")}).json()
    assert body["pool"] == "collection" and body["pool_size"] == 6
    assert body["captions"][0] == {**body["captions"][0], "id": photo(tmp_path, "3_yellow.png"),
                                   "text": "a yellow picture", "rank": 1}


def test_tag(client):
    image = png_bytes(Image.new("RGB", (30, 30), COLOURS["green"]))
    body = client.post("/api/tag", files={"image": ("g.png", image, "image/png")},
                       data={"limit": "3"}).json()
    assert body["keywords"][0]["word"] == "green"
    assert len(body["keywords"]) == 3


def test_tag_without_a_tagger_is_503(tmp_path, built, monkeypatch):
    monkeypatch.setitem(sys.modules, "xmodal.models.tagger", None)  # import now fails
    db, parts = built
    app = create_app(db, model=parts["model"], thumbnail_dir=tmp_path / "t")
    with TestClient(app) as c:
        image = png_bytes(Image.new("RGB", (8, 8), COLOURS["green"]))
        message = assert_error(c.post("/api/tag", files={"image": ("g.png", image)}), 503)
        assert "tagging is not available" in message
        assert_still_serving(c)


def test_missing_index_is_503(tmp_path):
    with TestClient(create_app(tmp_path / "missing.db", thumbnail_dir=tmp_path / "t")) as c:
        assert "xmodal index" in assert_error(c.get("/api/search", params={"q": "a"}), 503)
        assert c.get("/api/health").json()["status"] == "ok"


# -- malformed uploads ---------------------------------------------------------------------------
def _truncated_jpeg() -> bytes:
    data = jpeg_bytes(Image.effect_noise((256, 256), 60).convert("RGB"))
    return data[: len(data) // 2]


MALFORMED = {
    "not an image": (b"this is plain text, not an image", 415),
    "truncated jpeg": (_truncated_jpeg(), 400),
    "20000x20000 png": (png_claiming(20_000, 20_000), 413),
    "8000x8000 png": (png_claiming(8_000, 8_000), 413),  # below Pillow's own bomb limit
    "empty file": (b"", 400),
}


@pytest.mark.parametrize("endpoint", ["/api/describe", "/api/tag"])
@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_uploads_get_4xx_and_server_keeps_serving(client, endpoint, case):
    data, status = MALFORMED[case]
    response = client.post(endpoint, files={"image": ("upload.jpg", data, "image/jpeg")})
    message = assert_error(response, status)
    if "png" in case:
        assert "too many pixels" in message
    assert_still_serving(client)


def test_phone_photos_big_jpegs_and_heic_are_accepted(tmp_path, built):
    """A 48-megapixel phone JPEG (over the 40 MP limit for other formats) is tagged and
    described: JPEGs decode at a reduced scale and have their own pixel limit. HEIC uploads
    (the iPhone default) are read too."""
    big = jpeg_bytes(Image.new("RGB", (8064, 6048), COLOURS["red"]))
    app = create_app(built[0], thumbnail_dir=tmp_path / "t", **built[1])
    with TestClient(app) as c:
        tags = c.post("/api/tag", files={"image": ("phone.jpg", big, "image/jpeg")})
        assert tags.status_code == 200, tags.text
        described = c.post("/api/describe", files={"image": ("phone.jpg", big)})
        assert described.status_code == 200, described.text
        buf = io.BytesIO()
        Image.new("RGB", (64, 48), COLOURS["red"]).save(buf, "HEIF", quality=90)
        heic = c.post("/api/tag", files={"image": ("iphone.heic", buf.getvalue(), "image/heic")})
        assert heic.status_code == 200, heic.text
    strict = create_app(built[0], limits=ServerLimits(max_jpeg_pixels=40_000_000),
                        thumbnail_dir=tmp_path / "t2", **built[1])
    with TestClient(strict) as c:
        message = assert_error(c.post("/api/tag", files={"image": ("phone.jpg", big)}), 413)
        assert "too many pixels (8064 x 6048)" in message and "40,000,000" in message
        assert_still_serving(c)


def test_search_under_a_folder(client, tmp_path):
    """``/api/search?under=FOLDER`` ranks only photos inside the folder; a folder without indexed
    photos is a 400 that says so."""
    folder = str((tmp_path / "photos").resolve())
    every = client.get("/api/search", params={"q": "red", "limit": 6}).json()["results"]
    inside = client.get("/api/search", params={"q": "red", "limit": 6, "under": folder})
    assert inside.status_code == 200 and inside.json()["results"] == every
    message = assert_error(client.get("/api/search", params={"q": "red", "under": "/nowhere"}),
                           400)
    assert "no indexed photo" in message


def test_empty_and_broken_request_bodies(client):
    assert "no image uploaded" in assert_error(client.post("/api/describe"), 400)
    assert_error(client.post("/api/tag", content=b"",
                             headers={"content-type": "multipart/form-data"}), 400)
    assert_error(client.post("/api/describe", content=b"--xx\r\ngarbage",
                             headers={"content-type": "multipart/form-data; boundary=xx"}), 400)
    image = png_bytes(Image.new("RGB", (8, 8), COLOURS["red"]))
    bad_caps = client.post("/api/describe", files={"image": ("r.png", image),
                                                   "captions": ("c.txt", b"\xff\xfe\x00bad")})
    assert "UTF-8" in assert_error(bad_caps, 415)
    empty_caps = client.post("/api/describe", files={"image": ("r.png", image),
                                                     "captions": ("c.txt", b"\n\n")})
    assert_error(empty_caps, 400)
    assert_still_serving(client)


def test_body_and_file_size_limits(tmp_path, built):
    limits = ServerLimits(max_body_bytes=50_000, max_image_bytes=5_000)
    app = create_app(built[0], limits=limits, thumbnail_dir=tmp_path / "t", **built[1])
    rng = np.random.default_rng(0)
    noise = Image.fromarray(rng.integers(0, 256, (200, 200, 3), dtype=np.uint8))
    with TestClient(app) as c:
        big = png_bytes(noise)  # > 50 kB of incompressible noise
        assert len(big) > 50_000
        assert "too large" in assert_error(c.post("/api/describe", files={"image": ("n.png", big)}), 413)
        medium = jpeg_bytes(noise.crop((0, 0, 80, 80)))
        assert 5_000 < len(medium) < 50_000
        assert "too large" in assert_error(c.post("/api/tag", files={"image": ("n.jpg", medium)}), 413)
        assert_still_serving(c)


def test_unexpected_library_error_is_500_json(tmp_path, parts):
    """A library bug answers 500 with a JSON message; other endpoints keep working."""
    class Broken:
        def search(self, text, k, offset=0):
            raise RuntimeError("boom")

        def stats(self):
            return {"n_images": 0}

    app = create_app(tmp_path / "db", index=Broken(), model=parts["model"], thumbnail_dir=tmp_path)
    with TestClient(app, raise_server_exceptions=False) as c:
        assert "RuntimeError" in assert_error(c.get("/api/search", params={"q": "x"}), 500)
        assert c.get("/api/stats").json() == {"n_images": 0}


# -- reports ----------------------------------------------------------------------------------------
def test_reports_list_and_fetch(client):
    listed = client.get("/api/reports").json()["reports"]
    assert [r["name"] for r in listed] == ["a", "sub/b"]
    assert listed[0]["model"] == "random" and listed[0]["directions"] == ["i2t", "t2i"]
    assert listed[1]["has_curves"] is True and listed[0]["has_curves"] is False
    fetched = client.get("/api/reports/sub/b").json()
    assert fetched["name"] == "sub/b"
    assert fetched["directions"] == REPORT_B["directions"] and fetched["curves"] == REPORT_B["curves"]
    assert_error(client.get("/api/reports/not_a_report"), 404)
    assert_error(client.get("/api/reports/broken"), 404)
    assert_error(client.get("/api/reports/..%2Fsecret"), 404)
    assert_error(client.get("/api/reports/missing"), 404)


def test_describe_without_collection_captions_says_what_to_do(tmp_path, parts):
    class NoCaptions:
        def captions(self):
            return []

    app = create_app(tmp_path / "db", index=NoCaptions(), model=parts["model"], thumbnail_dir=tmp_path)
    with TestClient(app) as c:
        image = png_bytes(Image.new("RGB", (8, 8), COLOURS["red"]))
        message = assert_error(c.post("/api/describe", files={"image": ("r.png", image)}), 400)
        assert "upload a caption file" in message


def test_serve_command_help():
    from typer.testing import CliRunner

    from xmodal.cli import app as cli

    result = CliRunner().invoke(cli, ["serve", "--help"])
    assert result.exit_code == 0
    for option in ("--db", "--host", "--port", "--reports"):
        assert option in result.output


def test_truncated_jpeg_refused_even_if_pillow_is_relaxed(client, monkeypatch):
    from PIL import ImageFile

    monkeypatch.setattr(ImageFile, "LOAD_TRUNCATED_IMAGES", True)  # as some libraries do
    response = client.post("/api/describe", files={"image": ("t.jpg", _truncated_jpeg())})
    assert "truncated" in assert_error(response, 400)
    assert_still_serving(client)


def test_a_slow_describe_does_not_stall_searches(tmp_path, built, reports_dir):
    """A describe against a large uploaded caption file runs off the library thread: a search
    sent while it works answers at once (issue: 31.7 s behind a 5,000-line describe)."""
    import threading
    import time

    import httpx
    from live_server import live_server
    from test_server_fakes import FakeModel

    from xmodal.server import create_app

    class SlowModel(FakeModel):
        def embed_texts(self, texts, *, progress=False):
            if len(texts) > 100:
                time.sleep(3.0)  # a long caption pool
            return super().embed_texts(texts)

    db, parts = built
    app = create_app(db, reports_dir=reports_dir, thumbnail_dir=tmp_path / "thumbs",
                     model=SlowModel(), tagger=parts["tagger"])
    photo = png_bytes(Image.new("RGB", (16, 16), (200, 10, 10)))
    pool = "\n".join(f"caption number {n}" for n in range(500)).encode()
    with live_server(app) as url:
        httpx.get(url + "/api/search", params={"q": "warm"}, timeout=30)
        done = {}

        def describe():
            r = httpx.post(url + "/api/describe", files={"image": ("p.png", photo),
                                                         "captions": ("c.txt", pool)},
                           timeout=60)
            done["describe"] = (r.status_code, time.monotonic())

        t = threading.Thread(target=describe)
        t.start()
        time.sleep(0.5)  # the describe is now embedding its pool
        t0 = time.monotonic()
        r = httpx.get(url + "/api/search", params={"q": "a red car"}, timeout=30)
        searched = time.monotonic()
        t.join()
    assert r.status_code == 200 and r.json()["results"]
    assert searched - t0 < 1.5, searched - t0
    assert done["describe"][0] == 200 and done["describe"][1] > searched


def test_requests_beyond_the_limit_get_a_json_503():
    import asyncio

    import httpx

    from xmodal.server.body_limit import ConcurrencyLimit

    gate = asyncio.Event()

    async def slow_app(scope, receive, send):
        await gate.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    limited = ConcurrencyLimit(slow_app, max_requests=2)

    async def scenario():
        transport = httpx.ASGITransport(app=limited)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            first = [asyncio.create_task(c.get("/")) for _ in range(2)]
            await asyncio.sleep(0.05)
            busy = await c.get("/")
            gate.set()
            done = await asyncio.gather(*first)
            after = await c.get("/")
        return busy, done, after

    busy, done, after = asyncio.run(scenario())
    assert busy.status_code == 503 and busy.headers["retry-after"] == "1"
    assert busy.json()["error"]["status"] == 503
    assert [r.status_code for r in done] == [200, 200] and after.status_code == 200
    assert limited.in_flight == 0
