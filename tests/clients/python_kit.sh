#!/usr/bin/env bash
# The Python kit's tests, against the kit as a user installs it: the README's offline install
# (a venv over Debian's python3 with --system-site-packages for python3-redis, and pip with
# no index, no build isolation and no dependency download, from a copy of clients/python so
# the build leaves nothing in the source tree), then mypy on the installed package, then the
# unittest suite run from outside the source tree with that venv's python.
#
# Usage: tests/clients/python_kit.sh [unittest module ...]   (default: every test_*.py)
# PYTHON: the interpreter the venv is made from (default /usr/bin/python3, Debian's).
# HOTKEYD_BINARY: a hotkeyd for test_daemon.py (skipped without it).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
python="${PYTHON:-/usr/bin/python3}"
work="$(mktemp -d "${TMPDIR:-/tmp}/hotkeyd-kit.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# What a build in the tree would leave (setuptools' build/ and egg-info, a dist/).
debris() { (cd "$root/clients/python" && ls -d build dist ./*.egg-info 2>/dev/null || true); }
before="$(debris)"

# The README's commands, as written there ("Install", offline).
"$python" -m venv --system-site-packages "$work/venv"
cp -r "$root/clients/python" "$work/src"
rm -rf "$work/src/build" "$work/src/"*.egg-info
"$work/venv/bin/pip" install --quiet --no-index --no-deps --no-build-isolation "$work/src"

after="$(debris)"
if [[ "$before" != "$after" ]]; then
  echo "FAIL: installing the kit left build output in the source tree:" >&2
  diff <(echo "$before") <(echo "$after") >&2 || true
  exit 1
fi

cd "$work"  # not the source tree: `import hotkeyd_client` must find the installed package
installed="$("$work/venv/bin/python" -c 'import hotkeyd_client, os; print(os.path.dirname(hotkeyd_client.__file__))')"
case "$installed" in
  "$work/venv/"*) echo "kit installed at $installed" ;;
  *) echo "FAIL: hotkeyd_client imported from $installed, not the venv" >&2; exit 1 ;;
esac

# The public API as a type checker sees it (py.typed ships in the package).
"$work/venv/bin/python" -m mypy --config-file "$root/clients/python/pyproject.toml" \
  --cache-dir "$work/mypy-cache" -p hotkeyd_client

export HOTKEYD_CONTRACT_DIR="$root/tests/clients/contract/feed"
export HOTKEYD_KIT_VENV="$work/venv"
export HOTKEYD_KIT_PYPROJECT="$root/clients/python/pyproject.toml"
tests="$root/clients/python/tests"
if (($#)); then
  PYTHONPATH="$tests" "$work/venv/bin/python" -m unittest "$@"
else
  PYTHONPATH="$tests" "$work/venv/bin/python" -m unittest discover -s "$tests" -t "$tests"
fi
