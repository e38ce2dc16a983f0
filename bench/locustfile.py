"""Locust users sending the replay mix (bench/replay_traffic.py) to ``docsan serve``; bench/load.py runs it.

The requests come from the JSON-lines file named by ``DOCSAN_LOAD_REQUESTS`` (one
``{"body", "headers", "by_design"}`` per line). What counts as an error (issue 11): anything but
200, 202, a 400 the request was built to get (``max_tokens`` 0) and 503 "memory limit" (docsan's
admission saying "not now"); those outcomes are successes, each under its own name, so the
statistics say how many of each there were.
"""

from __future__ import annotations

import itertools
import json
import os
import random

from locust import HttpUser, between, task

with open(os.environ["DOCSAN_LOAD_REQUESTS"], encoding="utf-8") as _f:
    REQUESTS = [json.loads(line) for line in _f if line.strip()]
_START = itertools.count()


class ReplayUser(HttpUser):
    # A person reads the answer before the next question.
    wait_time = between(0.5, 2.0)

    def on_start(self) -> None:
        # Each user walks the mix from its own place, so the users do not send the same request at once.
        offset = next(_START) * 7 + random.randrange(len(REQUESTS))
        self.order = itertools.islice(itertools.cycle(REQUESTS), offset, None)

    @task
    def chat(self) -> None:
        r = next(self.order)
        with self.client.post(
            "/v1/chat/completions", json=r["body"], headers=r["headers"], catch_response=True, name="chat",
            timeout=600,
        ) as resp:  # fmt: skip
            if resp.status_code in (200, 202):
                resp.success()
            elif resp.status_code == 400 and r["by_design"]:
                resp.request_meta["name"] = "chat (400 by design)"
                resp.success()
            elif resp.status_code == 503 and "memory limit" in resp.text:
                resp.request_meta["name"] = "chat (503 memory limit)"
                resp.success()
            else:
                resp.failure(f"{resp.status_code}: {resp.text[:200]}")
