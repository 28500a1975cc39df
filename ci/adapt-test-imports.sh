#!/bin/bash
# For a test file written before tests/ was grouped into folders (helpers imported by bare
# name: from servers import ..., from conftest import run_cli, from test_regrid import ...):
# rewrites its imports to tests.support.* and tests.FOLDER.test_x, and old tests/test_x.py
# paths in its text. Idempotent. From the repository's root:
#   bash ci/adapt-test-imports.sh tests/test_new.py   (or $(git ls-files 'tests/*.py'))
#   git mv tests/test_new.py tests/FOLDER/            (the folder of what it tests)
#   .venv/bin/ruff check --fix tests && .venv/bin/ruff format tests
# Delete this script once no branch predates the move (tests/test_layout.py catches a file
# it was not run on).
set -e
for f in "$@"; do
  case "$f" in *tests/support/paths.py) continue ;; esac  # where ROOT and FAKE_LFS are made
  sed -i -E 's/^([[:space:]]*)from tests\.conftest import/\1from conftest import/' "$f"
  # one name per line for `from conftest import a, b` or `(a,\n b)`: conftest's helpers went to several modules
  perl -0pi -e 's/^([ \t]*)from conftest import (?:\(([^)]*)\)|([^\n(]*?))[ \t]*$/my ($i,$n)=($1,defined $2 ? $2 : $3); $n =~ s{\s+}{ }g; $n =~ s{^ | $|,\s*$}{}g; join("\n", map { "${i}from conftest import $_" } split(m{\s*,\s*}, $n))/gme' "$f"
  sed -i -E \
    -e 's/^([[:space:]]*)from conftest import (raise_if_dask_computes)$/\1from tests.support.lazy import \2/' \
    -e 's/^([[:space:]]*)from conftest import (require_tool|missing|require_service)$/\1from tests.support.needs import \2/' \
    -e 's/^([[:space:]]*)from conftest import (start_cli|run_cli|run_clis|CLI_JOBS)$/\1from tests.support.cli import \2/' \
    -e 's/^([[:space:]]*)from conftest import (aws_environment|forget_s3_clients)$/\1from tests.support.s3env import \2/' \
    -e 's/^([[:space:]]*)from conftest import (TEST_SPEC|ALL_PERIOD|PRECIP_PERIOD|DAILY_VARIABLES)$/\1from tests.support.trees import \2/' \
    -e 's/^([[:space:]]*)from conftest import (queue|wait_queue_empty|sge_available)$/\1from tests.support.batch_systems import \2/' \
    -e 's/^([[:space:]]*)from conftest import (ROOT)$/\1from tests.support.paths import \2/' \
    -e 's/^([[:space:]]*)from privileges import/\1from tests.support.needs import/' \
    -e 's/^([[:space:]]*)from (servers|ncfiles|known|cdo_fields|cf|cmipfiles|multi_data|arco|bigbucket|envfiles|gateway_server|proxy) import/\1from tests.support.\2 import/' \
    -e 's#Path\(__file__\)\.resolve\(\)\.parent\.parent#ROOT#g; s#Path\(__file__\)(\.resolve\(\))?\.parents\[1\]#ROOT#g' \
    -e 's#Path\(__file__\)(\.resolve\(\))?\.parent / "fake_lfs"#FAKE_LFS#g' \
    -e 's#tests/(servers|ncfiles|known|cdo_fields|cf|cmipfiles|multi_data|arco|bigbucket|envfiles|gateway_server|proxy)\.py#tests/support/\1.py#g' \
    "$f"
  sed -i -E '/^ROOT = ROOT$/d; /^FAKE_LFS = FAKE_LFS$/d' "$f"
  for name in ROOT FAKE_LFS; do  # used but no longer defined (it came from __file__): import it
    if grep -qw "$name" "$f" && ! grep -qE "^(from tests\.support\.paths import .*\b$name\b|$name =)" "$f"; then
      sed -i -E "0,/^(import |from [^_])/s//from tests.support.paths import $name\n&/" "$f"
    fi
  done
  # another test module, by its package path (wherever it now is under tests/)
  for m in $(grep -ohE '^[[:space:]]*from test_[a-z0-9_]+ import' "$f" | awk '{print $2}' | sort -u); do
    p=$(find tests -name "$m.py" -not -path "*/__pycache__/*" | head -1)
    [ -n "$p" ] || { echo "$f: $m.py not found under tests/" >&2; continue; }
    mod=$(echo "${p%.py}" | tr / .)
    sed -i -E "s/^([[:space:]]*)from $m import/\1from $mod import/" "$f"
  done
  # and old paths of moved tests named in the text (tests/test_x.py -> tests/FOLDER/test_x.py)
  for m in $(grep -ohE '(^|[^/[:alnum:]_.-])tests/test_[a-z0-9_]+\.py' "$f" | grep -oE 'test_[a-z0-9_]+' | sort -u); do
    [ -e "tests/$m.py" ] && continue
    p=$(find tests -name "$m.py" -not -path "*/__pycache__/*" | head -1)
    [ -n "$p" ] && sed -i -E "s#(^|[^/[:alnum:]_.-])tests/$m\.py#\1$p#g" "$f"
  done
done
