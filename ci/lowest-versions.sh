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
"$VENV/bin/python" -m pip install --quiet uv

# uv reads neither pip's configuration nor its PIP_* variables: hand over the same index,
# extra indexes, find-links folders and CA bundle as pip would use
pip_config() { "$VENV/bin/python" -m pip config get "$1" 2>/dev/null || true; }
uv_args=()
index_url=${PIP_INDEX_URL:-$(pip_config global.index-url)}
extra_urls=${PIP_EXTRA_INDEX_URL:-$(pip_config global.extra-index-url)}
find_links=${PIP_FIND_LINKS:-$(pip_config global.find-links)}
cert=${PIP_CERT:-$(pip_config global.cert)}
if [ -n "$index_url" ]; then uv_args+=(--index-url "$index_url"); fi
for url in $extra_urls; do uv_args+=(--extra-index-url "$url"); done
for link in $find_links; do
  # pip passes over an empty or missing folder (this machine's /opt/wheels is empty)
  if [[ "$link" == *://* ]] || [ -n "$(ls -A "$link" 2>/dev/null)" ]; then
    uv_args+=(--find-links "$link")
  fi
done
uv_env=()
if [ -n "$cert" ]; then uv_env+=("SSL_CERT_FILE=$cert"); fi

env ${uv_env[@]+"${uv_env[@]}"} "$VENV/bin/uv" pip install --python "$VENV/bin/python" \
  --resolution lowest-direct ${uv_args[@]+"${uv_args[@]}"} -e '.[test,all]'
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
