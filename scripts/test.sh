#!/usr/bin/env bash
# Installs everything the tests need and runs every test: lint, unit tests,
# doctests, the tutorial notebooks under nbval, and the browser tests; then all
# but the browser tests again on the newest supported stack (scripts/test_newest.sh).
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh" test

# Browser tests drive Debian's Chromium (Playwright cannot download its own here).
if compgen -G "tests/browser/test_*.py" >/dev/null && [ ! -x /usr/bin/chromium ]; then
  apt-get update -qq && apt-get install -y -qq chromium >/dev/null
fi
.venv/bin/python -m ipykernel install --user --name python3 >/dev/null

.venv/bin/ruff check jaxcapture_nb tests benchmarks
.venv/bin/ruff format --check jaxcapture_nb tests benchmarks
.venv/bin/mypy  # configured in pyproject.toml: the package, and the recorders against _protocols

# The front end's JSDoc types and imports, checked by TypeScript (its version is in package.json).
if ! command -v npm >/dev/null; then
  apt-get update -qq && apt-get install -y -qq nodejs npm >/dev/null
fi
npm ci --no-audit --no-fund --loglevel=error
npx --no-install tsc -p jsconfig.json

# The newest stack runs beside the host's: each leaves a core idle for much of
# its run (a compile, a browser waiting for its kernel), and together they take
# about as long as the host's alone. Both go on when the other fails; the newest
# stack's output is printed when both have ended, their closing pytest lines are
# repeated at the end, and the exit status is non-zero when either failed.
mkdir -p test-artifacts
set +e
bash scripts/test_newest.sh "$@" > test-artifacts/pytest-newest.log 2>&1 &
newest_pid=$!
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
