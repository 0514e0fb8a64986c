"""RAW camera files through LibRaw (rawpy), on a DNG built here byte by byte.

No real RAW file is shipped or downloaded: ``make_dng`` writes a small but complete DNG (TIFF
header, IFD0 holding a 64 x 48 16-bit RGGB Bayer image with the DNG colour tags, an EXIF
sub-IFD with DateTimeOriginal and OffsetTimeOriginal, a GPS IFD and, optionally, a SubIFD with
a JPEG preview) that LibRaw opens and develops. Its left half is red and its right half blue,
so the decoded picture's layout (and turning it upright) can be checked.
"""

from __future__ import annotations

import io
import random
import struct
from pathlib import Path

import numpy as np
import pytest
import rawpy
from PIL import Image

from tests.fake_models import ColourModel
from xmodal.index import PhotoIndex
from xmodal.index.metadata import read_metadata  # noqa: E402
from xmodal.index.scan import load_checked  # noqa: E402

W, H = 64, 48  # the Bayer image
PREVIEW = (160, 120)  # the embedded JPEG: a different size, so the path taken is visible
TAKEN, TAKEN_ISO, OFFSET = "2021:07:04 15:30:45", "2021-07-04T15:30:45", "+02:00"
MAKE, MODEL = "Testmaker", "Testmaker TM-1"
EIFFEL = (48.8584, 2.2945)
RED, BLUE = (0.8, 0.1, 0.1), (0.1, 0.1, 0.8)  # linear camera RGB, 0..1

# TIFF field types
BYTE, ASCII, SHORT, LONG, RATIONAL, UNDEFINED, SRATIONAL = 1, 2, 3, 4, 5, 7, 10
# linear sRGB from XYZ (D65): as the DNG ColorMatrix1, camera RGB is sRGB's own primaries
XYZ_TO_CAMERA = ((3.2406, -1.5372, -0.4986), (-0.9689, 1.8758, 0.0415),
                 (0.0557, -0.2040, 1.0570))


# ---------------------------------------------------------------------------------------------
# a minimal little-endian TIFF / DNG writer


def _field(kind: int, value) -> tuple[bytes, int]:
    """(packed value, count) of one IFD entry."""
    if kind == ASCII:
        raw = value.encode("ascii") + b"\0"
        return raw, len(raw)
    if isinstance(value, bytes):
        return value, len(value)
    if kind in (RATIONAL, SRATIONAL):
        code = "ii" if kind == SRATIONAL else "II"
        return struct.pack("<" + code * len(value), *(n for pair in value for n in pair)), \
            len(value)
    code = {BYTE: "B", SHORT: "H", LONG: "I"}[kind]
    return struct.pack(f"<{len(value)}{code}", *value), len(value)


def _ifd(entries: dict[int, tuple[int, object]], at: int) -> bytes:
    """One IFD written at file offset ``at``, its values longer than 4 bytes right after it."""
    fixed = 2 + 12 * len(entries) + 4
    table, tail = struct.pack("<H", len(entries)), b""
    for tag in sorted(entries):  # TIFF wants ascending tags
        raw, count = _field(*entries[tag])
        if len(raw) <= 4:
            inline = raw.ljust(4, b"\0")
        else:
            inline = struct.pack("<I", at + fixed + len(tail))
            tail += raw + b"\0" * (len(raw) % 2)  # values start on word boundaries
        table += struct.pack("<HHI", tag, entries[tag][0], count) + inline
    return table + struct.pack("<I", 0) + tail


def _tiff(blobs: dict[str, bytes], ifds: list) -> bytes:
    """A TIFF file: the data ``blobs`` first, then the IFDs ``[(name, entries(offsets))]``,
    IFD0 first in the list. An IFD's size does not depend on the offsets it points to, so
    every offset is known before anything is written."""
    offsets, pos = {}, 8
    for name, blob in blobs.items():
        offsets[name], pos = pos, pos + len(blob) + len(blob) % 2
    placeholder = dict.fromkeys((name for name, _ in ifds), 0) | offsets
    for name, entries in ifds:
        offsets[name], pos = pos, pos + len(_ifd(entries(placeholder), 0))
    out = bytearray(b"II*\0" + struct.pack("<I", offsets[ifds[0][0]]))
    for blob in blobs.values():
        out += blob + b"\0" * (len(blob) % 2)
    for name, entries in ifds:
        assert len(out) == offsets[name]
        out += _ifd(entries(offsets), offsets[name])
    return bytes(out)


