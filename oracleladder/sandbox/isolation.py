"""Which isolation this machine gives sandboxed code, and the command line that runs a program under it.

Levels, strongest first (probed once, then cached; ``ORACLELADDER_SANDBOX`` forces a weaker one):
bubblewrap (``--unshare-net --unshare-pid --unshare-ipc --unshare-uts``, read-only ``/``, private tmpfs
``/tmp``, only the run's temp dir bound writable); else (as root) ``unshare`` net+mount+pid namespaces with a
private ``/proc``, the launcher mounting private ``/tmp``, ``/run``, ... and hiding the workspace; else
nothing, and a preamble inside the child that replaces ``socket.socket`` (weak; reported as such).

Under every level a tiny launcher, run via ``-c`` rather than ``preexec_fn`` (unsafe in threaded parents,
and graders run many sandboxes from threads), sets the rlimits (CPU, address space, process count, file
size, open files, no core dumps), drops to the run's uid, sets ``no_new_privs`` and execs ``python -I -S -B``
in an environment built from scratch (PATH, LANG, HOME=tmpdir).
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
import threading

ISOLATION_BWRAP = "bwrap (net+pid+ipc namespaces, read-only root, private /tmp)"
ISOLATION_UNSHARE = "unshare (net+mount+pid namespaces, private /proc /tmp /run; no read-only root)"
ISOLATION_NONE = "no-netns (sockets refused in-process)"

HIDE_ENV = "ORACLELADDER_SANDBOX_HIDE"  # extra host dirs (colon-separated) to hide
# Host dirs that sandboxed code has no business reading (the workspace, home dirs), hidden by an
# empty tmpfs under bwrap and unshare; so are the parent's working directory and the checkout
# holding this package (where stores usually live), unless they are inside the Python install.
_HIDE_DEFAULT = ("/work", "/root", "/home", "/srv", "/mnt", "/media")
_CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
# Replaced by a private, empty tmpfs (host sockets and files there, e.g. /run/*.sock, unreachable).
_PRIVATE = ("/tmp", "/var/tmp", "/dev/shm", "/run")
FORCE_ENV = "ORACLELADDER_SANDBOX"  # "bwrap" | "unshare" | "none": force a weaker level (tests)

DEFAULT_NPROC = 64
FSIZE_LIMIT = 64 * 1024 * 1024
NOFILE_LIMIT = 256


# --------------------------------------------------------------------------- launcher

_LAUNCHER = r"""
import ctypes, os, resource, sys
# plain strings in command()'s order: json (re, enum) would cost every run 6 ms of imports here
cpu, mem, fsize, nofile, nproc = map(int, sys.argv[1:6])
uid = int(sys.argv[6]) if sys.argv[6] else None
cwd, python, main, strict, own_mounts = sys.argv[7:12]
libc = ctypes.CDLL(None, use_errno=True)
def die(what):
    sys.stderr.write("sandbox launcher: %s: %s\n" % (what, os.strerror(ctypes.get_errno()))); os._exit(125)
def mount(src, dst, fstype, flags, data):
    if libc.mount(src.encode(), dst.encode(), fstype and fstype.encode(), flags, data and data.encode()) != 0:
        die("mount %s on %s" % (src, dst))
if own_mounts:
    # own mount namespace (unshare level): empty tmpfs over each listed dir ("MODE:DIR"), then the
    # run's dir bound back in place through an fd opened before it was covered
    keep = os.open(cwd, os.O_PATH | os.O_DIRECTORY)
    for mode, d in (m.split(":", 1) for m in sys.argv[12:]):
        os.makedirs(d, exist_ok=True)  # may lie inside a dir hidden just before
        mount("tmpfs", d, "tmpfs", 2 | 4, "mode=" + mode)  # MS_NOSUID | MS_NODEV
    os.makedirs(cwd, exist_ok=True)
    mount("/proc/self/fd/%d" % keep, cwd, None, 4096, None)  # MS_BIND
    os.close(keep)
def lim(r, v):
    try:
        resource.setrlimit(r, (v, v))
    except (ValueError, OSError) as e:
        if strict:
            sys.stderr.write("sandbox launcher: setrlimit failed: %r\n" % (e,)); os._exit(125)
try:
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
except (ValueError, OSError):
    lim(resource.RLIMIT_CPU, cpu)
lim(resource.RLIMIT_AS, mem)
lim(resource.RLIMIT_FSIZE, fsize)
lim(resource.RLIMIT_CORE, 0)
lim(resource.RLIMIT_NOFILE, nofile)
lim(resource.RLIMIT_NPROC, nproc)
if uid is not None:
    try:
        os.setgroups([])
        os.setgid(uid)  # the run's group is its uid
        os.setuid(uid)
    except OSError as e:
        sys.stderr.write("sandbox launcher: cannot drop privileges: %r\n" % (e,)); os._exit(125)
    if os.getuid() == 0 or os.geteuid() == 0:
        os._exit(125)
