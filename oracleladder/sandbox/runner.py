"""Sandboxed execution of untrusted Python source.

Layers, outermost first:

* namespaces: bubblewrap (``--unshare-net --unshare-pid --unshare-ipc --unshare-uts``,
  read-only ``/``, private tmpfs ``/tmp``, only the run's temp dir bound writable) when it
  works here; else (as root) ``unshare`` net+mount+pid namespaces with a private ``/proc``, the
  launcher mounting private ``/tmp``, ``/run``, ... and hiding the workspace; else nothing, and a
  preamble inside the child that replaces ``socket.socket`` (weak; reported as such);
* ``no_new_privs`` at every level;
* a fresh, per-run unprivileged uid (when we are root) so the child cannot write anything it
  does not own, RLIMIT_NPROC counts only this run's processes, and leftovers can be killed
  by uid afterwards;
* rlimits set by a tiny launcher just before exec: CPU, address space, process count,
  file size, open files, no core dumps;
* a wall-clock limit enforced by the parent, which kills the whole process group;
* an output cap (stdout and stderr each) read incrementally; the child is killed past it;
* an environment built from scratch (PATH, LANG, HOME=tmpdir) and ``python -I -S -B``.

The launcher runs via ``-c`` rather than ``preexec_fn`` because ``preexec_fn`` is unsafe in
threaded parents and graders run many sandboxes from threads.
"""

from __future__ import annotations

import json
import math
import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

ISOLATION_BWRAP = "bwrap (net+pid+ipc namespaces, read-only root, private /tmp)"
ISOLATION_UNSHARE = "unshare (net+mount+pid namespaces, private /proc /tmp /run; no read-only root)"
ISOLATION_NONE = "no-netns (sockets refused in-process)"

_HIDE_ENV = "ORACLELADDER_SANDBOX_HIDE"  # extra host dirs (colon-separated) to hide
# Host dirs that sandboxed code has no business reading (the workspace, home dirs), hidden by an
# empty tmpfs under bwrap and unshare; so are the parent's working directory and the checkout
# holding this package (where stores usually live), unless they are inside the Python install.
_HIDE_DEFAULT = ("/work", "/root", "/home", "/srv", "/mnt", "/media")
_CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
# Replaced by a private, empty tmpfs (host sockets and files there, e.g. /run/*.sock, unreachable).
_PRIVATE = ("/tmp", "/var/tmp", "/dev/shm", "/run")
_FORCE_ENV = "ORACLELADDER_SANDBOX"  # "bwrap" | "unshare" | "none": force a weaker level (tests)

DEFAULT_NPROC = 64
FSIZE_LIMIT = 64 * 1024 * 1024
NOFILE_LIMIT = 256
_UID_RANGE = (1_500_000, 1_900_000)
_WORLD_WRITABLE = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")


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


# --------------------------------------------------------------------------- launcher

_LAUNCHER = r"""
import ctypes, json, os, resource, sys
a = json.loads(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
def die(what):
    sys.stderr.write("sandbox launcher: %s: %s\n" % (what, os.strerror(ctypes.get_errno()))); os._exit(125)
def mount(src, dst, fstype, flags, data):
    if libc.mount(src.encode(), dst.encode(), fstype and fstype.encode(), flags, data and data.encode()) != 0:
        die("mount %s on %s" % (src, dst))
if a["mounts"] is not None:
    # own mount namespace (unshare level): empty tmpfs over each listed dir, then the run's dir
    # bound back in place through an fd opened before it was covered
    keep = os.open(a["cwd"], os.O_PATH | os.O_DIRECTORY)
    for d, mode in a["mounts"]:
        os.makedirs(d, exist_ok=True)  # may lie inside a dir hidden just before
        mount("tmpfs", d, "tmpfs", 2 | 4, "mode=" + mode)  # MS_NOSUID | MS_NODEV
    os.makedirs(a["cwd"], exist_ok=True)
    mount("/proc/self/fd/%d" % keep, a["cwd"], None, 4096, None)  # MS_BIND
    os.close(keep)
def lim(r, v):
    try:
        resource.setrlimit(r, (v, v))
    except (ValueError, OSError) as e:
        if a["strict"]:
            sys.stderr.write("sandbox launcher: setrlimit failed: %r\n" % (e,)); os._exit(125)
try:
    resource.setrlimit(resource.RLIMIT_CPU, (a["cpu"], a["cpu"] + 1))
except (ValueError, OSError):
    lim(resource.RLIMIT_CPU, a["cpu"])
lim(resource.RLIMIT_AS, a["mem"])
lim(resource.RLIMIT_FSIZE, a["fsize"])
lim(resource.RLIMIT_CORE, 0)
lim(resource.RLIMIT_NOFILE, a["nofile"])
lim(resource.RLIMIT_NPROC, a["nproc"])
if a["uid"] is not None:
    try:
        os.setgroups([])
        os.setgid(a["gid"])
        os.setuid(a["uid"])
    except OSError as e:
        sys.stderr.write("sandbox launcher: cannot drop privileges: %r\n" % (e,)); os._exit(125)
    if os.getuid() == 0 or os.geteuid() == 0:
        os._exit(125)
if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS: no setuid binary regains privileges
    die("prctl(PR_SET_NO_NEW_PRIVS)")
os.chdir(a["cwd"])
os.execve(a["python"], [a["python"], "-I", "-S", "-B", a["main"]], a["env"])
"""

