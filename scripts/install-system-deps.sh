#!/usr/bin/env bash
# Installs the system packages docsan needs (tesseract with Chinese and English
# data, and orientation detection; redis-server, which the tests of the shared
# corpus index start on a free port). As root it installs them with apt-get;
# otherwise it checks and says exactly what to install.
set -euo pipefail

PACKAGES=(tesseract-ocr tesseract-ocr-chi-sim tesseract-ocr-eng tesseract-ocr-osd redis-server)

have_all() {
    command -v tesseract >/dev/null 2>&1 || return 1
    command -v redis-server >/dev/null 2>&1 || return 1
    local langs
    langs=$(tesseract --list-langs 2>/dev/null)
    for l in chi_sim eng osd; do
        grep -qx "$l" <<<"$langs" || return 1
    done
}

if have_all; then
    exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "docsan setup: installing ${PACKAGES[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}" >/dev/null
    have_all && exit 0
fi
echo "docsan setup: tesseract with chi_sim, eng and osd data, or redis-server, is missing." >&2
echo "  Debian/Ubuntu: sudo apt-get install ${PACKAGES[*]}" >&2
echo "  macOS:         brew install tesseract tesseract-lang redis" >&2
exit 1
