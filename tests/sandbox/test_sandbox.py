"""Sandbox tests: every one bounded by its own limits and a pytest timeout."""

from __future__ import annotations

import os
import socket
import tempfile
import threading
import time

import pytest

from oracleladder.sandbox import isolation, isolation_level, run, runner, uids
from tests.helpers import REPO

pytestmark = pytest.mark.timeout(60)

IS_ROOT = os.geteuid() == 0


@pytest.fixture(params=["auto", "unshare", "none"])
def mode(request, monkeypatch):
    """Run a test under the best isolation, and forced down to the weaker fallbacks."""
    monkeypatch.setattr(isolation, "_probed", None)
    if request.param != "auto":
        monkeypatch.setenv(isolation.FORCE_ENV, request.param)
    else:
        monkeypatch.delenv(isolation.FORCE_ENV, raising=False)
    level = isolation_level()
    if request.param == "unshare" and level != isolation.ISOLATION_UNSHARE:
        pytest.skip(f"unshare -n not available here (got {level})")
    yield level
    monkeypatch.setattr(isolation, "_probed", None)


def test_isolation_is_reported():
    level = isolation_level()
    assert level in (isolation.ISOLATION_BWRAP, isolation.ISOLATION_UNSHARE, isolation.ISOLATION_NONE)
    r = run("print('hi')")
    assert r.ok and r.stdout == "hi\n" and r.isolation == level
    print("isolation:", level)


def test_stdin_stdout_and_returncode():
    r = run("import sys\ns = sys.stdin.read()\nprint(s.upper(), end='')\nsys.exit(3)", stdin="abc\n")
    assert r.stdout == "ABC\n" and r.returncode == 3 and not r.timed_out


def test_infinite_loop_killed_by_wall_clock():
    t = time.monotonic()
    r = run("import time\nwhile True: time.sleep(0.01)", timeout_s=1.5)
    assert r.timed_out and r.killed_reason == "timeout"
    assert time.monotonic() - t < 30  # the behaviour, not a speed: killed at its limit, the loop never ends


def test_busy_loop_killed_by_cpu_limit(mode):
    r = run("while True: pass", timeout_s=20, cpu_s=1)
    assert not r.timed_out and r.returncode != 0
    assert r.killed_reason and ("cpu" in r.killed_reason)  # the CPU limit, not the 20 s wall clock


def test_memory_bomb_stopped():
    r = run("x = bytearray(4 * 1024 ** 3)\nprint('allocated')", memory_mb=256, timeout_s=10)
    assert "allocated" not in r.stdout and r.returncode != 0
    assert r.killed_reason == "memory_limit"
    r = run("xs = []\nwhile True: xs.append(b'x' * 10**6)", memory_mb=256, timeout_s=10)
    assert r.returncode != 0 and r.killed_reason in ("memory_limit", "timeout")


def _processes_of(uids: set[int | None]) -> int:
    """The processes running as one of ``uids`` (a run's own: other runs, of other tests or other
    pytest-xdist workers, may be running as sandbox uids meanwhile)."""
    n = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("Uid:"):
                        n += int(line.split()[1]) in uids
                        break
        except OSError:
            pass
    return n


FORK_BOMB = """
import os, time
n = 0
end = time.time() + 2
while time.time() < end:
    try:
        if os.fork() == 0:
            continue
        n += 1
    except OSError:
        time.sleep(0.01)
print('parent done', n)
time.sleep(30)
"""


def test_fork_bomb_contained(monkeypatch):
    taken: set[int | None] = set()
    take = runner.take_uid
    monkeypatch.setattr(runner, "take_uid", lambda: taken.add(uid := take()) or uid)
    t = time.monotonic()
    r = run(FORK_BOMB, timeout_s=4, nproc=32, memory_mb=128)
    assert r.timed_out
    assert time.monotonic() - t < 20  # the behaviour, not a speed: killed at its 4 s limit, far under its 30 s sleep
    # the machine is fine: nothing left running as the run's uid, and we can still spawn
    deadline = time.monotonic() + 5
    while _processes_of(taken) and time.monotonic() < deadline:
        time.sleep(0.1)
    if IS_ROOT:
        assert taken != {None} and _processes_of(taken) == 0
    assert run("print(1)").stdout == "1\n"


