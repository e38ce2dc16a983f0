"""Framework adapters, each an optional extra; import the one you use.

- :mod:`docsan.adapters.langchain` (``pip install 'docsan[langchain]'``):
  ``DocsanLoader``, ``DocsanTransformer``.
- :mod:`docsan.adapters.llamaindex` (``pip install 'docsan[llamaindex]'``):
  ``DocsanReader``, ``DocsanNodeParser``.

Both give the chunks of :func:`docsan.chunk` with the same metadata
(:func:`chunk_metadata`), so a pipeline can move between frameworks.
"""

from docsan.adapters.metadata import chunk_metadata, removal_summary

__all__ = ["chunk_metadata", "removal_summary"]
