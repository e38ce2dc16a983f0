"""One tesseract call, bounded by CPU time rather than by the clock.

A wall-clock limit turns load into data loss: on a busy machine a page that
needs 20 s of CPU can take 90 s, pass a 60 s limit, and come out empty (the
zh_admin scan did, and was complete when the machine was quiet). So each call
runs tesseract as a child process with ``RLIMIT_CPU`` set to the CPU budget:
the kernel stops it after that much CPU, however long the machine makes it
wait. A wall-clock limit stays as a backstop for a process that cannot run at
all (stopped, swapped out), set to several times the CPU budget.
``OMP_THREAD_LIMIT=1``: tesseract's OpenMP threads would spend the CPU budget
several times faster without finishing sooner on a loaded machine.

pytesseract has no way to set a resource limit on its child, so the process
is started here; its TSV and OSD parsers are reused, and
``pytesseract.pytesseract.tesseract_cmd`` still names the binary.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytesseract
from PIL import Image

from docsan.errors import DocsanError

INSTALL_HINT = (
    "install tesseract with the chi_sim, eng and osd language data "
    "(Debian/Ubuntu: apt-get install tesseract-ocr tesseract-ocr-chi-sim tesseract-ocr-eng tesseract-ocr-osd), "
    "or turn OCR off with --no-ocr"
)


class OcrUnavailableError(DocsanError):
    """OCR is needed but tesseract (or a language pack) is not installed."""


class OcrFailedError(Exception):
    """Tesseract failed on this image (not a setup problem): the caller records a gap."""


@dataclass(frozen=True, slots=True)
class OcrTimeout(Exception):
    """Tesseract ran out of its CPU budget or of the wall-clock backstop."""

    seconds: float
    what: str  # "CPU time" or "wall-clock time"


def _limit_cpu(seconds: int) -> None:  # pragma: no cover - runs in the child before exec
    import resource

    resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 1))


def _command() -> str:
    return str(pytesseract.pytesseract.tesseract_cmd)


def run(image: Image.Image, args: list[str], *, cpu_s: float, wall_s: float) -> str:
    """Run ``tesseract IMAGE stdout ARGS`` and return its standard output.

    Raises OcrTimeout past the CPU budget (or the wall-clock backstop),
    OcrUnavailableError when tesseract or a language is missing, and
    OcrFailedError for any other failure.
    """
    with tempfile.TemporaryDirectory(prefix="docsan-ocr-") as tmp:
        path = Path(tmp) / "page.png"
        image.save(path)
        env = {**os.environ, "OMP_THREAD_LIMIT": "1"}
        cpu = max(1, round(cpu_s))
        posix = sys.platform != "win32"
        start = time.perf_counter()
        try:
            proc = subprocess.Popen(
                [_command(), str(path), "stdout", *args],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                stdin=subprocess.DEVNULL,
                env=env,
                preexec_fn=(lambda: _limit_cpu(cpu)) if posix else None,
            )
        except FileNotFoundError:
            raise OcrUnavailableError(f"OCR needed but tesseract is not installed: {INSTALL_HINT}") from None
        try:
            out, err = proc.communicate(timeout=wall_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise OcrTimeout(wall_s, "wall-clock time") from None
        elapsed = time.perf_counter() - start
    if proc.returncode in (-24, -9) or (proc.returncode < 0 and elapsed < wall_s):
        # SIGXCPU at the soft limit, SIGKILL at the hard one: the CPU budget is spent.
        raise OcrTimeout(float(cpu), "CPU time")
    message = err.decode("utf-8", "replace")
    if "Failed loading language" in message or "Error opening data file" in message:
        raise OcrUnavailableError(_missing_language(message))
    if proc.returncode != 0:
        raise OcrFailedError(message.strip().splitlines()[-1] if message.strip() else f"exit {proc.returncode}")
    return out.decode("utf-8", "replace")


def image_to_data(image: Image.Image, lang: str, *, cpu_s: float, wall_s: float) -> dict[str, list]:
    """Words with boxes and confidences, as ``pytesseract.image_to_data(..., output_type=DICT)``."""
    tsv = run(image, ["-l", lang, "-c", "tessedit_create_tsv=1", "tsv"], cpu_s=cpu_s, wall_s=wall_s)
    return pytesseract.pytesseract.file_to_dict(tsv, "\t", -1)


def image_to_osd(image: Image.Image, *, cpu_s: float, wall_s: float) -> dict[str, object]:
    """Orientation and script detection (``--psm 0``); empty when the page has too few characters."""
    try:
        text = run(image, ["--psm", "0", "-l", "osd"], cpu_s=cpu_s, wall_s=wall_s)
    except OcrFailedError:
        return {}  # "Too few characters": a blank or picture-only page
    return pytesseract.pytesseract.osd_to_dict(text)


@cache
def installed_languages() -> frozenset[str]:
    try:
        out = subprocess.run([_command(), "--list-langs"], capture_output=True, timeout=30, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return frozenset()
    return frozenset(ln.strip() for ln in out.decode("utf-8", "replace").splitlines()[1:] if ln.strip())


def _missing_language(message: str) -> str:
    """Name the language tesseract could not load: a --lang typo needs another name, not the default packs."""
    m = re.search(r"Failed loading language '([^']+)'", message)
    if m is None:
        first = next((ln for ln in message.splitlines() if "Error opening" in ln), message).strip()
        return f"OCR needed but a tesseract language is missing ({first}): {INSTALL_HINT}"
    lang = m.group(1)
    return (
        f"OCR needed but tesseract has no language data for {lang!r}: install it (Debian/Ubuntu: apt-get install "
        f"tesseract-ocr-{lang.lower().replace('_', '-')}), or choose another --lang (`tesseract --list-langs` "
        "names the installed ones), or turn OCR off with --no-ocr"
    )
