"""Models: scikit-learn style estimators that produce score matrices S[n_images, n_texts]."""

from xmodal.models.registry import get_scorer, list_models

__all__ = ["get_scorer", "list_models"]
