#!/usr/bin/env bash
# Installs the system packages docsan needs (tesseract with Chinese and English
# data, and orientation detection; redis-server, which the tests of the shared
# corpus index start on a free port) and, for the --html-report browser tests,
# Debian's Chromium. As root it installs them with apt-get; otherwise it checks
# and says exactly what to install (Chromium only with a note: the library and
# the command do not need it).
set -euo pipefail

PACKAGES=(tesseract-ocr tesseract-ocr-chi-sim tesseract-ocr-eng tesseract-ocr-osd redis-server)
# fonts-liberation: Chromium only recommends a font, and --no-install-recommends would leave it with none.
BROWSER=(chromium chromium-driver fonts-liberation)

have_tesseract() {
    command -v tesseract >/dev/null 2>&1 || return 1
    command -v redis-server >/dev/null 2>&1 || return 1
    local langs
    langs=$(tesseract --list-langs 2>/dev/null)
    for l in chi_sim eng osd; do
        grep -qx "$l" <<<"$langs" || return 1
    done
}

have_browser() {
    [ -x /usr/bin/chromium ]
}

if have_tesseract && have_browser; then
    exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    wanted=()
    have_tesseract || wanted+=("${PACKAGES[@]}")
    have_browser || wanted+=("${BROWSER[@]}")
    echo "docsan setup: installing ${wanted[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${wanted[@]}" >/dev/null
fi
if ! have_browser; then
    echo "docsan setup: note: Chromium is missing; the --html-report browser tests will skip." >&2
    echo "  Debian/Ubuntu: sudo apt-get install ${BROWSER[*]}" >&2
fi
have_tesseract && exit 0
echo "docsan setup: tesseract with chi_sim, eng and osd data, or redis-server, is missing." >&2
echo "  Debian/Ubuntu: sudo apt-get install ${PACKAGES[*]}" >&2
echo "  macOS:         brew install tesseract tesseract-lang redis" >&2
exit 1
