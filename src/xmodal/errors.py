"""The one exception type for errors a user can cause (missing files, bad input, unknown names)."""


class XmodalError(Exception):
    """An error with a message that tells the user what went wrong and what to do."""
