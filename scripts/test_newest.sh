#!/usr/bin/env bash
# Runs the unit tests, doctests and tutorial notebooks (not the browser tests) on the
# newest stack the package supports: Python 3.13 with the newest Flax and JAX that
# pyproject.toml allows there, in a Debian trixie root under .newest/ that is built
# on first use and reused after. Needs root and network access to Debian's archive
# and PyPI. Arguments go to pytest.
#
# The script runs itself three times: on the host, then inside a private mount
# namespace (--mounted), then inside the root (--inside).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

case "${1:-}" in
  --mounted)  # mounts the root's file systems and the repository, then enters the root
    shift
    root="$PWD/.newest/root"
    mount -t proc proc "$root/proc"
    mount --bind /dev "$root/dev"
    mount -t tmpfs tmpfs "$root/dev/shm"
    mount --bind /sys "$root/sys"
    mkdir -p "$root/repo"
    mount --bind "$PWD" "$root/repo"
    # Tutorial 06 keeps its runs beside itself, in notebooks/runs; scripts/test.sh
    # runs the host's stack at the same time, so this stack's runs go to a folder
    # of its own, which vanishes with the namespace.
    mkdir -p "$root/repo/notebooks/runs"
    mount -t tmpfs tmpfs "$root/repo/notebooks/runs"
    exec chroot "$root" /usr/bin/env -i HOME=/root PATH=/venv/bin:/usr/bin:/bin LANG=C.UTF-8 \
      PIP_CERT=/etc/ssl/certs/host-ca-certificates.crt PIP_DISABLE_PIP_VERSION_CHECK=1 \
      bash /repo/scripts/test_newest.sh --inside "$@"
    ;;
  --inside)  # installs the package and its test tools for Python 3.13, and tests
    shift
    # Installed again when what the install reads changes, or a day after the
    # last install, so that a new Flax or JAX release is picked up.
    stamp=/venv/.jaxcapture_nb-installed
    wanted=$(cat pyproject.toml jupyter-config/*.json | sha256sum)
    if [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ] || [ -z "$(find "$stamp" -mmin -1440 2>/dev/null)" ]; then
      python -m pip install --quiet --upgrade pip
      python -m pip install --quiet -e ".[test]"
      echo "$wanted" > "$stamp"
    fi
    python -c 'import platform, flax, jax, jaxlib
print(f"Newest stack: Python {platform.python_version()}, flax {flax.__version__},",
      f"jax {jax.__version__}, jaxlib {jaxlib.__version__}")'
    python -m ipykernel install --user --name python3 >/dev/null
    exec python -m pytest --nbval-current-env --durations=25 --ignore=tests/browser "$@"
    ;;
esac

ROOT="$PWD/.newest/root"
if [ ! -f "$ROOT/.complete" ]; then  # absent, or a build that stopped half-way
  command -v debootstrap >/dev/null || { apt-get update -qq && apt-get install -y -qq debootstrap >/dev/null; }
  rm -rf "$ROOT"
  debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
    trixie "$ROOT" http://deb.debian.org/debian >/dev/null
  chroot "$ROOT" python3 -m venv /venv
  touch "$ROOT/.complete"
fi
# The host's name resolution (gloo, under jax.distributed, resolves this machine's
# name) and the host's CA bundle, so that pip inside trusts what the host trusts.
cp /etc/resolv.conf /etc/hosts "$ROOT/etc/"
cp /etc/ssl/certs/ca-certificates.crt "$ROOT/etc/ssl/certs/host-ca-certificates.crt"
# The mounts live in a private mount namespace: they vanish with it however the run
# ends, and the host never sees them, so deleting .newest/ cannot reach the repository.
exec unshare --mount --propagation private bash "$0" --mounted "$@"