def _processes_with(token: str) -> int:
    n = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                n += token.encode() in f.read()
        except OSError:
            continue
    return n


@pytest.fixture(params=["setpriv", "user="])
def killer(request, monkeypatch):
    """Kill a run's leftovers by setpriv and kill(1), and by subprocess's `user=` where they are missing."""
    if request.param == "user=":
        monkeypatch.setattr(uids, "_SETPRIV", None)
    elif not uids._SETPRIV or not uids._KILL:
        pytest.skip("setpriv or kill(1) not installed here")


def test_setsid_escape_is_cleaned_up(mode, killer):
    # under bwrap and unshare the escapee dies with its pid namespace too; with no namespace
    # (the "none" level) only the kill as the run's uid ends it
    token = f"61.{os.getpid()}{time.monotonic_ns() % 10**6}"  # names this run's escapee only
    code = (
        "import os\n"
        f"if os.fork() == 0:\n os.setsid()\n os.execv('/bin/sleep', ['sleep', '{token}'])\n"
        "print('forked', flush=True)\n"
    )
    r = run(code, timeout_s=5)
    assert r.stdout == "forked\n"
    if IS_ROOT:
        time.sleep(0.2)
        assert _processes_with(token) == 0


def test_secrets_not_inherited(mode, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret-123")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret-456")
    r = run(
        "import os\nprint(repr(os.environ.get('OPENAI_API_KEY')))\nprint(sorted(os.environ))\n"
        "print(open('/proc/self/environ','rb').read())"
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == "None"
    assert "sk-test-secret" not in r.stdout and "sk-ant" not in r.stdout
    assert "API_KEY" not in r.stdout
    assert r.isolation == mode
    # exactly the environment the sandbox builds: nothing of the host's, nor bwrap's PWD
    assert r.stdout.splitlines()[1] == str(["HOME", "LANG", "LC_ALL", "PATH", "PYTHONIOENCODING", "TMPDIR"])


def test_loopback_tcp_refused(mode):
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    srv.settimeout(0.2)
    port = srv.getsockname()[1]
    accepted = []

    def accept_loop(stop):
        while not stop.is_set():
            try:
                c, _ = srv.accept()
                accepted.append(c)
            except OSError:
                pass

    stop = threading.Event()
    th = threading.Thread(target=accept_loop, args=(stop,), daemon=True)
    th.start()
    try:
        # sanity: the listener is reachable from outside the sandbox
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        time.sleep(0.3)
        assert len(accepted) == 1
        code = (
            "import socket\n"
            "try:\n"
            f"    s = socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
            "    print('CONNECTED')\n"
            "except Exception as e:\n"
            "    print('REFUSED', type(e).__name__, e)\n"
        )
        r = run(code, timeout_s=10)
        assert r.returncode == 0, r.stderr
        assert r.stdout.startswith("REFUSED"), r.stdout
        time.sleep(0.3)
        assert len(accepted) == 1
    finally:
        stop.set()
        th.join(timeout=2)
        for c in accepted:
            c.close()
        srv.close()
    assert r.isolation == mode


def test_files_land_only_in_temp_dir_which_is_removed(mode):
    if mode != isolation.ISOLATION_BWRAP and not IS_ROOT:
        pytest.skip("without bwrap, writes outside are refused only via the uid drop (root)")
    outside = tempfile.mkdtemp(prefix="olsbx-test-outside-")
    os.chmod(outside, 0o755)
    try:
        code = (
            "import os, json\n"
            "res = {'cwd': os.getcwd(), 'input': open('data/in.txt').read()}\n"
            "open('out.txt', 'w').write('hello')\n"
            "res['listing'] = sorted(os.listdir('.'))\n"
            f"for p in [{outside + '/x.txt'!r}, '/work/olsbx_probe.txt', '/etc/olsbx_probe', "
            f"'{os.path.expanduser('~')}/olsbx_probe', '/var/tmp/olsbx_probe']:\n"
            "    try:\n"
            "        open(p, 'w').write('x')\n"
            "        res[p] = 'WROTE'\n"
            "    except OSError as e:\n"
            "        res[p] = 'DENIED'\n"
            "print(json.dumps(res))\n"
        )
        r = run(code, files={"data/in.txt": "payload"})
        assert r.returncode == 0, r.stderr
        import json

        res = json.loads(r.stdout)
        assert res["input"] == "payload"
        assert "out.txt" in res["listing"]
        for p, v in res.items():
            if p.startswith("/"):
                if p.startswith("/var/tmp") and mode != isolation.ISOLATION_BWRAP:
                    continue  # world-writable; documented; the leftover is removed below
                assert v == "DENIED", (p, res)
        assert not os.path.exists("/var/tmp/olsbx_probe")
        assert not os.path.exists(os.path.join(outside, "x.txt"))
        assert not os.path.exists("/work/olsbx_probe.txt")
        assert not os.path.exists(res["cwd"]), "temp dir must be removed"
    finally:
        import shutil

        shutil.rmtree(outside, ignore_errors=True)


def test_bwrap_private_tmp():
    if isolation_level() != isolation.ISOLATION_BWRAP:
        pytest.skip("bwrap not available")
    name = f"/tmp/olsbx-marker-{os.getpid()}"
    r = run(f"try:\n open({name!r}, 'w').write('x')\n print('wrote')\nexcept OSError:\n print('denied')")
    assert r.stdout in ("wrote\n", "denied\n"), r.stderr
    assert not os.path.exists(name)


def test_output_capped():
    r = run("import sys\nwhile True: sys.stdout.write('x' * 65536)", max_output=10_000, timeout_s=10)
    assert len(r.stdout) <= 10_000 and r.killed_reason == "output_limit"  # the output limit, not the 10 s one


def test_file_path_escape_rejected():
    with pytest.raises(ValueError):
        run("pass", files={"../evil.txt": "x"})


def test_parallel_runs_from_threads():
    results = [None] * 6

    def go(i):
        results[i] = run(f"print({i} * 2)")

    ts = [threading.Thread(target=go, args=(i,)) for i in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=30)
    assert [r.stdout for r in results] == [f"{i * 2}\n" for i in range(6)]


def test_workspace_hidden_under_bwrap(monkeypatch):
    if isolation_level() != isolation.ISOLATION_BWRAP:
        pytest.skip("bwrap not available")
    here = os.path.realpath(__file__)
    hidden = isolation.hidden_paths(tempfile.gettempdir())
    if not any(here.startswith(h + "/") for h in hidden):  # a checkout outside /work and the homes
        monkeypatch.setenv(isolation.HIDE_ENV, str(REPO))
    r = run(f"import os\ntry:\n open({here!r}).read()\n print('READ')\nexcept OSError:\n print('HIDDEN')")
    assert r.stdout == "HIDDEN\n", r.stderr


@pytest.fixture(params=["bwrap", "unshare"])
def namespaced(request, monkeypatch):
    """Each namespace level in turn (skipped where this machine lacks it)."""
    monkeypatch.setattr(isolation, "_probed", None)
    monkeypatch.setenv(isolation.FORCE_ENV, request.param)
    want = isolation.ISOLATION_BWRAP if request.param == "bwrap" else isolation.ISOLATION_UNSHARE
    if isolation_level() != want:
        pytest.skip(f"{request.param} not available here (got {isolation_level()})")
    yield want
    monkeypatch.setattr(isolation, "_probed", None)


def test_host_unix_socket_unreachable(namespaced):
    d = tempfile.mkdtemp(prefix="olsbx-sock-")
    os.chmod(d, 0o755)  # reachable by any uid: only the sandbox's own /tmp can keep it out
    path = os.path.join(d, "svc.sock")
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    os.chmod(path, 0o777)
    srv.listen(4)
    srv.settimeout(5)
    try:
        socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).connect(path)  # reachable from here
        srv.accept()[0].close()
        r = run("import socket\ns = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\ntry:\n"
                f" s.connect({path!r})\n print('CONNECTED')\nexcept OSError as e:\n print('REFUSED', e)\n")
        assert r.stdout.startswith("REFUSED"), (r.stdout, r.stderr)
        assert r.isolation == namespaced
    finally:
        srv.close()
        import shutil

        shutil.rmtree(d, ignore_errors=True)


