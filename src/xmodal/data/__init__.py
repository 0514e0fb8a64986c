"""Dataset loaders: each returns plain typed records with stable string ids. No model code here.

The names below load their module on first use, so that the photo index, which needs only
``xmodal.data.image_files``, does not import the research loaders (and scipy) with it.
"""

from importlib import import_module

_HOMES = {
    "Corel5k": "corel5k", "load_corel5k": "corel5k",
    "ImageFolder": "folder", "load_image_folder": "folder", "read_captions": "folder",
    "Caption": "flickr8k", "CrowdJudgment": "flickr8k", "ExpertJudgment": "flickr8k",
    "Flickr8k": "flickr8k", "load_flickr8k": "flickr8k",
    "Wikipedia": "wikipedia", "load_wikipedia": "wikipedia",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module 'xmodal.data' has no attribute {name!r}")
    value = getattr(import_module(f"xmodal.data.{_HOMES[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOMES])
