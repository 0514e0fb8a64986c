"""Photo-index rows made up for benchmarks: many photos without indexing them."""

from __future__ import annotations

import numpy as np


def insert_vectors(conn, first_id: int, first_name: int, vecs: np.ndarray, mid: str) -> None:
    """Rows ``first_id, ...`` of an index: a made-up photo path each (numbered from
    ``first_name``) with its vector under model id ``mid``."""
    n = range(len(vecs))
    conn.executemany(
        "INSERT INTO files(id, path, size, mtime_ns, sha1, width, height, status, reason,"
        " updated_at) VALUES(?, ?, 1, 1, NULL, 640, 480, 'ok', NULL, 0)",
        [(first_id + i, f"/photos/{(first_name + i) // 1000:04d}/img{first_name + i:07d}.jpg")
         for i in n])
    conn.executemany("INSERT INTO vectors(file_id, model, vec) VALUES(?, ?, ?)",
                     [(first_id + i, mid, vecs[i].tobytes()) for i in n])
