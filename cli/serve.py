"""``docsan serve``: run the gateway (FastAPI under uvicorn) in front of the tiers' vLLM servers."""

from __future__ import annotations

import logging
from typing import Annotated

import typer

from docsan.errors import DocsanError

from .common import ConfigOption, TemplateMarkersOption, err_console, fail, get_config, template_marker_options
from .exit_codes import ExitCode


def serve(
    config_file: ConfigOption = None,
    host: Annotated[
        str | None, typer.Option("--host", help="Address to listen on (default: serve.host, 127.0.0.1).")
    ] = None,
    port: Annotated[
        int | None, typer.Option("--port", help="Port to listen on (default: serve.port, 8080; 0: any free one).")
    ] = None,
    template_markers: TemplateMarkersOption = None,
) -> None:
    """Serve an OpenAI-compatible /v1/chat/completions that cleans, counts and admits every request.

    The --config file is re-read on SIGHUP (and POST /admin/reload).

    With no tier base_url, the embedded vLLM CPU server (bundled SmolLM2) is started as the upstream.
    """
    import asyncio  # here, with uvicorn: `docsan clean` never needs an event loop
    import signal

    import uvicorn

    from docsan.serve.app import create_app

    # Flags over the file, at start and at every reload.
    options = template_marker_options(template_markers)
    config = get_config(config_file).with_overrides(options=options)
    logging.basicConfig(level=logging.INFO, format="docsan: %(levelname)s %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per poll otherwise
    try:
        app = create_app(config, config_path=config_file, options=options)
    except DocsanError as err:
        fail(str(err), ExitCode.USAGE)
    gw = app.state.gateway
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            host=host or config.serve.host,
            port=config.serve.port if port is None else port,
            log_level="warning",
            access_log=False,
            lifespan="on",
        )
    )

    async def reload_on_sighup() -> None:
        try:
            result = await gw.reload()
        except DocsanError as err:
            err_console().print(f"docsan: reload refused, the previous configuration keeps serving: {err}")
            return
        err_console().print(
            f"docsan: reloaded: {len(result['changed'])} change(s), "
            f"{len(result['restart_required'])} need an engine restart"
        )

    async def main() -> None:
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGHUP, lambda: asyncio.ensure_future(reload_on_sighup()))
        task = asyncio.create_task(server.serve())
        while not server.started and not task.done():
            await asyncio.sleep(0.05)
        if server.started:
            sock = server.servers[0].sockets[0].getsockname()
            err_console().print(f"docsan: serving on http://{sock[0]}:{sock[1]} (OpenAI API at /v1)", highlight=False)
        await task

    # The loop uvicorn itself would pick (uvloop when installed: the serve extra's uvicorn[standard]). Our own
    # main() runs the server, for the SIGHUP handler and the "serving on" line, so asyncio.run's default loop would
    # otherwise be used, and the pure-Python loop costs each request a few tenths of a millisecond more.
    with asyncio.Runner(loop_factory=server.config.get_loop_factory()) as runner:
        runner.run(main())
    if not server.started:
        fail("the gateway could not start (see the lines above)")
