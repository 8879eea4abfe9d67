"""A fresh, unprivileged uid per run (when we are root): the child cannot write anything it does not own,
RLIMIT_NPROC counts only this run's processes, and what it leaves (processes that escaped the process group,
files in world-writable dirs) is removed by uid afterwards."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import threading
from typing import Any

from .isolation import IS_ROOT, PYTHON

_UID_RANGE = (1_500_000, 1_900_000)
_WORLD_WRITABLE = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")

_uid_lock = threading.Lock()
_uids_in_use: set[int] = set()


_SETPRIV, _KILL = shutil.which("setpriv"), shutil.which("kill")


def _killer(uid: int) -> tuple[list[str], dict[str, Any]]:
    """The command, and `subprocess` arguments, that send SIGKILL to every process of `uid`."""
    if _SETPRIV and _KILL:
        return [_SETPRIV, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--", _KILL, "-9", "-1"], {}
    return ([PYTHON, "-I", "-S", "-c", "import os, signal\ntry:\n os.kill(-1, signal.SIGKILL)\nexcept OSError: pass"],
            {"user": uid, "group": uid, "extra_groups": []})


def take_uid() -> int | None:
    if not IS_ROOT:
        return None
    with _uid_lock:
        while True:
            uid = random.randint(*_UID_RANGE)
            if uid not in _uids_in_use:
                _uids_in_use.add(uid)
                return uid


def release_uid(uid: int | None) -> None:
    if uid is None:
        return
    # Kill anything still running as this run's uid (escaped the process group via setsid): a
    # kill(-1) as that uid. setpriv and kill(1) start by vfork; subprocess's own `user=` cannot,
    # so it forks the whole (large) caller: 30 ms of CPU a run against 3.
    cmd, as_uid = _killer(uid)
    try:
        subprocess.run(
            cmd, **as_uid, env={}, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=10, cwd="/",
        )
    except Exception:
        pass
    # Without a read-only root, world-writable dirs stay writable: remove what this uid left there.
    for d in _WORLD_WRITABLE:
        try:
            with os.scandir(d) as it:
                for e in it:
                    try:
                        if e.stat(follow_symlinks=False).st_uid == uid:
                            if e.is_dir(follow_symlinks=False):
                                shutil.rmtree(e.path, ignore_errors=True)
                            else:
                                os.unlink(e.path)
                    except OSError:
                        pass
        except OSError:
            pass
    with _uid_lock:
        _uids_in_use.discard(uid)
