"""Wikipedia (Rasiwasia et al. 2010): features, named settings and protocol scoring.

The dataset ships its features: 128-word SIFT histograms for the images and 10-topic LDA
proportions for the texts; the ``wikipedia`` protocol carries them (``protocol.dataset``). Every
setting is fitted on the 2,173 training pairs (once per process) and scores the 693 test items.
Hyperparameters were chosen by 5-fold cross-validation on the training split only
(``reports/wikipedia.md``, "Hyperparameters").
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from xmodal.errors import XmodalError
from xmodal.recipes.settings import Setting, frozen

FEATURES = "Wikipedia as distributed: 128-word SIFT histograms (images), 10-topic LDA (texts)"
CV = "5-fold CV on the Wikipedia training split (reports/wikipedia.md, Hyperparameters)"

_FITTED: dict[tuple[str, str], Any] = {}
_LOCK = threading.Lock()


def fit_on_wikipedia(setting: Setting, dataset: Any):
    """The setting's model fitted on the training split; cached per process and dataset."""
    key = (setting.name, str(getattr(dataset, "root", id(dataset))))
    with _LOCK:
        if key not in _FITTED:
            model = setting.build()
            _FITTED[key] = model.fit(dataset.image_train, dataset.text_train, dataset.labels_train)
        return _FITTED[key]


def clear_fitted() -> None:
    """Forget the models fitted in this process (tests that change a setting call it)."""
    with _LOCK:
        _FITTED.clear()


def direction_features(protocol: Any, direction: Any) -> tuple[np.ndarray, np.ndarray]:
    """The image and text feature rows of a ``wikipedia`` direction's items."""
    ds = protocol.dataset
    if ds is None or not hasattr(ds, "image_test"):
        raise XmodalError("the wikipedia protocol carries no dataset; build it with get_protocol")
    img_row = {k: n for n, k in enumerate(ds.image_ids_test)}
    txt_row = {k: n for n, k in enumerate(ds.text_ids_test)}
    try:
        ii = [img_row[k] for k in direction.image_ids]
        tt = [txt_row[k] for k in direction.text_ids]
    except KeyError as exc:
        raise XmodalError(f"id {exc.args[0]!r} is not a Wikipedia test item") from exc
    return ds.image_test[ii], ds.text_test[tt]


def score_direction(model: Any, protocol: Any, direction: Any) -> np.ndarray:
    """S of a fitted Wikipedia model for one direction (KSM-QE expands per direction)."""
    images, texts = direction_features(protocol, direction)
    if getattr(model, "expands_queries", False):
        return model.score(images, texts, direction=direction.name)
    return model.score(images, texts)


def _named_scorer(setting: Setting, protocol_name: str):
    def scorer(protocol: Any, direction: Any, seed: int = 0) -> np.ndarray:
        return score_direction(fit_on_wikipedia(setting, protocol.dataset), protocol, direction)

    scorer.per_direction = setting.name == "ksm-qe"
    return scorer


def saved_scorer(model: Any, path: Any, protocol_name: str):
    """A scorer for a loaded Wikipedia model directory."""
    if protocol_name != "wikipedia":
        raise XmodalError(
            f"{path}: a {model.model_type!r} model works on the SIFT/LDA features of the "
            f"Wikipedia dataset only: use --protocol wikipedia (got {protocol_name!r})")

    def scorer(protocol: Any, direction: Any, seed: int = 0) -> np.ndarray:
        return score_direction(model, protocol, direction)

    scorer.per_direction = getattr(model, "expands_queries", False)
    return scorer


def _setting(name: str, cls: str, params: dict, provenance: str) -> Setting:
    return Setting(name, name, f"xmodal.models.rasiwasia:{cls}", frozen(params), FEATURES,
                   provenance, ("wikipedia",), _named_scorer)


SETTINGS = [
    _setting("cm", "CorrelationMatching", {"n_components": 9, "reg": 1.0, "metric": "nc"},
             f"Rasiwasia et al. 2010 Table 4 row CM (d = 9 as the paper); ridge by {CV}"),
    _setting("sm", "SemanticMatching", {"C_image": 30.0, "C_text": 30.0, "metric": "nc"},
             f"Rasiwasia et al. 2010 Table 4 row SM; C by {CV}"),
    _setting("scm", "SemanticCorrelationMatching",
             {"n_components": 9, "reg": 1.0, "C": 1.0, "metric": "nc"},
             f"Rasiwasia et al. 2010 Table 4 row SCM; ridge and C by {CV}"),
    _setting("ksm", "KernelSemanticMatching",
             {"gamma": 2.0, "n_components": None, "C_image": 3.0, "C_text": 1.0,
              "metric": "dot"},
             f"ours (exp-chi2 kernel LR on the images); gamma, rank and C by {CV}"),
    _setting("ksm-qe", "ExpandedKernelSemanticMatching",
             {"gamma": 2.0, "n_components": None, "C_image": 3.0, "C_text": 10.0,
              "text_gamma": 2.0, "expansion_k": 40, "expansion_weight": 0.3, "metric": "dot"},
             f"ours, pre-registered before its first test run; text kernel and expansion by {CV}"),
]
