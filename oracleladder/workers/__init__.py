"""Worker processes for the work that can hang or crash (SymPy on an adversarial answer): each call
with a hard time limit, a crashed worker's call a failure, never a result.

The pool knows no task of its own. The layer that owns a task registers it by name
(`register_task`): the verifier its grading (`oracleladder.verify.pool`), the validators the family
check (`oracleladder.validators`). A run makes one `WorkerPool` and hands it to its domain
(`Domain.pool`), whose checks and grading call those layers' functions with it.
"""

from .pool import (
    TaskFailed,
    TaskRaised,
    TaskTimedOut,
    WorkerDied,
    WorkerPool,
    WorkersUnavailable,
    register_task,
    registered,
    shared_pool,
)

__all__ = ["TaskFailed", "TaskRaised", "TaskTimedOut", "WorkerDied", "WorkerPool", "WorkersUnavailable",
           "register_task", "registered", "shared_pool"]
