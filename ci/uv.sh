#!/usr/bin/env bash
# uv, with pip's own settings: `bash ci/uv.sh VENV pip install ...` runs VENV/bin/uv (installed
# there by pip at the version below when it is missing) with the index, extra indexes,
# find-links folders and CA bundle that pip would use (uv reads neither pip's configuration
# nor its PIP_* variables). Used by `make` (.venv from requirements/lock.txt), `make lock`
# and ci/lowest-versions.sh.
set -euo pipefail
UV_VERSION=0.13.8
venv=$1
shift
if [ "$("$venv/bin/uv" --version 2>/dev/null)" != "uv $UV_VERSION" ]; then
  "$venv/bin/python" -m pip install --quiet "uv==$UV_VERSION"
fi

pip_config() { "$venv/bin/python" -m pip config get "$1" 2>/dev/null || true; }
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
if [ -n "$cert" ]; then export SSL_CERT_FILE=$cert; fi

# the options go after the subcommand words (`pip install`, `pip compile`)
words=()
while [ $# -gt 0 ] && [[ "$1" != -* ]]; do words+=("$1"); shift; done
exec "$venv/bin/uv" "${words[@]}" ${uv_args[@]+"${uv_args[@]}"} "$@"
