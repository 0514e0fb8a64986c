"""API routers, one module per job: search (search, similar, thumbnails), annotate (describe, tag),
meta (health, statistics) and reports (saved evaluation reports)."""
