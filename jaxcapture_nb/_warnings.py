"""The warning category of this package, so users can filter it precisely."""


class JaxCaptureWarning(UserWarning):
    """A capture works, but something about it is slow or surprising."""
