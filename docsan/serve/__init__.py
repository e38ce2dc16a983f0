"""``docsan serve``: the sanitizing, admission-controlling OpenAI-compatible gateway in front of the vLLM tiers.

The FastAPI app is built by :func:`docsan.serve.app.create_app`; importing this package
imports no web framework (its settings are :mod:`docsan.config.serve`).
"""
