"""The warning category of this package, so users can filter it precisely."""

import os
import sys
import warnings

# This package's files (the folder above core/): not the user's code.
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


class JaxCaptureWarning(UserWarning):
    """A capture works, but something about it is slow or surprising."""


def warn(message: str) -> None:
    """Issues a :class:`JaxCaptureWarning` attributed to the user's code.

    The warning points at the first caller outside this package (the
    ``with`` line, the decorated call), whichever internal function raises
    it, and a warnings filter on that line's module applies to it.
    """
    frame, level = sys._getframe(0), 1  # stacklevel=1 is this function
    while frame is not None and frame.f_code.co_filename.startswith(PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, JaxCaptureWarning, stacklevel=level)
