#!/usr/bin/env bash
# The lowest versions pyproject.toml allows: a venv of its own (.venv-lowest) with the package
# and its extras (all, test) at the lowest direct versions (uv's --resolution lowest-direct), the
# versions printed, then the smoke tests (pytest -m smoke): open, a recipe through the CLI,
# convert to Zarr, index on the S3 test server. `make test-lowest` runs it; CI after `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VENV=${LOWEST_VENV:-.venv-lowest}
started=$SECONDS

"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11) and "pangeo-hpc needs Python >= 3.11: PYTHON=python3.11 bash ci/lowest-versions.sh")'
# a fresh venv each time: what a previous run installed must not hide a bound that is too low
rm -rf "$VENV"
"$PYTHON" -m venv "$VENV"
bash ci/uv.sh "$VENV" pip install --python "$VENV/bin/python" --resolution lowest-direct \
  -e '.[test,all]'
echo "lowest-versions: installed in $((SECONDS - started)) s"

# one line per direct dependency (runtime, the extras and the test extras): what this run tested
"$VENV/bin/python" - <<'PY'
import re
import tomllib
from importlib.metadata import version

meta = tomllib.load(open("pyproject.toml", "rb"))["project"]
extras = meta["optional-dependencies"]
for req in meta["dependencies"] + [r for e in ("s3", "lab", "demo", "test") for r in extras[e]]:
    name = re.match(r"[A-Za-z0-9][A-Za-z0-9_.\-]*", req).group(0)
    bound = req[len(name):].split(";")[0].strip()
    print(f"lowest-versions: {name:<22} {version(name):<12} (pyproject.toml: {bound})")
PY

# the S3 clients of the tests must not see the shell's CA bundle (the server is plain http)
unset AWS_CA_BUNDLE
status=0
"$VENV/bin/python" -m pytest -m smoke -p no:cacheprovider "$@" || status=$?
if [ "$status" -eq 5 ]; then
  echo "lowest-versions: pytest collected no smoke tests" >&2
fi
echo "lowest-versions: done in $((SECONDS - started)) s (pytest exit code $status)"
exit "$status"
