"""Models: scikit-learn style estimators that produce score matrices S[n_images, n_texts].

Saved models are directories in one format (:mod:`xmodal.models.modeldir`); models with a joint
space satisfy :class:`xmodal.models.embedding.EmbeddingModel`. Specs (names, directories,
``openclip:``, ``python:``) are resolved by :mod:`xmodal.factory`.
"""
