"""xmodal: associate images with sentences.

Retrieval, annotation, keyword tagging, gist detection, photo search and evaluation, all built on
one contract: a score matrix ``S[n_images, n_texts]`` where higher means a better match.
"""

from xmodal.errors import XmodalError

__version__ = "0.1.0"
__all__ = ["XmodalError", "__version__"]
