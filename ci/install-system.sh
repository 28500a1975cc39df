#!/usr/bin/env bash
# System parts the tests use, from Debian: cdo (a reference), fincore (util-linux-extra:
# an independent count of page-cache residency), libudunits2-0 (the UDUNITS-2
# library cfchecks parses units with), rclone and fuse3 (a lazy FUSE
# mount of the tests' S3 server), chromium (the browser test drives JupyterLab in it), and a
# one-node Slurm and Grid Engine (real batch schedulers). As root they are installed and started; otherwise this says what is missing
# (those tests then skip, except under CI=true, where they fail).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

if [ "$(id -u)" -ne 0 ]; then
  command -v cdo >/dev/null || echo "install-system: cdo missing (apt-get install cdo)" >&2
  ldconfig -p 2>/dev/null | grep -q 'libudunits2\.so' ||
    echo "install-system: libudunits2-0 missing (apt-get install libudunits2-0)" >&2
  command -v rclone >/dev/null || echo "install-system: rclone missing (apt-get install rclone)" >&2
  command -v fusermount3 >/dev/null ||
    echo "install-system: fuse3 missing (apt-get install fuse3)" >&2
  command -v chromium >/dev/null ||
    echo "install-system: chromium missing (apt-get install chromium)" >&2
  command -v fincore >/dev/null ||
    echo "install-system: fincore missing (apt-get install util-linux-extra)" >&2
  echo "install-system: not root: Slurm and Grid Engine are not started (sudo bash" \
       "ci/slurm/start.sh; sudo bash ci/sge/start.sh); their tests will skip" >&2
  exit 0
fi

missing=()
command -v cdo >/dev/null || missing+=(cdo)
ldconfig -p | grep -q 'libudunits2\.so' || missing+=(libudunits2-0)
command -v rclone >/dev/null || missing+=(rclone)
command -v fusermount3 >/dev/null || missing+=(fuse3)
command -v chromium >/dev/null || missing+=(chromium)
command -v fincore >/dev/null || missing+=(util-linux-extra)
if [ "${#missing[@]}" -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  echo "install-system: installed ${missing[*]}"
fi
bash "$here/slurm/start.sh"
bash "$here/sge/start.sh"
