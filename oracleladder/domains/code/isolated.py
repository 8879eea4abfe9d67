"""Tests that the code under test cannot forge: the program and its tests run in two sandboxes.

The program runs in one sandbox behind a small server: it answers calls of the functions it is
asked for, one JSON line per call, on a pipe. The tests run in a second sandbox where each of
those functions is a proxy that sends the arguments and decodes the answer. Both sides encode
values with a strict codec of plain builtins (None, bool, int, float, str, bytes, complex, list,
tuple, set, frozenset, dict), so a value reaching the tests is always a fresh builtin decoded by
the tests' own interpreter: no `__eq__` of the program's is ever called, the program never runs
in the interpreter whose builtins the tests use, and it cannot reach the tests' output, which
carries the results. A program that crashes, exits or hangs only makes its calls fail.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

from oracleladder.sandbox import SandboxResult, run

MAX_REPLY = 16 * 1024 * 1024  # bytes of one encoded answer

# Shared by both sides. The program's copy may be tampered with; the tests' copy decides.
_CODEC = r'''
import json as _ol_json
def _ol_enc(x, depth=0):
    # a subclass of a plain type crosses as its base type's value (a Counter as a dict, a
    # namedtuple as a tuple), as Python's own == would compare it; anything else is refused
    if depth > 200:
        raise ValueError("value nested too deeply")
    if x is None:
        return None
    for base in (bool, int, float, str):
        if isinstance(x, base):
            return x if type(x) is base else base(x)
    if isinstance(x, list):
        return [_ol_enc(v, depth + 1) for v in x]
    for base in (tuple, set, frozenset):
        if isinstance(x, base):
            return {base.__name__: [_ol_enc(v, depth + 1) for v in x]}
    if isinstance(x, dict):
        return {"dict": [[_ol_enc(k, depth + 1), _ol_enc(v, depth + 1)] for k, v in dict.items(x)]}
    if isinstance(x, bytes):
        return {"bytes": bytes(x).hex()}
    if isinstance(x, complex):
        return {"complex": [x.real, x.imag]}
    raise TypeError("a value of type %s is not plain data (None, bool, int, float, str, bytes, complex, "
                    "list, tuple, set, frozenset, dict)" % type(x).__name__)
_OL_SEQ = {"tuple": tuple, "set": set, "frozenset": frozenset}
def _ol_dec(x):
    t = type(x)
    if x is None or t is bool or t is int or t is float or t is str:
        return x
    if t is list:
        return [_ol_dec(v) for v in x]
    if t is dict and len(x) == 1:
        (tag, v), = x.items()
        if tag in _OL_SEQ and type(v) is list:
            return _OL_SEQ[tag](_ol_dec(e) for e in v)
        if tag == "dict" and type(v) is list and all(type(p) is list and len(p) == 2 for p in v):
            return {_ol_dec(k): _ol_dec(e) for k, e in v}
        if tag == "bytes" and type(v) is str:
            return bytes.fromhex(v)
        if tag == "complex" and type(v) is list and len(v) == 2 and all(type(e) in (int, float) for e in v):
            return complex(v[0], v[1])
    raise ValueError("malformed value")
'''

_SERVER = r'''
def __ol_serve(rfd, wfd):
    import os, traceback
    requests, replies = os.fdopen(rfd, "rb"), os.fdopen(wfd, "wb")
    g = globals()
    for line in requests:
        req = _ol_json.loads(line)
        try:
            f = g.get(req["f"])
            if f is None:
                raise NameError("name %r is not defined" % req["f"])
            out = {"ok": _ol_enc(f(*_ol_dec(req["a"]), **_ol_dec(req["k"])))}
        except Exception as e:
            out = {"raise": [type(e).__name__, ("%s\n%s" % (e, traceback.format_exc()))[-2000:]]}
        replies.write((_ol_json.dumps(out) + "\n").encode())
        replies.flush()
    os._exit(0)  # the tests are done: threads the program left running do not keep it alive
__ol_serve(RFD, WFD)
'''

_CLIENT = r'''
import builtins as _ol_builtins, os as _ol_os
class ProgramError(Exception):
    """The program under test failed to answer a call, or raised a non-builtin exception."""
_ol_requests, _ol_replies = _ol_os.fdopen(WFD, "wb"), _ol_os.fdopen(RFD, "rb")
def __ol_remote(name):
    def call(*args, **kwargs):
        try:
            _ol_requests.write((_ol_json.dumps({"f": name, "a": _ol_enc(list(args)), "k": _ol_enc(kwargs)}) + "\n").encode())
            _ol_requests.flush()
        except OSError:
            raise ProgramError("the program under test is not running (it exited or crashed)") from None
        line = _ol_replies.readline(MAX_REPLY)
        if not line.endswith(b"\n"):
            raise ProgramError("the program under test exited, crashed or sent an oversized answer "
                               "while running %s()" % name)
        try:
            reply = _ol_json.loads(line)
            if type(reply) is dict and list(reply) == ["ok"]:
                return _ol_dec(reply["ok"])
            kind, message = reply["raise"]
            kind, message = str(kind), str(message)
        except (ValueError, TypeError, KeyError, RecursionError) as e:
            raise ProgramError("%s() returned a value the tests cannot read: %s" % (name, e)) from None
        cls = getattr(_ol_builtins, kind, None)
        if isinstance(cls, type) and issubclass(cls, Exception):
            try:
                exc = cls(message)
            except Exception:
                exc = ProgramError("%s: %s" % (kind, message))
        else:
            exc = ProgramError("%s: %s" % (kind, message))
        raise exc
    call.__name__ = call.__qualname__ = name
    return call
'''


def run_isolated(program: str, tests: str, *, timeout_s: float, memory_mb: int) -> tuple[SandboxResult, SandboxResult]:
    """Run `program` behind a call server and `tests` (in which `__ol_remote(name)` returns a
    proxy of the program's top-level function `name`) in two sandboxes joined by pipes.
    Returns (tests' result, program's result); only the tests' output is to be trusted."""
    req_r, req_w = os.pipe()
    rep_r, rep_w = os.pipe()
    server = program + "\n" + _CODEC + _SERVER.replace("RFD", str(req_r)).replace("WFD", str(rep_w))
    client = (_CODEC + _CLIENT.replace("RFD", str(rep_r)).replace("WFD", str(req_w))
              .replace("MAX_REPLY", str(MAX_REPLY)) + "\n" + tests)
    with ThreadPoolExecutor(max_workers=1) as ex:
        served = ex.submit(run, server, timeout_s=timeout_s, memory_mb=memory_mb, pass_fds=(req_r, rep_w))
        tested = run(client, timeout_s=timeout_s, memory_mb=memory_mb, pass_fds=(rep_r, req_w))
        return tested, served.result()