def bayer(left=RED, right=BLUE, white=4095) -> bytes:
    """16-bit RGGB mosaic of a picture whose left half is ``left`` and right half ``right``."""
    rgb = np.empty((H, W, 3))
    rgb[:, : W // 2], rgb[:, W // 2:] = left, right
    mosaic = np.empty((H, W))
    mosaic[0::2, 0::2] = rgb[0::2, 0::2, 0]  # R
    mosaic[0::2, 1::2] = rgb[0::2, 1::2, 1]  # G
    mosaic[1::2, 0::2] = rgb[1::2, 0::2, 1]  # G
    mosaic[1::2, 1::2] = rgb[1::2, 1::2, 2]  # B
    return (mosaic * white).round().astype("<u2").tobytes()


def jpeg_preview(left=(200, 40, 40), right=(40, 40, 200)) -> bytes:
    im = Image.new("RGB", PREVIEW, left)
    im.paste(right, (PREVIEW[0] // 2, 0, PREVIEW[0], PREVIEW[1]))
    out = io.BytesIO()
    im.save(out, "JPEG", quality=90)
    return out.getvalue()


def _dms(x: float) -> list[tuple[int, int]]:
    x = abs(x)
    d = int(x)
    m = int((x - d) * 60)
    return [(d, 1), (m, 1), (round((x - d - m / 60) * 3600 * 1000), 1000)]


def make_dng(path: Path, *, preview: bytes | None = None, orientation: int = 1,
             left=RED, right=BLUE) -> Path:
    """Write a DNG 1.4 file: IFD0 = the Bayer image and the DNG tags, EXIF and GPS sub-IFDs,
    and with ``preview`` a SubIFD (NewSubFileType 1) holding that JPEG."""
    blobs = {"raw": bayer(left, right)}
    if preview is not None:
        blobs["preview"] = preview

    def ifd0(at):
        entries = {
            254: (LONG, [0]),  # NewSubFileType: the main image
            256: (LONG, [W]), 257: (LONG, [H]), 258: (SHORT, [16]),
            259: (SHORT, [1]),  # uncompressed
            262: (SHORT, [32803]),  # PhotometricInterpretation: CFA
            271: (ASCII, MAKE), 272: (ASCII, MODEL), 274: (SHORT, [orientation]),
            273: (LONG, [at["raw"]]), 277: (SHORT, [1]), 278: (LONG, [H]),
            279: (LONG, [len(blobs["raw"])]), 284: (SHORT, [1]),
            33421: (SHORT, [2, 2]),  # CFARepeatPatternDim
            33422: (BYTE, [0, 1, 1, 2]),  # CFAPattern: RGGB
            34665: (LONG, [at["exif"]]), 34853: (LONG, [at["gps"]]),
            50706: (BYTE, [1, 4, 0, 0]), 50707: (BYTE, [1, 1, 0, 0]),  # DNG (backward) version
            50708: (ASCII, MODEL),  # UniqueCameraModel
            50710: (BYTE, [0, 1, 2]), 50711: (SHORT, [1]),  # CFAPlaneColor, CFALayout
            50714: (LONG, [0]), 50717: (LONG, [4095]),  # BlackLevel, WhiteLevel
            50721: (SRATIONAL, [(round(v * 10000), 10000) for row in XYZ_TO_CAMERA
                                for v in row]),  # ColorMatrix1
            50728: (RATIONAL, [(1, 1)] * 3),  # AsShotNeutral: white balance 1, 1, 1
            50778: (SHORT, [21]),  # CalibrationIlluminant1: D65
        }
        if preview is not None:
            entries[330] = (LONG, [at["preview_ifd"]])  # SubIFDs
        return entries

    def exif(at):
        return {36864: (UNDEFINED, b"0231"), 36867: (ASCII, TAKEN), 36881: (ASCII, OFFSET)}

    def gps(at):
        return {0: (BYTE, [2, 3, 0, 0]), 1: (ASCII, "N"), 2: (RATIONAL, _dms(EIFFEL[0])),
                3: (ASCII, "E"), 4: (RATIONAL, _dms(EIFFEL[1]))}

    def preview_ifd(at):
        return {254: (LONG, [1]),  # NewSubFileType: a reduced-resolution copy
                256: (LONG, [PREVIEW[0]]), 257: (LONG, [PREVIEW[1]]),
                258: (SHORT, [8, 8, 8]), 259: (SHORT, [7]),  # JPEG
                262: (SHORT, [6]), 273: (LONG, [at["preview"]]), 277: (SHORT, [3]),
                278: (LONG, [PREVIEW[1]]), 279: (LONG, [len(preview)]), 284: (SHORT, [1])}

    ifds = [("ifd0", ifd0), ("exif", exif), ("gps", gps)]
    if preview is not None:
        ifds.append(("preview_ifd", preview_ifd))
    path.write_bytes(_tiff(blobs, ifds))
    return path


def halves(image: Image.Image) -> dict[str, np.ndarray]:
    """Mean RGB of each half of an image: left, right, top, bottom."""
    a = np.asarray(image.convert("RGB"), dtype=np.float64)
    h, w = a.shape[:2]
    parts = {"left": a[:, : w // 2], "right": a[:, w // 2:],
             "top": a[: h // 2], "bottom": a[h // 2:]}
    return {k: v.reshape(-1, 3).mean(0) for k, v in parts.items()}


def redder(a: np.ndarray, b: np.ndarray) -> bool:
    """``a`` is clearly red-ish and ``b`` clearly blue-ish (channel difference over 100)."""
    return a[0] - a[2] > 100 and b[2] - b[0] > 100


# ---------------------------------------------------------------------------------------------
# the file itself


def test_libraw_reads_the_built_dng(tmp_path):
    """The fixture is a real DNG to LibRaw: Bayer pattern, date, and a development whose halves
    keep their colours; with a preview, LibRaw finds the JPEG."""
    plain = make_dng(tmp_path / "plain.dng")
    with rawpy.imread(str(plain)) as raw:
        assert (raw.sizes.raw_width, raw.sizes.raw_height, raw.sizes.flip) == (W, H, 0)
        assert raw.color_desc == b"RGBG" and raw.raw_pattern.tolist() == [[0, 1], [3, 2]]
        assert raw.other.timestamp.isoformat() == TAKEN_ISO
        rgb = raw.postprocess(half_size=True, use_camera_wb=True)
        with pytest.raises(rawpy.LibRawNoThumbnailError):
            raw.extract_thumb()
    assert rgb.shape == (H // 2, W // 2, 3)
    parts = halves(Image.fromarray(rgb))
    assert redder(parts["left"], parts["right"])
    with rawpy.imread(str(make_dng(tmp_path / "preview.dng", preview=jpeg_preview()))) as raw:
        thumb = raw.extract_thumb()
    assert thumb.format == rawpy.ThumbFormat.JPEG
    assert Image.open(io.BytesIO(thumb.data)).size == PREVIEW


# ---------------------------------------------------------------------------------------------
# decoding: load_checked


def test_load_checked_develops_a_raw_without_preview(tmp_path):
    """No embedded preview: raw_preview falls back to LibRaw's half-size development."""
    image, reason = load_checked(str(make_dng(tmp_path / "a.dng")))
    assert reason is None and image is not None and image.mode == "RGB"
    assert image.size == (W // 2, H // 2)  # half-size
    assert image.info["original_size"] == (W, H)  # the photo's size is the sensor's
    parts = halves(image)
    assert redder(parts["left"], parts["right"]), parts
    # the halves differ left to right only: nothing turned or mirrored
    assert np.abs(parts["top"] - parts["bottom"]).max() < 10


def test_load_checked_uses_the_embedded_jpeg_preview(tmp_path):
    image, reason = load_checked(str(make_dng(tmp_path / "a.dng", preview=jpeg_preview())))
    assert reason is None and image.mode == "RGB"
    assert image.size == PREVIEW  # the preview is decoded, not the Bayer data
    assert image.info["original_size"] == (W, H)  # but the photo's size is the sensor's
    parts = halves(image)
    assert redder(parts["left"], parts["right"]), parts


@pytest.mark.parametrize("orientation, first, second", [
    (6, "top", "bottom"),  # turned right to view: the left half ends up on top
    (3, "right", "left"),  # upside down: left and right swap
])
def test_embedded_preview_is_turned_upright(tmp_path, orientation, first, second):
    path = make_dng(tmp_path / "a.dng", preview=jpeg_preview(), orientation=orientation)
    image, _ = load_checked(str(path))
    expected = PREVIEW[::-1] if orientation == 6 else PREVIEW
    assert image.size == expected
    assert image.info["original_size"] == ((H, W) if orientation == 6 else (W, H))
    parts = halves(image)
    assert redder(parts[first], parts[second]), parts


@pytest.mark.parametrize("orientation, first, second", [(6, "top", "bottom"),
                                                         (3, "right", "left")])
def test_developed_raw_is_turned_upright(tmp_path, orientation, first, second):
    image, _ = load_checked(str(make_dng(tmp_path / "a.dng", orientation=orientation)))
    expected = (H // 2, W // 2) if orientation == 6 else (W // 2, H // 2)
    assert image.size == expected
    parts = halves(image)
    assert redder(parts[first], parts[second]), parts


# ---------------------------------------------------------------------------------------------
# metadata: read_metadata


def test_raw_date_without_preview(tmp_path):
    """The DNG's IFD0 is Bayer data, which Pillow cannot open as an image, and there is no
    preview: the EXIF sub-IFD is read from the TIFF structure itself."""
    meta = read_metadata(str(make_dng(tmp_path / "a.dng")), mtime_ns=0, geocode=False)
    assert (meta.taken_at, meta.date_source) == (TAKEN_ISO, "exif")  # not the mtime (1970)


def test_raw_metadata_through_the_preview(tmp_path):
    """With a JPEG preview, LibRaw's extract_thumb hands back the JPEG with an EXIF header of
    its own making (date, make, a model with the make removed, GPS, orientation): read as
    "exif". LibRaw writes no OffsetTimeOriginal, so the UTC offset is not asserted here."""
    path = make_dng(tmp_path / "a.dng", preview=jpeg_preview(), orientation=6)
    meta = read_metadata(str(path), mtime_ns=0, geocode=False)
    assert (meta.taken_at, meta.date_source) == (TAKEN_ISO, "exif")
    assert meta.camera_make == MAKE and meta.camera == MODEL
    assert meta.orientation == 6
    assert meta.lat == pytest.approx(EIFFEL[0], abs=1e-4)
    assert meta.lon == pytest.approx(EIFFEL[1], abs=1e-4)


@pytest.mark.parametrize("with_preview", [False, True])
def test_raw_metadata_from_the_dng_itself(tmp_path, with_preview):
    path = make_dng(tmp_path / "a.dng", preview=jpeg_preview() if with_preview else None)
    meta = read_metadata(str(path), mtime_ns=0, geocode=False)
    assert (meta.taken_at, meta.utc_offset, meta.date_source) == (TAKEN_ISO, OFFSET, "exif")
    assert (meta.camera_make, meta.camera_model) == (MAKE, MODEL)
    assert meta.lat == pytest.approx(EIFFEL[0], abs=1e-4)
    assert meta.lon == pytest.approx(EIFFEL[1], abs=1e-4)


# ---------------------------------------------------------------------------------------------
# indexing


def test_index_a_folder_with_a_dng(tmp_path):
    photos = tmp_path / "photos"
    photos.mkdir()
    make_dng(photos / "camera.dng", left=RED, right=RED)  # red all over, developed by LibRaw
    Image.new("RGB", (40, 30), (20, 20, 230)).save(photos / "sky.png")
    index = PhotoIndex(tmp_path / "p.db", model=ColourModel())
    stats = index.update(photos, progress=False)
    assert (stats.added, stats.skipped) == (2, 0), index.skipped()
    hit = index.search("red", 1)[0]
    assert Path(hit.path).name == "camera.dng"
    assert hit.taken_at == TAKEN_ISO and hit.date_source in ("raw", "exif")
    assert (hit.width, hit.height) == (W, H)  # the sensor's size (was the development's)
    assert Path(index.search("blue", 1)[0].path).name == "sky.png"
    again = index.update(photos, progress=False)
    assert (again.added, again.unchanged) == (0, 2)


def test_a_dng_reports_the_sensors_size_not_its_previews(tmp_path):
    """A DNG used to report its embedded preview's size (160 x 120 here) as the photo's."""
    photos = tmp_path / "photos"
    photos.mkdir()
    make_dng(photos / "turned.dng", preview=jpeg_preview(), orientation=6)
    index = PhotoIndex(tmp_path / "p.db", model=ColourModel())
    assert index.update(photos, progress=False).added == 1
    hit = index.search("red", 1)[0]
    assert (hit.width, hit.height) == (H, W)  # the sensor's 64 x 48, turned upright


@pytest.mark.filterwarnings("ignore:Corrupt EXIF data")  # Pillow on the cut DNG
def test_corrupt_raw_is_skipped_with_a_reason(tmp_path):
    photos = tmp_path / "photos"
    photos.mkdir()
    (photos / "x.nef").write_bytes(random.Random(7).randbytes(4096))
    dng = make_dng(tmp_path / "whole.dng").read_bytes()
    (photos / "cut.dng").write_bytes(dng[: len(dng) // 2])  # Bayer data cut short
    make_dng(photos / "good.dng")
    for name in ("x.nef", "cut.dng"):
        image, reason = load_checked(str(photos / name))
        assert image is None and reason
        meta = read_metadata(str(photos / name), mtime_ns=0, geocode=False)
        assert meta.date_source == "mtime"
    index = PhotoIndex(tmp_path / "p.db", model=ColourModel())
    stats = index.update(photos, progress=False)
    assert (stats.added, stats.skipped) == (1, 2)
    reasons = dict(index.skipped())
    assert set(map(lambda p: Path(p).name, reasons)) == {"x.nef", "cut.dng"}
    assert all(r and "\n" not in r for r in reasons.values())
