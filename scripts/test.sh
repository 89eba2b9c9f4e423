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

# The newest stack (scripts/test_newest.sh) runs beside everything below: each
# run leaves a core idle for much of its time (a compile, a browser waiting for
# its kernel). It runs in a process group of its own, ended with this script.
mkdir -p test-artifacts
setsid bash scripts/test_newest.sh "$@" > test-artifacts/pytest-newest.log 2>&1 &
newest_pid=$!
trap 'kill -- "-$newest_pid" 2>/dev/null || true' EXIT

.venv/bin/ruff check jaxcapture_nb tests benchmarks
.venv/bin/ruff format --check jaxcapture_nb tests benchmarks
.venv/bin/mypy  # configured in pyproject.toml: the package, and the recorders against core/protocols.py

# The front end's JSDoc types and imports, checked by TypeScript (its version is in package.json).
if ! command -v npm >/dev/null; then
  apt-get update -qq && apt-get install -y -qq nodejs npm >/dev/null
fi
npm ci --no-audit --no-fund --loglevel=error
npx --no-install tsc -p jsconfig.json

# Every lane goes on when another fails; the other lanes' output is printed
# when all have ended, their closing pytest lines are repeated at the end, and
# the exit status is non-zero when any failed. Run whole, the browser tests are
# a lane of their own beside the host's other tests: once the newest stack has
# ended, its core would otherwise sit idle. Given arguments, one host run takes them.
set +e
browser=0
if [ $# -eq 0 ]; then
  setsid .venv/bin/python -m pytest --durations=10 tests/browser > test-artifacts/pytest-browser.log 2>&1 &
  browser_pid=$!
  trap 'kill -- "-$newest_pid" "-$browser_pid" 2>/dev/null || true' EXIT
  .venv/bin/python -m pytest --nbval-current-env --durations=25 --ignore=tests/browser 2>&1 | tee test-artifacts/pytest-host.log
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
  echo "=================== host, browser tests (test-artifacts/pytest-browser.log) ==================="
  cat test-artifacts/pytest-browser.log
fi
echo "=================== newest stack (test-artifacts/pytest-newest.log) ==================="
cat test-artifacts/pytest-newest.log
echo "host stack:       $(tail -n 1 test-artifacts/pytest-host.log)"
if [ $# -eq 0 ]; then
  echo "host, browser:    $(tail -n 1 test-artifacts/pytest-browser.log)"
fi
echo "newest stack:     $(tail -n 1 test-artifacts/pytest-newest.log)"
echo "test command: $((SECONDS / 60)) min $((SECONDS % 60)) s"
exit $((host || browser || newest))
