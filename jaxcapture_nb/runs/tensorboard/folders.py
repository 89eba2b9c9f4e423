"""Where the runs of a TensorBoard log folder lie: a run per folder of event files, as TensorBoard lists them."""

from __future__ import annotations

import os
import pathlib


def runs_in(path: str | os.PathLike[str]) -> dict[str, pathlib.Path]:
    """The runs under ``path``, by name, in name order, as TensorBoard lists the runs of a ``--logdir``.

    Each folder at or under ``path`` that holds an event file (a file whose
    name holds ``tfevents``) is a run, named by its path from ``path``
    (``"adam/lr-1e-3"``); ``path`` itself, if it holds one, by its own name.
    Folders linked to are followed, once each; links that lead nowhere and
    folders named like event files are not event files. An event file is
    one run, named by its own name.

    Raises:
      FileNotFoundError: no event file is there, or ``path`` is a file that
        is not one.
    """
    path = pathlib.Path(path)
    if path.is_file():
        if "tfevents" not in path.name:
            raise FileNotFoundError(f"{path} is not a TensorBoard event file (their names hold 'tfevents')")
        return {path.resolve().name: path}
    found: dict[str, pathlib.Path] = {}
    seen: set[str] = set()
    for folder, subfolders, _ in os.walk(path, followlinks=True):
        real = os.path.realpath(folder)
        if real in seen:  # a link back up: walked already
            subfolders.clear()
            continue
        seen.add(real)
        if event_files(pathlib.Path(folder)):
            relative = pathlib.Path(folder).relative_to(path).as_posix()
            found[path.resolve().name if relative == "." else relative] = pathlib.Path(folder)
    if not found:
        raise FileNotFoundError(f"no TensorBoard event file in {path}")
    return dict(sorted(found.items()))


def event_files(folder: pathlib.Path) -> list[pathlib.Path]:
    """The event files directly in ``folder``, in name order (the order TensorBoard reads them)."""
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    return [folder / name for name in names if "tfevents" in name and (folder / name).is_file()]


def run_path(path: str | os.PathLike[str]) -> pathlib.Path:
    """``path`` if it is an event file or a folder holding some, else its one run.

    A folder that holds event files is the run they make, as TensorBoard
    reads it, whatever runs lie in its subfolders (tensorboardX's
    ``add_scalars`` writes one per key beside the main run's file).

    Raises:
      FileNotFoundError: no event file is there.
      ValueError: no event file in the folder itself, and several folders below hold some: runs.
    """
    if pathlib.Path(path).is_dir() and event_files(pathlib.Path(path)):
        return pathlib.Path(path)
    runs = runs_in(path)
    if len(runs) > 1:
        raise ValueError(f"{path} holds {len(runs)} runs ({', '.join(runs)}); open one of them")
    return next(iter(runs.values()))
