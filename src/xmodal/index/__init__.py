"""The photo collection a user searches: SQLite as the source of truth, FAISS derived from it.

from xmodal.factory import load_embedding_model
from xmodal.index import PhotoIndex
index = PhotoIndex("photos.db", load_embedding_model())   # the index receives its model
stats = index.update("~/Pictures")       # incremental: new, changed, deleted files
for hit in index.search("a cat on a sofa", k=5):
    print(hit.path, hit.score)
"""

from xmodal.index.photo_index import PhotoIndex, SearchResult, UpdateStats, default_db_path

__all__ = ["PhotoIndex", "SearchResult", "UpdateStats", "default_db_path"]
