"""The deferred-job drainer stops with the gateway: a real Gateway, its real job queue, no upstream (fast)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from docsan.serve.embedded_upstream import free_port
from docsan.serve.gateway import Gateway, build_snapshot
from tests.serve_support import gateway_config


def test_the_drainer_ends_when_cancelled_as_it_is_woken(tmp_path: Path) -> None:
    """stop() cancels the drainer in the loop iteration a release or a new job wakes it: the drainer must end (on
    3.11 ``asyncio.wait_for`` dropped that cancellation, cpython gh-86296, and stop() then waited for ever)."""

    async def run() -> None:
        config = gateway_config(tmp_path, f"http://127.0.0.1:{free_port()}")
        gw = Gateway(await asyncio.to_thread(build_snapshot, config, None))
        await gw.start()
        drainer = next(t for t in gw._tasks if t.get_name() == "docsan-drainer")
        try:
            for _ in range(500):  # parked on its wakeup once the (empty) queue is read
                if gw.drain_wakeup._waiters:  # type: ignore[attr-defined]
                    break
                await asyncio.sleep(0.01)
            assert gw.drain_wakeup._waiters, "the drainer never waited for its wakeup"  # type: ignore[attr-defined]
            gw.drain_wakeup.set()
            drainer.cancel()
            done, _ = await asyncio.wait([drainer], timeout=10)
            assert drainer in done and drainer.cancelled()
        finally:
            drainer.cancel()  # the old code carried on: let stop() end in any case
            await gw.stop()

    asyncio.run(run())
