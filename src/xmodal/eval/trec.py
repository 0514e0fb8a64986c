"""Ranked lists in TREC format, for ranx, trec_eval and pytrec_eval, and back.

:func:`export_trec` writes, per direction, ``DIR/<direction>.run`` (``qid Q0 docid rank score
tag``, the ``depth`` best items of each query by descending score) and ``DIR/<direction>.qrels``
(``qid 0 docid 1`` for each relevant pair). For i2t the queries are image ids and the documents
caption ids; for t2i the other way round. Tied scores are listed with the relevant items last,
xmodal's convention (a tie counts against the query), but readers re-sort by score: keep scores
free of ties (or the full depth) when metrics must agree exactly.

:class:`RunFileScorer` (``xmodal eval -m run:FILE``) turns another system's ranked list into the
score matrices of a protocol: ``FILE`` is a TREC run (its query ids tell the direction) or a
folder with ``i2t.run`` / ``t2i.run`` (what :func:`export_trec` writes). Items a query's list
leaves out rank below all it lists (tied, so they count as last); a query the run leaves out
ranks everything tied (a miss).

Ids containing whitespace or ``%`` are percent-encoded (``%20``, ``%09``, ``%25``) in both
directions, since TREC columns are whitespace-separated.
"""

from __future__ import annotations

import os
from pathlib import Path
import numpy as np

from xmodal.errors import XmodalError

FORMATS = ("trec",)


def encode_id(x: str) -> str:
    return (str(x).replace("%", "%25").replace(" ", "%20").replace("\t", "%09")
            .replace("\n", "%0A"))


def decode_id(x: str) -> str:
    return x.replace("%0A", "\n").replace("%09", "\t").replace("%20", " ").replace("%25", "%")


def export_trec(protocol, scores: dict[str, np.ndarray], out: str | os.PathLike,
                tag: str = "xmodal", depth: int | None = 1000) -> dict[str, dict[str, str]]:
    """Write the run and qrels of every direction under ``out``; returns their paths.

    ``depth``: items per query in the run (None or 0: all of them)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tag = encode_id(tag) or "xmodal"
    written: dict[str, dict[str, str]] = {}
    for name, d in protocol.directions.items():
        s = np.asarray(d.query_scores(scores[name]), dtype=np.float64)
        rel = d.query_relevance
        queries = d.image_ids if name == "i2t" else d.text_ids
        docs = d.text_ids if name == "i2t" else d.image_ids
        qids = [encode_id(q) for q in queries]
        dids = np.array([encode_id(x) for x in docs], dtype=object)
        k = s.shape[1] if not depth else min(depth, s.shape[1])
        run_path, qrels_path = out / f"{name}.run", out / f"{name}.qrels"
        with open(run_path, "w", encoding="utf-8") as run, \
                open(qrels_path, "w", encoding="utf-8") as qrels:
            for q in range(s.shape[0]):
                row = s[q]
                pos = rel.indices[rel.indptr[q]:rel.indptr[q + 1]]
                relevant = np.zeros(len(row), dtype=bool)
                relevant[pos] = True
                order = np.lexsort((relevant, -row))[:k]  # by score, relevant last on ties
                run.writelines(f"{qids[q]} Q0 {dids[j]} {r} {float(row[j])!r} {tag}\n"
                               for r, j in enumerate(order, start=1))
                qrels.writelines(f"{qids[q]} 0 {dids[j]} 1\n" for j in sorted(pos))
        written[name] = {"run": str(run_path), "qrels": str(qrels_path)}
    return written


def read_trec_run(path: str | os.PathLike) -> dict[str, dict[str, float]]:
    """``{query id: {doc id: score}}`` from a TREC run file (6 columns per line)."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise XmodalError(f"cannot read the run file {path}: {exc}") from None
    out: dict[str, dict[str, float]] = {}
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 6:
            raise XmodalError(f"{path}:{lineno}: expected a TREC run line 'qid Q0 docid rank "
                              f"score tag' (6 columns), got {len(parts)}")
        try:
            score = float(parts[4])
        except ValueError:
            raise XmodalError(f"{path}:{lineno}: the score {parts[4]!r} is not a number") from None
        out.setdefault(decode_id(parts[0]), {})[decode_id(parts[2])] = score
    if not out:
        raise XmodalError(f"{path}: the run file is empty")
    return out


class RunFileScorer:
    """Scores of a protocol direction from another system's ranked list (see the module)."""

    per_direction = True

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path).expanduser()
        if not self.path.exists():
            raise XmodalError(f"run file not found: {self.path} (a TREC run, or a folder with "
                              "i2t.run / t2i.run from xmodal eval --export-run trec DIR)")
        self._runs: dict[Path, dict[str, dict[str, float]]] = {}
        self.notes: list[str] = []

    def _run_for(self, direction: str) -> tuple[Path, dict[str, dict[str, float]]]:
        path = self.path / f"{direction}.run" if self.path.is_dir() else self.path
        if not path.is_file():
            raise XmodalError(f"{self.path} has no {direction}.run (the {direction} ranked list)")
        if path not in self._runs:
            self._runs[path] = read_trec_run(path)
        return path, self._runs[path]

    def __call__(self, protocol, d, seed: int = 0) -> np.ndarray:
        path, run = self._run_for(d.name)
        queries = d.image_ids if d.name == "i2t" else d.text_ids
        docs = d.text_ids if d.name == "i2t" else d.image_ids
        qpos = {q: i for i, q in enumerate(queries)}
        dpos = {x: i for i, x in enumerate(docs)}
        mine = [q for q in run if q in qpos]
        if not mine:
            raise XmodalError(f"{path}: none of its {len(run):,} query ids is a {d.name} query of "
                              f"{protocol.name} (e.g. {next(iter(run))!r}; expected ids like "
                              f"{queries[0]!r})")
        values = [v for q in mine for v in run[q].values()]
        floor = (min(values) if values else 0.0) - 1.0
        s = np.full((len(queries), len(docs)), floor, dtype=np.float64)
        unknown: list[str] = []
        for q in mine:
            row = s[qpos[q]]
            for doc, score in run[q].items():
                j = dpos.get(doc)
                if j is None:
                    unknown.append(doc)
                else:
                    row[j] = score
        if unknown:
            raise XmodalError(f"{path}: {len(unknown):,} ranked items are not in the {d.name} "
                              f"gallery of {protocol.name} (e.g. {unknown[0]!r}; expected ids "
                              f"like {docs[0]!r})")
        if len(mine) < len(queries):
            self.notes.append(f"{d.name}: the run ranks {len(mine):,} of the {len(queries):,} "
                              "queries; the others count as misses")
        return s if d.name == "i2t" else s.T

