"""Baselines that score any protocol: the seeded random scorer."""

from __future__ import annotations

from xmodal.recipes.settings import Setting, frozen


def _random_scorer(setting: Setting, protocol_name: str):
    from xmodal.models.random_model import RandomScorer

    def scorer(protocol, direction, seed: int = 0):
        return RandomScorer(seed).score(len(direction.image_ids), len(direction.text_ids))

    return scorer


SETTINGS = [
    Setting("random", "", "xmodal.models.random_model:RandomScorer", frozen(), "none",
            "i.i.d. uniform scores from the run's seed: the chance level of every protocol",
            (), _random_scorer),
]
