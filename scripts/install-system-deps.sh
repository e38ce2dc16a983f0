#!/usr/bin/env bash
# Installs the system packages docsan needs (tesseract with Chinese and English
# data, and orientation detection). As root it installs them with apt-get;
# otherwise it checks and says exactly what to install.
set -euo pipefail

# The OCR languages docsan picks from a page's script (docsan/extract/ocr.py SCRIPT_LANGS): about
# 1 MB each. DejaVu Sans: the right-to-left PDFs the tests write.
PACKAGES=(tesseract-ocr tesseract-ocr-chi-sim tesseract-ocr-eng tesseract-ocr-osd
          tesseract-ocr-chi-tra tesseract-ocr-jpn tesseract-ocr-kor tesseract-ocr-rus tesseract-ocr-ara
          tesseract-ocr-heb tesseract-ocr-tha tesseract-ocr-ell tesseract-ocr-hin fonts-dejavu-core)

have_all() {
    command -v tesseract >/dev/null 2>&1 || return 1
    local langs
    langs=$(tesseract --list-langs 2>/dev/null)
    for l in chi_sim eng osd chi_tra jpn kor rus ara heb tha ell hin; do
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
echo "docsan setup: tesseract or some of its language data (chi_sim eng osd chi_tra jpn kor rus ara heb tha ell hin) is missing." >&2
echo "  Debian/Ubuntu: sudo apt-get install ${PACKAGES[*]}" >&2
echo "  macOS:         brew install tesseract tesseract-lang" >&2
exit 1
