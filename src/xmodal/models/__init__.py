"""Models: scikit-learn style estimators that produce score matrices S[n_images, n_texts].

``load(path)`` opens any saved model directory (:mod:`xmodal.models.modeldir`).
"""

from xmodal.models.modeldir import load
from xmodal.models.registry import get_scorer, list_models

__all__ = ["get_scorer", "list_models", "load"]
