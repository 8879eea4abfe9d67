"""Sandboxed execution of untrusted Python source: ``run`` a program and tell what happened.

Layers, outermost first:

* namespaces, and a launcher setting rlimits and ``no_new_privs`` just before exec (`isolation`);
* a fresh, per-run unprivileged uid (when we are root), its leftovers killed and removed afterwards (`uids`);
* a wall-clock limit enforced here, which kills the whole process group;
* an output cap (stdout and stderr each) read incrementally; the child is killed past it.
"""

from __future__ import annotations

import math
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from .isolation import (
    DEFAULT_NPROC,
    ISOLATION_BWRAP,
    ISOLATION_NONE,
    ISOLATION_UNSHARE,
    NO_SOCKET_PREAMBLE,
    command,
    isolation_level,
)
from .uids import release_uid, take_uid


@dataclass
class SandboxResult:
    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool
    killed_reason: str | None  # None | "timeout" | "cpu_limit" | "memory_limit" | "output_limit" | "signal SIGxxx"
    isolation: str
    duration_s: float

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out and self.killed_reason is None


_UNSHARE_SIGKILL_QUIRK = "unshare: sigprocmask unblock failed: Invalid argument\n"

def _reader(fd: int, cap: int, out: bytearray, over: threading.Event, on_over) -> None:
    try:
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            room = cap - len(out)
            if room > 0:
                out += chunk[:room]
            if len(chunk) > max(room, 0):
                over.set()
                on_over()
                break
    except OSError:
        pass


def _killpg(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


# --------------------------------------------------------------------------- run

def run(
    code: str,
    *,
    stdin: str = "",
    timeout_s: float = 5,
    cpu_s: float | None = None,
    memory_mb: int = 512,
    max_output: int = 1_000_000,
    files: dict[str, str] | None = None,
    nproc: int = DEFAULT_NPROC,
    pass_fds: Sequence[int] = (),
) -> SandboxResult:
    """Run Python `code` as a program in the sandbox and return what happened.

    `files` are written (relative paths) into the run's temp directory, which is also the
    working directory and HOME; it is removed afterwards. `max_output` caps stdout and
    stderr (bytes, each); output past it is dropped and the child is killed. `pass_fds` are
    handed to the program at the same numbers (e.g. pipes to another sandbox) and closed here
    once it has started, so the other end sees EOF when the program ends.
    """
    owned = list(pass_fds)

    def close_owned() -> None:
        while owned:
            os.close(owned.pop())

    isolation = isolation_level()
    t0 = time.monotonic()
    tmpdir = os.path.realpath(tempfile.mkdtemp(prefix="olsbx-"))
    uid = take_uid()
    proc = None
    try:
        # ---- populate the temp dir
        for rel, content in (files or {}).items():
            target = os.path.realpath(os.path.join(tmpdir, rel))
            if os.path.commonpath([target, tmpdir]) != tmpdir or target == tmpdir:
                raise ValueError(f"sandbox file path escapes the temp dir: {rel!r}")
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "w", encoding="utf-8") as f:
                f.write(content)
        with open(os.path.join(tmpdir, "prog.py"), "w", encoding="utf-8") as f:
            f.write(code)
        main = "prog.py"
        if isolation == ISOLATION_NONE:
            with open(os.path.join(tmpdir, "_sandbox_main.py"), "w", encoding="utf-8") as f:
                f.write(NO_SOCKET_PREAMBLE)
            main = "_sandbox_main.py"
        if uid is not None:
            for dirpath, _dirnames, filenames in os.walk(tmpdir):
                os.chown(dirpath, uid, uid)
                for n in filenames:
                    os.chown(os.path.join(dirpath, n), uid, uid)
        os.chmod(tmpdir, 0o700)

        # a second past the wall clock by default: a busy loop ends by the wall clock ("timeout")
        # instead of racing it; the CPU limit stays the backstop against multi-threaded burners
        cpu = max(1, math.ceil(cpu_s if cpu_s is not None else timeout_s + 1))
        cmd, env = command(isolation, tmpdir, main, uid=uid, cpu=cpu, memory_mb=memory_mb, nproc=nproc)

        proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=env, cwd=tmpdir, start_new_session=True, close_fds=True, pass_fds=tuple(pass_fds),
        )
        close_owned()
        assert proc.stdin and proc.stdout and proc.stderr  # all three are pipes
        to_child = proc.stdin
        out, err = bytearray(), bytearray()
        over = threading.Event()
        kill = lambda: _killpg(proc.pid)  # noqa: E731
        readers = [
            threading.Thread(target=_reader, args=(proc.stdout.fileno(), max_output, out, over, kill), daemon=True),
            threading.Thread(target=_reader, args=(proc.stderr.fileno(), max_output, err, over, kill), daemon=True),
        ]
        for t in readers:
            t.start()

        def _feed() -> None:
            try:
                if stdin:
                    to_child.write(stdin.encode("utf-8"))
                to_child.close()
            except (BrokenPipeError, OSError, ValueError):
                pass

        feeder = threading.Thread(target=_feed, daemon=True)
        feeder.start()

        timed_out = False
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            _killpg(proc.pid)
            proc.wait()
        _killpg(proc.pid)  # stragglers in the group
        if uid is not None:
            release_uid(uid)
            uid = None
        for t in readers:
            t.join(timeout=2)
        feeder.join(timeout=1)

        rc = proc.returncode
        # bwrap reports a child killed by a signal as 128+N
        if isolation == ISOLATION_BWRAP and rc is not None and 128 < rc < 128 + 65:
            rc = -(rc - 128)
        stdout_s = out.decode("utf-8", errors="replace")
        stderr_s = err.decode("utf-8", errors="replace")
        if isolation == ISOLATION_UNSHARE and rc == 1 and stderr_s.endswith(_UNSHARE_SIGKILL_QUIRK):
            # the child (pid 1 of its namespace) died of SIGKILL; unshare cannot re-raise that
            # signal on itself and exits 1 with this line instead
            rc, stderr_s = -signal.SIGKILL, stderr_s[: -len(_UNSHARE_SIGKILL_QUIRK)]

        reason: str | None = None
        if timed_out:
            reason = "timeout"
        elif over.is_set():
            reason = "output_limit"
        elif rc is not None and rc < 0:
            sig = -rc
            if sig == signal.SIGXCPU or (sig == signal.SIGKILL and cpu <= timeout_s):
                reason = "cpu_limit" if sig == signal.SIGXCPU else "signal SIGKILL (cpu hard limit?)"
            else:
                try:
                    reason = f"signal {signal.Signals(sig).name}"
                except ValueError:
                    reason = f"signal {sig}"
        elif rc not in (0, None) and "MemoryError" in stderr_s[-4000:]:
            reason = "memory_limit"
        return SandboxResult(
            returncode=rc, stdout=stdout_s, stderr=stderr_s, timed_out=timed_out,
            killed_reason=reason, isolation=isolation, duration_s=time.monotonic() - t0,
        )
    finally:
        close_owned()
        if proc is not None:
            if proc.poll() is None:
                _killpg(proc.pid)
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    pass
            for s in (proc.stdin, proc.stdout, proc.stderr):
                try:
                    if s:
                        s.close()
                except OSError:
                    pass
        release_uid(uid)
        shutil.rmtree(tmpdir, ignore_errors=True)
