"""`ladder view`: the HTML report of a live store on 127.0.0.1, built again when the store has changed.

The site (golds included) lives in a temporary folder for as long as the server runs, and is removed
however it stops: Ctrl-C, SIGTERM, or an error. Only a request naming this server in its Host header
(127.0.0.1, localhost or [::1] at its port) is answered, so a web page that rebinds its own name to
127.0.0.1 (DNS rebinding) reads nothing. Each connection has its own thread and a timeout, so an idle
or slow one holds up no other; the rebuild and the reading of a page's file take one lock, so no page
reads a site being rebuilt. A store that cannot be read is an error page and one line on the terminal;
a client that hangs up is no error.
"""

from __future__ import annotations

import functools
import signal
import socket
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http import HTTPStatus
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import FrameType

CONNECTION_TIMEOUT_S = 10.0  # a connection silent this long is closed
_HANG_UPS = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, TimeoutError)


class _Pages(SimpleHTTPRequestHandler):
    server: ThreadingHTTPServer
    refresh: Callable[[], None]  # rebuilds the site if the store changed
    log: Callable[[str], None]  # one line on the terminal
    lock: threading.Lock
    timeout = CONNECTION_TIMEOUT_S

    def _for_us(self) -> bool:
        """The Host header names this server: 127.0.0.1, localhost or [::1] at its port."""
        port, host = self.server.server_port, (self.headers.get("Host") or "").lower()
        names = ("127.0.0.1", "localhost", "[::1]")
        return host in {f"{n}:{port}" for n in names} or (port == 80 and host in names)  # a browser omits :80

    def do_GET(self) -> None:
        self._serve(body=True)

    def do_HEAD(self) -> None:
        self._serve(body=False)

    def _serve(self, *, body: bool) -> None:
        if not self._for_us():
            self.send_error(HTTPStatus.MISDIRECTED_REQUEST, "ladder view answers only requests for its own address")
            return
        with self.lock:
            if self.path.split("?")[0] in ("/", "/index.html"):
                try:
                    self.refresh()  # a page load shows the store as it is now
                except Exception as exc:  # noqa: BLE001 - the page says it, the terminal has one line
                    line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                    self.log(f"the report could not be rebuilt: {line}")
                    self.send_error(HTTPStatus.SERVICE_UNAVAILABLE, "the report could not be rebuilt", line)
                    return
            page = self.send_head()  # the headers, and the file as it is now
            content = page.read() if page is not None else b""
            if page is not None:
                page.close()
        if body:
            self.wfile.write(content)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the stdlib's name
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: socket.socket | tuple[bytes, socket.socket], client_address: object) -> None:
        if not isinstance(sys.exc_info()[1], _HANG_UPS):  # a client that went away is not an error
            super().handle_error(request, client_address)


def _stop(_signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt


@contextmanager
def _stopped_by_sigterm() -> Iterator[None]:
    """SIGTERM stops the server as Ctrl-C does, so the temporary folder is removed."""
    previous = signal.signal(signal.SIGTERM, _stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def serve(build: Callable[[Path], None], port: int, ready: Callable[[str], None],
          log: Callable[[str], None]) -> None:
    """Serve the site that ``build(folder)`` writes (into folder/html), until Ctrl-C or SIGTERM:
    ``build`` runs first, then before each page load; ``ready`` is told the address, ``log`` one line
    for each page load whose rebuild failed."""
    with _stopped_by_sigterm(), tempfile.TemporaryDirectory(prefix="ladder-view-") as tmp:
        out = Path(tmp)
        build(out)
        pages = type("Pages", (_Pages,), {"refresh": staticmethod(lambda: build(out)), "log": staticmethod(log),
                                          "lock": threading.Lock()})
        with _Server(("127.0.0.1", port), functools.partial(pages, directory=str(out / "html"))) as httpd:
            ready(f"http://127.0.0.1:{httpd.server_address[1]}/")
            try:
                httpd.serve_forever()
            except KeyboardInterrupt:
                pass
