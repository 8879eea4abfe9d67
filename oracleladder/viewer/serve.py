"""`ladder view`: the HTML report of a live store on 127.0.0.1, built again when the store has changed."""

from __future__ import annotations

import functools
from collections.abc import Callable
from http.server import HTTPServer, SimpleHTTPRequestHandler
from pathlib import Path


class _Pages(SimpleHTTPRequestHandler):
    refresh: Callable[[], None]

    def do_GET(self) -> None:
        if self.path.split("?")[0] in ("/", "/index.html"):
            self.refresh()  # a page load shows the store as it is now
        super().do_GET()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the stdlib's name
        pass


def serve(root: Path, refresh: Callable[[], None], port: int, ready: Callable[[str], None]) -> None:
    """Serve the site in ``root`` until Ctrl-C; ``refresh`` rebuilds it before each page load and ``ready``
    is told the address. One request at a time, so no page reads a site being rebuilt."""
    handler = functools.partial(type("Pages", (_Pages,), {"refresh": staticmethod(refresh)}), directory=str(root))
    with HTTPServer(("127.0.0.1", port), handler) as httpd:
        ready(f"http://127.0.0.1:{httpd.server_address[1]}/")
        try:
            httpd.serve_forever()
        except KeyboardInterrupt:
            pass
