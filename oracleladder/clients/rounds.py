"""Which tasks are at work between calls, so that batch mode knows when a round has ended.

A batch answer wakes the task that asked; that task then checks the answer (a compile validates the
plan, a probe grades the response) and asks its next call (a re-ask, the next job) or ends. The next
round's batch goes out once no task a batch answered is still at work, however long the checks take
on a loaded machine: a round split by a slow check would wait a second batch window.
"""

from __future__ import annotations

import asyncio
import weakref

# tasks a batch answered that have neither asked another call nor ended
_working: weakref.WeakSet[asyncio.Task[object]] = weakref.WeakSet()
_watched: weakref.WeakSet[asyncio.Task[object]] = weakref.WeakSet()


def answered(task: asyncio.Task[object] | None) -> None:
    """A batch has answered ``task``'s call: it is at work until it asks again or ends."""
    if task is None or task.done():
        return
    _working.add(task)
    if task not in _watched:
        _watched.add(task)
        task.add_done_callback(_working.discard)


def waiting() -> None:
    """The current task waits on a call (its own, or another task's that it shares)."""
    task = asyncio.current_task()
    if task is not None:
        _working.discard(task)


def working() -> bool:
    """Whether a task of the running loop that a batch answered is still at work."""
    loop = asyncio.get_running_loop()
    return any(not t.done() and t.get_loop() is loop for t in list(_working))
