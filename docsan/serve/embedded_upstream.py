"""The embedded default upstream: vLLM's OpenAI server (CPU build, bundled SmolLM2) as a child process.

When no tier has a ``base_url``, ``docsan serve`` starts ``python -m vllm.entrypoints.openai.api_server``
itself on a free loopback port, with the ``[runner.embedded]`` engine settings (the same ones
``docsan ask``'s in-process engine uses), and points every tier at it. A child process rather than
an engine inside the gateway, so the gateway's path is the production one (HTTP, /metrics polling,
/health), an engine crash is an "upstream down" the gateway reports instead of its own death, and
the gateway's event loop never shares the GIL with the model. (The ``vllm`` console script fails
in vLLM's CPU build; the module entry point works.)

The child gets its own session (a terminal's Ctrl-C reaches the gateway, which stops it in order)
and ``PR_SET_PDEATHSIG``, so it is ended even if the gateway is killed. Its output goes to a log
file under ``$DOCSAN_HOME/serve/``; a start that fails says so with the log's last lines.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

from docsan.config.runner import EmbeddedConfig
from docsan.paths import docsan_home
from docsan.runner.backends.embedded import embedded_engine_kwargs
from docsan.runner.embedded_model import embedded_model_dir
from docsan.runner.errors import RunnerError

# The model id the child serves (what /v1/models lists and clients may send).
SERVED_NAME = "SmolLM2-135M-Instruct"
_PR_SET_PDEATHSIG = 1


def free_port() -> int:
    """A port nobody listens on now (bound and released; the child binds it a moment later)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_args(model_dir: Path, cfg: EmbeddedConfig, port: int) -> list[str]:
    """The command line: the embedded engine's arguments as ``vllm serve`` flags."""
    args = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--host", "127.0.0.1", "--port", str(port)]
    args += ["--served-model-name", SERVED_NAME, "--disable-uvicorn-access-log"]
    for key, value in embedded_engine_kwargs(model_dir, cfg).items():
        flag = "--" + key.replace("_", "-")
        if value is True:
            args.append(flag)
        elif value is not False:
            args += [flag, str(value)]
    return args


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    os.setsid()
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})  # as the main block may block them
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


class EmbeddedServer:
    """A vLLM OpenAI server child process on a free loopback port."""

    def __init__(
        self,
        cfg: EmbeddedConfig | None = None,
        *,
        model_dir: Path | None = None,
        extra_args: Sequence[str] = (),
        port: int | None = None,
    ) -> None:
        self.cfg = cfg or EmbeddedConfig()
        # More `vllm serve` flags (the replay bench caps a missing max_tokens server-wide with one).
        self.extra_args = list(extra_args)
        self.model_dir = model_dir or embedded_model_dir()
        # A given port: a server started again where a stopped one was (the fault tests' restart).
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        logs = docsan_home() / "serve"
        logs.mkdir(parents=True, exist_ok=True)
        self.log_path = logs / f"vllm-{self.port}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> EmbeddedServer:
        env = {**os.environ, "VLLM_LOGGING_LEVEL": os.environ.get("VLLM_LOGGING_LEVEL", "INFO")}
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                server_args(self.model_dir, self.cfg, self.port) + self.extra_args,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                preexec_fn=_die_with_parent,
            )
        return self

    def wait_ready(self, timeout_s: float) -> None:
        """Block until /health answers; raise :class:`RunnerError` with the log's tail if the child dies or is late."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc is None or self.proc.poll() is not None:
                raise RunnerError(f"the embedded vLLM server exited during start-up: {self._tail()}")
            try:
                if httpx.get(self.url + "/health", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        self.stop()
        raise RunnerError(f"the embedded vLLM server did not answer within {timeout_s:g} s: {self._tail()}")

    def _tail(self) -> str:
        try:
            lines = self.log_path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
        except OSError:
            return f"no log at {self.log_path}"
        tail = " | ".join(ln.strip() for ln in lines[-3:])
        return f"{tail} (log: {self.log_path})"

    def stop(self, timeout_s: float = 30.0) -> None:
        """SIGTERM the child's process group (its engine core and worker too), SIGKILL what is left after."""
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                continue
            # The server is gone; its engine core and worker normally went with it, any straggler goes now.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            return


if __name__ == "__main__":  # python -m docsan.serve.embedded_upstream [MAX_MODEL_LEN]: start one, print its URL
    cfg = EmbeddedConfig(max_model_len=int(sys.argv[1])) if len(sys.argv) > 1 else EmbeddedConfig()
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    server = EmbeddedServer(cfg).start()
    try:
        server.wait_ready(timeout_s=900)
        print(server.url, flush=True)
        signal.sigwait({signal.SIGINT, signal.SIGTERM})
    finally:
        server.stop()
