"""Property tests of the scan/skip logic: any bytes give an image or a reason, never a crash."""

from __future__ import annotations

import io

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from PIL import Image  # noqa: E402

from xmodal.index.scan import MAX_SIDE, load_checked  # noqa: E402

MAGIC = [b"", b"\xff\xd8\xff\xe0", b"\x89PNG\r\n\x1a\n", b"GIF89a", b"BM", b"RIFF"]


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(MAGIC), st.binary(max_size=600))
def test_any_bytes_give_an_image_or_a_reason(magic, body):
    image, reason = load_checked("file.bin", magic + body)
    assert (image is None) != (reason is None)
    if reason is not None:
        assert isinstance(reason, str) and reason.strip()


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 900), st.integers(1, 900), st.sampled_from(["PNG", "JPEG", "BMP"]),
       st.integers(0, 100))
def test_real_images_load_shrunk_with_their_size_recorded(w, h, fmt, cut):
    buf = io.BytesIO()
    Image.new("RGB", (w, h), (w % 256, h % 256, 90)).save(buf, fmt)
    data = buf.getvalue()
    image, reason = load_checked(f"x.{fmt.lower()}", data)
    assert reason is None and image.mode == "RGB"
    assert image.info["original_size"] == (w, h) and max(image.size) <= MAX_SIDE
    # the same file cut short is refused with a reason, never loaded half-decoded
    if cut and len(data) > 200:
        image, reason = load_checked("x", data[: len(data) * cut // 200])
        assert image is None and reason
