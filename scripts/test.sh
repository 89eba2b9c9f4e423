#!/usr/bin/env bash
# Installs everything the tests need and runs every test: lint, unit tests,
# doctests, the tutorial notebooks under nbval, and the browser tests; and,
# beside them, all but the browser tests on the newest supported stack
# (scripts/test_newest.sh).
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh" test

# Browser tests drive Debian's Chromium (Playwright cannot download its own here).
if compgen -G "tests/browser/test_*.py" >/dev/null && [ ! -x /usr/bin/chromium ]; then
  apt-get update -qq && apt-get install -y -qq chromium >/dev/null
fi
.venv/bin/python -m ipykernel install --user --name python3 >/dev/null

# Three runs go side by side, each in a process group of its own, ended with
# this script: the newest stack (scripts/test_newest.sh, all but the browser
# tests), the host's browser tests and tutorial notebooks, which start now, and
# the host's other tests, after the lint. Each leaves a core idle for much of
# its time (a compile, a browser waiting for its kernel); side by side, the
# two cores stay busy to the end. Given arguments, one host run takes them
# after the lint, beside the newest stack.
mkdir -p test-artifacts
setsid bash scripts/test_newest.sh "$@" > test-artifacts/pytest-newest.log 2>&1 &
newest_pid=$!
browser_pid=""
if [ $# -eq 0 ]; then
  setsid .venv/bin/python -m pytest --nbval-current-env --durations=10 tests/browser notebooks \
    > test-artifacts/pytest-browser.log 2>&1 &
  browser_pid=$!
fi
trap 'kill -- "-$newest_pid" ${browser_pid:+"-$browser_pid"} 2>/dev/null || true' EXIT

.venv/bin/ruff check jaxcapture_nb tests benchmarks
.venv/bin/ruff format --check jaxcapture_nb tests benchmarks
.venv/bin/mypy  # configured in pyproject.toml: the package, and the recorders against core/protocols.py

# The front end's JSDoc types and imports, checked by TypeScript (its version is in package.json).
if ! command -v npm >/dev/null; then
  apt-get update -qq && apt-get install -y -qq nodejs npm >/dev/null
fi
npm ci --no-audit --no-fund --loglevel=error
npx --no-install tsc -p jsconfig.json

# Every run goes on when another fails; the other runs' output is printed
# when all have ended, their closing pytest lines are repeated at the end, and
# the exit status is non-zero when any failed.
set +e
browser=0
if [ $# -eq 0 ]; then
  .venv/bin/python -m pytest --nbval-current-env --durations=25 --ignore=tests/browser tests jaxcapture_nb 2>&1 \
    | tee test-artifacts/pytest-host.log
  host=$?
  wait "$browser_pid"
  browser=$?
else
  .venv/bin/python -m pytest --nbval-current-env --durations=25 "$@" 2>&1 | tee test-artifacts/pytest-host.log
  host=$?
fi
wait "$newest_pid"
newest=$?
set -e
if [ $# -eq 0 ]; then
  echo "=================== host, browser tests and notebooks (test-artifacts/pytest-browser.log) ==================="
  cat test-artifacts/pytest-browser.log
fi
echo "=================== newest stack (test-artifacts/pytest-newest.log) ==================="
cat test-artifacts/pytest-newest.log
echo "host stack:       $(tail -n 1 test-artifacts/pytest-host.log)"
if [ $# -eq 0 ]; then
  echo "host, browser and notebooks: $(tail -n 1 test-artifacts/pytest-browser.log)"
fi
echo "newest stack:     $(tail -n 1 test-artifacts/pytest-newest.log)"
echo "test command: $((SECONDS / 60)) min $((SECONDS % 60)) s"
exit $((host || browser || newest))
