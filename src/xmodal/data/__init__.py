"""Dataset loaders: each returns plain typed records with stable string ids. No model code here."""

from xmodal.data.corel5k import Corel5k, load_corel5k
from xmodal.data.folder import ImageFolder, load_image_folder, read_captions
from xmodal.data.flickr8k import Caption, CrowdJudgment, ExpertJudgment, Flickr8k, load_flickr8k
from xmodal.data.wikipedia import Wikipedia, load_wikipedia

__all__ = [
    "Caption",
    "Corel5k",
    "CrowdJudgment",
    "ExpertJudgment",
    "Flickr8k",
    "ImageFolder",
    "Wikipedia",
    "load_corel5k",
    "load_flickr8k",
    "load_image_folder",
    "read_captions",
    "load_wikipedia",
]
