#!/usr/bin/env bash
# Installs jaxcapture_nb with JupyterLab and opens the first tutorial.
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh" notebook
exec .venv/bin/jupyter lab notebooks/01_capture_basics.ipynb "$@"