def test_host_processes_unseen(namespaced):
    import subprocess
    import sys

    token = f"olsbx-token-{os.getpid()}-{time.monotonic_ns()}"
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", token])
    try:
        code = ("import os\nseen = 0\nfor p in os.listdir('/proc'):\n if p.isdigit():\n  try:\n"
                f"   seen += {token!r}.encode() in open('/proc/%s/cmdline' % p, 'rb').read()\n"
                "  except OSError:\n   pass\nprint(seen, len([p for p in os.listdir('/proc') if p.isdigit()]))\n")
        deadline = time.monotonic() + 10  # its argv shows once its exec is complete
        while _processes_with(token) == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert _processes_with(token) == 1  # visible from here
        r = run(code)
        seen, n_procs = map(int, r.stdout.split())
        assert seen == 0 and n_procs <= 3, (r.stdout, r.stderr)
    finally:
        other.kill()
        other.wait()


def test_store_in_checkout_unreadable(namespaced):
    checkout = str(REPO)
    path = os.path.join(checkout, f".olsbx-store-{os.getpid()}.sqlite")
    with open(path, "w") as f:
        f.write("SECRET-ROWS")
    os.chmod(path, 0o644)  # world-readable: only hiding the checkout keeps it out
    try:
        r = run(f"try:\n print(open({path!r}).read())\nexcept OSError as e:\n print('HIDDEN', type(e).__name__)")
        assert r.stdout.startswith("HIDDEN") and "SECRET" not in r.stdout, (r.stdout, r.stderr)
    finally:
        os.unlink(path)