_NO_SOCKET_PREAMBLE = r"""
import socket as _sb_socket, _socket as _sb__socket
def _sb_refuse(*a, **k):
    raise PermissionError(1, "network access is disabled in the sandbox")
class _SbSocket(_sb_socket.socket):
    def __init__(self, *a, **k):
        _sb_refuse()
for _sb_mod in (_sb_socket, _sb__socket):
    _sb_mod.socket = _SbSocket
    for _sb_name in ("create_connection", "create_server", "socketpair", "fromfd", "getaddrinfo",
                     "gethostbyname", "gethostbyname_ex", "gethostbyaddr"):
        if hasattr(_sb_mod, _sb_name):
            setattr(_sb_mod, _sb_name, _sb_refuse)
del _sb_mod, _sb_name
import sys as _sb_sys
_sb_sys.argv = ["prog.py"]
_sb_src = open("prog.py", encoding="utf-8").read()
_sb_g = {"__name__": "__main__", "__file__": "prog.py", "__builtins__": __builtins__}
del _sb_sys
exec(compile(_sb_src, "prog.py", "exec"), _sb_g)
"""


# --------------------------------------------------------------------------- helpers

def _world_executable(path: str) -> bool:
    """True if an arbitrary uid can traverse to and execute `path`."""
    path = os.path.realpath(path)
    try:
        st = os.stat(path)
    except OSError:
        return False
    if not (st.st_mode & stat.S_IXOTH and st.st_mode & stat.S_IROTH):
        return False
    d = os.path.dirname(path)
    while True:
        try:
            if not os.stat(d).st_mode & stat.S_IXOTH:
                return False
        except OSError:
            return False
        if d == "/":
            return True
        d = os.path.dirname(d)


_IS_ROOT = os.geteuid() == 0


def _interpreter() -> str:
    """A python an unprivileged uid can run (stdlib only is needed: the child runs with -S)."""
    candidates = [os.path.realpath(sys.executable)]
    if _IS_ROOT:
        candidates += ["/usr/bin/python3", "/usr/local/bin/python3"]
        for c in candidates:
            if _world_executable(c):
                return os.path.realpath(c)
    return candidates[0]


_PYTHON = _interpreter()

_uid_lock = threading.Lock()
_uids_in_use: set[int] = set()


def _take_uid() -> int | None:
    if not _IS_ROOT:
        return None
    with _uid_lock:
        while True:
            uid = random.randint(*_UID_RANGE)
            if uid not in _uids_in_use:
                _uids_in_use.add(uid)
                return uid


