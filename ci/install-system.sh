#!/usr/bin/env bash
# System parts the tests use, from Debian: cdo (a reference), and a one-node Slurm and
# Grid Engine (real batch schedulers). As root they are installed and started; otherwise
# this says what is missing (those tests then skip, except under CI=true, where they fail).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

if [ "$(id -u)" -ne 0 ]; then
  command -v cdo >/dev/null || echo "install-system: cdo missing (apt-get install cdo)" >&2
  echo "install-system: not root: Slurm and Grid Engine are not started (sudo bash" \
       "ci/slurm/start.sh; sudo bash ci/sge/start.sh); their tests will skip" >&2
  exit 0
fi

if ! command -v cdo >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends cdo >/dev/null
  echo "install-system: installed cdo"
fi
bash "$here/slurm/start.sh"
bash "$here/sge/start.sh"
