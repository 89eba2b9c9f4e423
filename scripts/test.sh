#!/usr/bin/env bash
# Installs everything the tests need and runs every test: lint, unit tests,
# doctests, the tutorial notebooks under nbval, and the browser tests.
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh" test

# Browser tests drive Debian's Chromium (Playwright cannot download its own here).
if compgen -G "tests/browser/test_*.py" >/dev/null && [ ! -x /usr/bin/chromium ]; then
  apt-get update -qq && apt-get install -y -qq chromium >/dev/null
fi
.venv/bin/python -m ipykernel install --user --name python3 >/dev/null

.venv/bin/ruff check jaxcapture_nb tests benchmarks
.venv/bin/ruff format --check jaxcapture_nb tests benchmarks
.venv/bin/python -m pytest --nbval-current-env "$@"