def _release_uid(uid: int | None) -> None:
    if uid is None:
        return
    # Kill anything still running as this run's uid (escaped the process group via setsid).
    try:
        subprocess.run(
            [_PYTHON, "-I", "-S", "-c", "import os, signal\ntry:\n os.kill(-1, signal.SIGKILL)\nexcept OSError: pass"],
            user=uid, group=uid, extra_groups=[], env={}, stdin=subprocess.DEVNULL,
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


def _inside(path: str, d: str) -> bool:
    return path == d or path.startswith(d.rstrip("/") + "/")


def _hidden_paths(tmpdir: str) -> list[str]:
    """Host directories replaced by an empty tmpfs inside the sandbox (never one holding the
    interpreter or the run's temp dir), outermost only."""
    extra = [p for p in os.environ.get(_HIDE_ENV, "").split(":") if p]
    keep = [os.path.realpath(_PYTHON), tmpdir, os.path.realpath(tempfile.gettempdir())]
    prefixes = {os.path.realpath(p) for p in (sys.base_prefix, sys.prefix, os.path.dirname(os.__file__))}
    local = [p for p in (os.getcwd(), _CHECKOUT) if not any(_inside(os.path.realpath(p), x) for x in prefixes)]
    out: list[str] = []
    for p in sorted({os.path.realpath(p) for p in list(_HIDE_DEFAULT) + extra + local}, key=len):
        if p == "/" or not os.path.isdir(p) or any(_inside(p, h) for h in out + list(_PRIVATE)):
            continue
        if any(_inside(k, p) for k in keep):
            continue
        out.append(p)
    return out


def _private_paths() -> list[str]:
    return [p for p in _PRIVATE if os.path.isdir(p) and not os.path.islink(p)
            and not _inside(os.path.realpath(_PYTHON), p)]


def _bwrap_prefix(tmpdir: str) -> list[str]:
    hide: list[str] = []
    for p in _hidden_paths(tmpdir) + [p for p in _private_paths() if p != "/dev/shm"]:
        hide += ["--tmpfs", p]
    args = [
        shutil.which("bwrap") or "bwrap", "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
        "--die-with-parent", "--new-session",
        "--ro-bind", "/", "/",
        *hide,
        "--dev", "/dev", "--proc", "/proc",
        "--bind", tmpdir, tmpdir, "--chdir", tmpdir,
    ]
    if _IS_ROOT:
        args += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SYS_RESOURCE"]
    return args + ["--"]


# --mount-proc: a /proc of the new pid namespace (other processes and their command lines unseen)
_UNSHARE_PREFIX = ["unshare", "--net", "--ipc", "--uts", "--mount", "--pid", "--fork", "--kill-child",
                   "--mount-proc", "--"]

_UNSHARE_SIGKILL_QUIRK = "unshare: sigprocmask unblock failed: Invalid argument\n"

_probe_lock = threading.Lock()
_probed: str | None = None  # the isolation level


def _probe_ok(cmd: list[str]) -> bool:
    try:
        r = subprocess.run(cmd, env={"PATH": "/usr/bin:/bin"}, stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return False
    return r.returncode == 0 and r.stdout.strip() == b"ok"


_PROBE_CODE = (
    "import socket\ntry:\n socket.create_connection(('127.0.0.1', 9), timeout=1)\nexcept OSError:\n"
    " print('ok')\n"
)


def _command(isolation: str, tmpdir: str, main: str, *, uid: int | None = None, cpu: int = 10,
             memory_mb: int = 512, nproc: int = DEFAULT_NPROC) -> tuple[list[str], dict[str, str]]:
    """The command line and environment that run `main` (in `tmpdir`) at `isolation`."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
           "HOME": tmpdir, "TMPDIR": tmpdir, "PYTHONIOENCODING": "utf-8"}
    mounts = None
    if isolation == ISOLATION_UNSHARE:
        mounts = [(p, "0755") for p in _hidden_paths(tmpdir)] + [(p, "1777") for p in _private_paths()]
    largs = {
        "cpu": cpu, "mem": int(memory_mb) * 1024 * 1024, "fsize": FSIZE_LIMIT,
        "nofile": NOFILE_LIMIT, "nproc": int(nproc), "uid": uid, "gid": uid,
        "cwd": tmpdir, "python": _PYTHON, "main": main, "env": env,
        "strict": _IS_ROOT, "mounts": mounts,
    }
    inner = [_PYTHON, "-I", "-S", "-B", "-c", _LAUNCHER, json.dumps(largs)]
    if isolation == ISOLATION_BWRAP:
        return _bwrap_prefix(tmpdir) + inner, env
    if isolation == ISOLATION_UNSHARE:
        return _UNSHARE_PREFIX + inner, env
    return inner, env


def _probe() -> str:
    global _probed
    with _probe_lock:
        if _probed is not None:
            return _probed
        force = os.environ.get(_FORCE_ENV, "").strip().lower()
        result = ISOLATION_NONE
        d = tempfile.mkdtemp(prefix="olsbx-probe-")
        try:
            py = [_PYTHON, "-I", "-S", "-c", _PROBE_CODE]
            if force in ("", "bwrap") and shutil.which("bwrap") and _probe_ok(_bwrap_prefix(d) + py):
                result = ISOLATION_BWRAP
            elif force in ("", "bwrap", "unshare") and _IS_ROOT and shutil.which("unshare"):
                with open(os.path.join(d, "probe.py"), "w", encoding="utf-8") as f:
                    f.write(_PROBE_CODE)
                if _probe_ok(_command(ISOLATION_UNSHARE, d, "probe.py")[0]):
                    result = ISOLATION_UNSHARE
        finally:
            shutil.rmtree(d, ignore_errors=True)
        _probed = result
        return result


def isolation_level() -> str:
    """The isolation this machine gives sandboxed code (probed once, then cached)."""
    return _probe()


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

    isolation = _probe()
    t0 = time.monotonic()
    tmpdir = os.path.realpath(tempfile.mkdtemp(prefix="olsbx-"))
    uid = _take_uid()
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
                f.write(_NO_SOCKET_PREAMBLE)
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
        cmd, env = _command(isolation, tmpdir, main, uid=uid, cpu=cpu, memory_mb=memory_mb, nproc=nproc)

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
            _release_uid(uid)
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
        _release_uid(uid)
        shutil.rmtree(tmpdir, ignore_errors=True)
