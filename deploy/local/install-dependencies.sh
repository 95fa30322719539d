#!/usr/bin/env bash
# Installs the Debian packages pgpush builds and tests with, when missing.
# Needs root (or sudo) only when something is missing.
set -euo pipefail

packages=(libpq-dev libnghttp2-dev libssl-dev pkg-config postgresql openssl nghttp2-client nghttp2-server python3-yaml)
missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "installing: ${missing[*]}" >&2
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
