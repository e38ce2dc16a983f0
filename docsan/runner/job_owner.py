"""Who runs a claimed job, and whether that process still lives.

A job marked ``running`` by a process that was hard-killed (SIGKILL, the OOM
killer, a power cut) would stay ``running`` for ever: nothing else ever
touches it. So a claim records its owner, ``host:pid:start``, and a later
gateway or ``docsan queue`` finds the jobs whose owner is gone
(:meth:`docsan.runner.queue.DeferredQueue.recover_orphans`).

``start`` is the kernel's start time of the process (``/proc/PID/stat``,
clock ticks since boot): a pid the system gave to a new process since does
not pass for the old owner. A zombie (killed, not yet reaped by its parent)
counts as gone. Where ``/proc`` is missing, only the pid is checked. An owner
on another host cannot be checked from here and counts as alive: the queue
is a local SQLite file, which is not meant to be shared across machines.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path


def _stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command name (state first), or None where unreadable."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    return text.rsplit(")", 1)[1].split()  # the name, in parentheses, may hold spaces


def _start(pid: int) -> str:
    fields = _stat(pid)
    return fields[19] if fields and len(fields) > 19 else ""  # field 22, starttime


def current_owner() -> str:
    """This process, as a claim records it."""
    pid = os.getpid()
    return f"{socket.gethostname()}:{pid}:{_start(pid)}"


def describe(owner: str | None) -> str:
    if not owner:
        return "a runner that recorded no process (an older docsan)"
    host, pid, _ = owner.rsplit(":", 2)
    return f"process {pid} on {host}"


def owner_alive(owner: str | None) -> bool:
    """False when the process that claimed a job is gone; an owner that recorded nothing counts as gone."""
    if not owner:
        return False
    host, pid_text, start = owner.rsplit(":", 2)
    if host != socket.gethostname():
        return True
    pid = int(pid_text)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # alive, another user's
    fields = _stat(pid)
    if fields is None:
        return True
    if fields[0] in ("Z", "X"):
        return False
    return not start or fields[19] == start
