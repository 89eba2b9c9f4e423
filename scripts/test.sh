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

# Both stacks go on when the other fails; the newest stack's output is printed
# when both have ended, their closing pytest lines are repeated at the end, and
# the exit status is non-zero when either failed.
set +e
.venv/bin/python -m pytest --nbval-current-env --durations=25 "$@" 2>&1 | tee test-artifacts/pytest-host.log
host=$?
wait "$newest_pid"
newest=$?
set -e
echo "=================== newest stack (test-artifacts/pytest-newest.log) ==================="
cat test-artifacts/pytest-newest.log
echo "host stack:   $(tail -n 1 test-artifacts/pytest-host.log)"
echo "newest stack: $(tail -n 1 test-artifacts/pytest-newest.log)"
echo "test command: $((SECONDS / 60)) min $((SECONDS % 60)) s"
exit $((host || newest))
