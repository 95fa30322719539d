#!/usr/bin/env bash
# Installs the Debian packages pgpush builds and tests with, when missing, and the
# tools deploy/local/check-deploy.sh runs: promtool (from Debian's prometheus
# package) and kubernetes-validate (from PyPI), both under .build/deploy-tools.
# Needs root (or sudo) only when a Debian package is missing.
set -euo pipefail
cd "$(dirname "$0")/../.."

# systemd: systemd-analyze. python3-yaml: YAML for the tests and check-compose.py.
# python3-venv: the virtual environment kubernetes-validate lives in (Debian's python3
# refuses pip installs outside one). tcpdump and tshark: the wire test captures loopback
# traffic and decrypts it (WireRateCapTests). pgbouncer: tests run through it in transaction
# pooling mode (TransactionPoolingTests, and test.sh's pooler stage). tinyproxy-bin: the proxy the
# worker's CONNECT tunnels are tested through (ProxyTests), the binary alone, no service.
# chromium and chromium-driver: the status page (`pgpush web`) is tested in headless Chromium
# driven through chromedriver (StatusPageBrowserTests).
packages=(libpq-dev libnghttp2-dev libssl-dev pkg-config postgresql openssl nghttp2-client nghttp2-server python3-yaml
          systemd python3-venv tcpdump tshark pgbouncer tinyproxy-bin chromium chromium-driver)
missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
if [ ${#missing[@]} -gt 0 ]; then
    echo "installing: ${missing[*]}" >&2
    $sudo apt-get update -qq
    $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

tools=.build/deploy-tools
mkdir -p "$tools/bin"

# promtool only: installing Debian's prometheus package would also enable and start
# a Prometheus server (its init script and unit), which a test machine must not get.
# The package is downloaded with apt and only promtool is unpacked from it.
if [ ! -x "$tools/bin/promtool" ]; then
    echo "unpacking promtool from Debian's prometheus package into $tools/bin" >&2
    download=$(mktemp -d)
    (cd "$download" && { apt-get download -qq prometheus 2>/dev/null || { $sudo apt-get update -qq && apt-get download -qq prometheus; }; })
    dpkg-deb --fsys-tarfile "$download"/prometheus_*.deb | tar -x -O ./usr/bin/promtool > "$tools/bin/promtool.partial"
    chmod 755 "$tools/bin/promtool.partial"
    mv "$tools/bin/promtool.partial" "$tools/bin/promtool"
    rm -rf "$download"
fi

# kubernetes-validate, pinned: its bundled schemas decide what passes.
kubernetes_validate_version=1.37.0
if ! "$tools/venv/bin/kubernetes-validate" --version 2>/dev/null | grep -qF "$kubernetes_validate_version"; then
    echo "installing kubernetes-validate $kubernetes_validate_version into $tools/venv" >&2
    rm -rf "$tools/venv"
    python3 -m venv "$tools/venv"
    "$tools/venv/bin/pip" install -q --disable-pip-version-check "kubernetes-validate==$kubernetes_validate_version"
    ln -sf ../venv/bin/kubernetes-validate "$tools/bin/kubernetes-validate"
fi

# http_ece and the cryptography package it runs on, pinned: a Web Push decrypter and
# encrypter (RFC 8188, RFC 8291) written outside pgpush, which the crypto tests check
# pgpush's messages against (WebPushInteropTests).
http_ece_version=1.2.1
cryptography_version=50.0.2
if ! "$tools/venv/bin/python" -c "import importlib.metadata as m; assert (m.version('http_ece'), m.version('cryptography')) == ('$http_ece_version', '$cryptography_version')" 2>/dev/null; then
    echo "installing http_ece $http_ece_version into $tools/venv" >&2
    "$tools/venv/bin/pip" install -q --disable-pip-version-check "http_ece==$http_ece_version" "cryptography==$cryptography_version"
fi
