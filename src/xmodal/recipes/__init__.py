"""Recipes: what a dataset or paper needs on top of the pure models in :mod:`xmodal.models`.

One module per dataset: how its features are built for a model, its named settings (records of
:class:`xmodal.recipes.settings.Setting`, the one settings table) and how a setting scores the
dataset's evaluation protocols.

- :mod:`xmodal.recipes.baselines`: the random baseline (any protocol);
- :mod:`xmodal.recipes.wikipedia`: Rasiwasia et al. (2010) CM / SM / SCM and our KSM, KSM-QE;
- :mod:`xmodal.recipes.corel5k`: Jeon et al. (2003) CMRM and Lavrenko et al. (2003) CRM;
- :mod:`xmodal.recipes.flickr8k`: Hodosh et al. (2013) KCCA systems and the NN baseline, the
  dual encoder and its zero-shot bridge.
"""

from xmodal.recipes.settings import Setting, all_settings, get_setting

__all__ = ["Setting", "all_settings", "get_setting"]