def test_no_new_privs(mode):
    r = run("print([l.split()[1] for l in open('/proc/self/status') if l.startswith('NoNewPrivs')][0])")
    assert r.stdout == "1\n", r.stderr


def test_stdio_program_cannot_read_its_expected_output(namespaced):
    import json
    import shutil

    from oracleladder.domains.code.problems import load_stdio_jsonl, run_tests

    d = tempfile.mkdtemp(prefix="olsbx-problems-")
    os.chmod(d, 0o755)
    path = os.path.join(d, "stdio.jsonl")
    with open(path, "w") as f:
        f.write(json.dumps({"pid": "p", "statement": "secret sum", "tests": [{"input": "2 3\n", "output": "5\n"}]}) + "\n")
    os.chmod(path, 0o644)
    # prints the expected output it finds for its input in the problems file, if it can read it
    cheat = ("import json, sys\ninp = sys.stdin.read()\ntry:\n"
             f" rec = json.loads(open({path!r}).read())\n"
             " print(next(t['output'] for t in rec['tests'] if t['input'] == inp), end='')\n"
             "except OSError:\n print('no file')\n")
    try:
        o = run_tests(load_stdio_jsonl(path)[0], cheat)
        assert not o.passed and "no file" in o.first_failure, o
    finally:
        shutil.rmtree(d, ignore_errors=True)
