"""The exit statuses of every ``docsan`` command, defined once (the README's table is this list).

A script that runs docsan needs to tell "nothing was done, fix the call" from
"this file is bad" from "the output is there but incomplete"; each gets its
own number, the same in every command.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    # Everything asked for was done.
    OK = 0
    # An input could not be read (empty, damaged, encrypted, unsupported, undecodable) or a
    # request failed at run time; in a batch, the other inputs were still written.
    FAILED = 1
    # Bad arguments or configuration: nothing was read or written.
    USAGE = 2
    # A request was refused before reaching an engine (`ask`'s guard, a `plan` that cannot be served).
    REFUSED = 3
    # The output was written but is incomplete, and stderr says where (`FILE: page N: OCR gave
    # up after S s`): OCR gave up on a page, a page without text layer under --no-ocr, a limit
    # that cut the document. Lower than FAILED in a batch: a failed input wins.
    PARTIAL = 4
    # Interrupted (Ctrl-C): the shell's convention, 128 + SIGINT.
    INTERRUPTED = 130
