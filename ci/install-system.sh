#!/usr/bin/env bash
# System tools the tests compare against or run: Debian packages, installed when missing.
# As root it installs them; otherwise it says what is missing (those tests then skip,
# except under CI=true, where they fail).
set -euo pipefail

packages=(cdo)
missing=()
for p in "${packages[@]}"; do
  command -v "$p" >/dev/null 2>&1 || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "install-system: missing ${missing[*]} (as root: apt-get install ${missing[*]});" \
       "the tests that need them will skip" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-system: installed ${missing[*]}"
