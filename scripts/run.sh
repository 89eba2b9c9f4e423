#!/usr/bin/env bash
# Installs jaxcapture_nb with JupyterLab and opens a tutorial: the first one, or the one
# named by its number or file name. Other arguments go to `jupyter lab`.
#   scripts/run.sh            # notebooks/01_capture_basics.ipynb
#   scripts/run.sh 03         # notebooks/03_training_live.ipynb
#   scripts/run.sh 02 --no-browser --port 8890
# The URL printed (and opened, where there is a browser) is the tutorial's own page,
# /lab/tree/notebooks/NAME.ipynb?token=..., not JupyterLab's launcher. Run as root,
# it passes --allow-root to JupyterLab.
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh" notebook

tutorial=notebooks/01_capture_basics.ipynb
if [[ $# -gt 0 && $1 != -* ]]; then
  name=$(basename "${1%.ipynb}")
  matches=(notebooks/"$name"*.ipynb)
  if [[ ! -f ${matches[0]} ]]; then
    echo "run.sh: no tutorial matches '$1'; the tutorials are:" >&2
    ls notebooks/*.ipynb >&2
    exit 2
  fi
  tutorial=${matches[0]}
  shift
fi
# JupyterLab refuses to start as root without --allow-root; containers, CI runners
# and cloud machines often run everything as root.
as_root=()
if [[ $(id -u) -eq 0 ]]; then
  as_root=(--allow-root)
fi
# JupyterLab's default URL is what the server prints, opens and redirects / to.
# (An empty array expands this way under `set -u` in bash 3, macOS's bash, too.)
exec .venv/bin/jupyter lab --LabApp.default_url="/lab/tree/$tutorial" ${as_root[@]+"${as_root[@]}"} "$@"
