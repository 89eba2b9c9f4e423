"""Imports the package before pytest collects anything.

Under ``--import-mode=importlib``, a doctest module of a subpackage collected
before any test imported the package (``pytest jaxcapture_nb/runs tests/...``)
makes pytest import the package itself first, and then the subpackage a second
time, as a new module object without the submodules the first import set on
it; ``monkeypatch.setattr("jaxcapture_nb.runs.watch.X", ...)`` then fails.
"""

import jaxcapture_nb  # noqa: F401
