"""The photo collection a user searches: SQLite as the source of truth, FAISS derived from it.

from xmodal.factory import load_embedding_model
from xmodal.index import PhotoIndex
index = PhotoIndex("photos.db", load_embedding_model())   # the index receives its model
stats = index.update("~/Pictures")       # incremental: new, changed, deleted files
for hit in index.search("a cat on a sofa", k=5):
    print(hit.path, hit.score)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["PhotoIndex", "SearchResult", "UpdateStats", "default_db_path"]

if TYPE_CHECKING:
    from xmodal.index.photo_index import PhotoIndex, SearchResult, UpdateStats, default_db_path


def __getattr__(name: str) -> Any:
    """The package's names load on first use: the CLI builds its filter options from
    xmodal.index.filters without loading the photo index (numpy, Pillow, SQLite, FAISS)."""
    if name in __all__:
        from xmodal.index import photo_index

        return getattr(photo_index, name)
    raise AttributeError(f"module 'xmodal.index' has no attribute {name!r}")
