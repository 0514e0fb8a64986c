"""What ``xmodal embed`` reads: a folder tree, a list file or a Parquet of paths, local or remote.

SRC is a local folder (walked recursively, as ``xmodal index`` does), a ``.txt`` file with one
path or URI per line, a ``.parquet`` file with a ``path`` column, or a URI with a scheme
(``s3://bucket/photos``, ``gs://...``) that pyarrow's file systems open; only local paths are
tested here. Images are read as bytes through the same file systems.
"""

from __future__ import annotations

import os
from pathlib import Path

from xmodal.data.folder import IMAGE_EXTENSIONS
from xmodal.errors import XmodalError
from xmodal.index.scan import read_bytes, walk_images


def is_uri(path: str) -> bool:
    return "://" in path and not path.startswith("file://")


def _remote_listing(uri: str) -> list[str]:
    import pyarrow.fs as pafs

    try:
        fs, root = pafs.FileSystem.from_uri(uri)
        infos = fs.get_file_info(pafs.FileSelector(root, recursive=True))
    except Exception as exc:  # noqa: BLE001 - pyarrow raises assorted errors per file system
        raise XmodalError(f"cannot list {uri}: {exc}") from None
    scheme = uri.split("://", 1)[0]
    return sorted(f"{scheme}://{i.path}" for i in infos
                  if i.type == pafs.FileType.File and Path(i.path).suffix.lower()
                  in IMAGE_EXTENSIONS)


def list_inputs(src: str | os.PathLike) -> list[str]:
    """The image paths or URIs of SRC, sorted; XmodalError when SRC holds no image."""
    text = str(src)
    if is_uri(text):
        paths = _remote_listing(text)
    else:
        p = Path(text.removeprefix("file://")).expanduser()
        if p.is_dir():
            paths = [f.path for f in walk_images(p)[0]]
        elif p.is_file() and p.suffix.lower() == ".parquet":
            paths = _parquet_paths(p)
        elif p.is_file() and p.suffix.lower() in (".txt", ".lst", ".list"):
            lines = p.read_text(encoding="utf-8").splitlines()
            paths = [ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")]
        elif p.is_file():
            raise XmodalError(f"SRC {src}: expected a folder, a .txt list of paths or a .parquet "
                              "file with a 'path' column")
        else:
            raise XmodalError(f"SRC {src} does not exist")
        paths = [x if is_uri(x) else os.path.abspath(x) for x in paths]
    paths = sorted(dict.fromkeys(paths))  # a path listed twice is embedded once
    if not paths:
        kinds = ", ".join(sorted(IMAGE_EXTENSIONS))
        raise XmodalError(f"SRC {src} holds no images (looked for {kinds})")
    return paths


def _parquet_paths(p: Path) -> list[str]:
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(p, columns=["path"])
    except Exception as exc:  # noqa: BLE001
        raise XmodalError(f"cannot read the 'path' column of {p}: {exc}") from None
    return [x for x in table["path"].to_pylist() if x]


def read_source(path: str) -> tuple[bytes | None, str | None]:
    """(content, None) or (None, reason) for a local path or a URI."""
    if not is_uri(path):
        return read_bytes(path)
    import pyarrow.fs as pafs

    try:
        fs, inner = pafs.FileSystem.from_uri(path)
        with fs.open_input_stream(inner) as f:
            data = f.read()
    except Exception as exc:  # noqa: BLE001
        return None, f"cannot read: {exc}"
    return (data, None) if data else (None, "empty file")
