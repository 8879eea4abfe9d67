"""Which tasks are at work between calls, so that batch mode knows when a round has ended.

A batch answer wakes the task that asked; that task then checks the answer (a compile validates the
plan, a probe grades the response) and asks its next call (a re-ask, the next job) or ends. The next
round's batch goes out once no task a batch answered is still at work, however long the checks take
on a loaded machine: a round split by a slow check would wait a second batch window.

One ``Rounds`` is the state of one run's batch scheduling: ``make_batch_client`` gives each batch
client its own unless handed one to share (the batch clients of one run, whose tasks ask both).
"""

from __future__ import annotations

import asyncio
import weakref


class Rounds:
    """The tasks a batch answered that have neither asked another call nor ended."""

    def __init__(self) -> None:
        self._working: weakref.WeakSet[asyncio.Task[object]] = weakref.WeakSet()
        self._watched: weakref.WeakSet[asyncio.Task[object]] = weakref.WeakSet()

    def answered(self, task: asyncio.Task[object] | None) -> None:
        """A batch has answered ``task``'s call: it is at work until it asks again or ends."""
        if task is None or task.done():
            return
        self._working.add(task)
        if task not in self._watched:
            self._watched.add(task)
            task.add_done_callback(self._working.discard)

    def waiting(self) -> None:
        """The current task waits on a call (its own, or another task's that it shares)."""
        task = asyncio.current_task()
        if task is not None:
            self._working.discard(task)

    def working(self) -> bool:
        """Whether a task a batch answered is still at work."""
        return any(not t.done() for t in list(self._working))