if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS: no setuid binary regains privileges
    die("prctl(PR_SET_NO_NEW_PRIVS)")
os.chdir(cwd)
os.environ.pop("PWD", None)  # bwrap sets it: the program's environment is command()'s alone, as the launcher's
os.execv(python, [python, "-I", "-S", "-B", main])
"""

NO_SOCKET_PREAMBLE = r"""
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


IS_ROOT = os.geteuid() == 0


def _interpreter() -> str:
    """A python an unprivileged uid can run (stdlib only is needed: the child runs with -S)."""
    candidates = [os.path.realpath(sys.executable)]
    if IS_ROOT:
        candidates += ["/usr/bin/python3", "/usr/local/bin/python3"]
        for c in candidates:
            if _world_executable(c):
                return os.path.realpath(c)
    return candidates[0]


PYTHON = _interpreter()

def _inside(path: str, d: str) -> bool:
    return path == d or path.startswith(d.rstrip("/") + "/")


def hidden_paths(tmpdir: str) -> list[str]:
    """Host directories replaced by an empty tmpfs inside the sandbox (never one holding the
    interpreter or the run's temp dir), outermost only."""
    extra = [p for p in os.environ.get(HIDE_ENV, "").split(":") if p]
    keep = [os.path.realpath(PYTHON), tmpdir, os.path.realpath(tempfile.gettempdir())]
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
            and not _inside(os.path.realpath(PYTHON), p)]


def _bwrap_prefix(tmpdir: str) -> list[str]:
    hide: list[str] = []
    for p in hidden_paths(tmpdir) + [p for p in _private_paths() if p != "/dev/shm"]:
        hide += ["--tmpfs", p]
    args = [
        shutil.which("bwrap") or "bwrap", "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
        "--die-with-parent", "--new-session",
        "--ro-bind", "/", "/",
        *hide,
        "--dev", "/dev", "--proc", "/proc",
        "--bind", tmpdir, tmpdir, "--chdir", tmpdir,
    ]
    if IS_ROOT:
        args += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SYS_RESOURCE"]
    return args + ["--"]


# --mount-proc: a /proc of the new pid namespace (other processes and their command lines unseen)
_UNSHARE_PREFIX = ["unshare", "--net", "--ipc", "--uts", "--mount", "--pid", "--fork", "--kill-child",
                   "--mount-proc", "--"]

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


def command(isolation: str, tmpdir: str, main: str, *, uid: int | None = None, cpu: int = 10,
             memory_mb: int = 512, nproc: int = DEFAULT_NPROC) -> tuple[list[str], dict[str, str]]:
    """The command line and environment that run `main` (in `tmpdir`) at `isolation`."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
           "HOME": tmpdir, "TMPDIR": tmpdir, "PYTHONIOENCODING": "utf-8"}
    mounts = None
    if isolation == ISOLATION_UNSHARE:
        mounts = [(p, "0755") for p in hidden_paths(tmpdir)] + [(p, "1777") for p in _private_paths()]
    largs = [
        str(cpu), str(int(memory_mb) * 1024 * 1024), str(FSIZE_LIMIT), str(NOFILE_LIMIT), str(int(nproc)),
        "" if uid is None else str(uid), tmpdir, PYTHON, main, "1" if IS_ROOT else "", "" if mounts is None else "1",
        *(f"{mode}:{d}" for d, mode in mounts or ()),
    ]
    inner = [PYTHON, "-I", "-S", "-B", "-c", _LAUNCHER, *largs]
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
        force = os.environ.get(FORCE_ENV, "").strip().lower()
        result = ISOLATION_NONE
        d = tempfile.mkdtemp(prefix="olsbx-probe-")
        try:
            py = [PYTHON, "-I", "-S", "-c", _PROBE_CODE]
            if force in ("", "bwrap") and shutil.which("bwrap") and _probe_ok(_bwrap_prefix(d) + py):
                result = ISOLATION_BWRAP
            elif force in ("", "bwrap", "unshare") and IS_ROOT and shutil.which("unshare"):
                with open(os.path.join(d, "probe.py"), "w", encoding="utf-8") as f:
                    f.write(_PROBE_CODE)
                if _probe_ok(command(ISOLATION_UNSHARE, d, "probe.py")[0]):
                    result = ISOLATION_UNSHARE
        finally:
            shutil.rmtree(d, ignore_errors=True)
        _probed = result
        return result


def isolation_level() -> str:
    """The isolation this machine gives sandboxed code (probed once, then cached)."""
    return _probe()
