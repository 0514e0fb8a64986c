"""Scale out: embed millions of images on a Ray cluster into Parquet shards (``embed``), build a
FAISS index over the shards with its inverted lists merged on disk (``ann_build``), and search it
memory-mapped (``ann_search``). See docs/scale.md."""
