#!/usr/bin/env bash
# Builds .venv-docling/: docling-core's HybridChunker for bench/bench_chunk.py, kept out of the
# project's venv because docling-core pins typer below 0.27 (docsan's command runs on a newer one).
# Only the chunker is needed: the documents come from docsan as JSON, so no model is downloaded.
set -euo pipefail
cd "$(dirname "$0")/.."
V=.venv-docling
PY=${PYTHON:-python3}
rm -rf "$V"
"$PY" -m venv "$V"
"$V/bin/pip" install -q --upgrade pip
"$V/bin/pip" install -q "docling-core[chunking]==2.104.0"
touch "$V/.ready"
echo "bench: Docling chunker environment ready in $V"
