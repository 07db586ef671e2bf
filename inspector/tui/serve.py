"""The app in a browser (`context-inspector serve`): textual-serve runs the app's own command line
under its web driver for each browser that connects, on the loopback interface only (the
transcripts are the user's). Optional: the `serve` extra."""

from __future__ import annotations

import shlex
from collections.abc import Sequence


class ServeError(Exception):
    """Why the app cannot be served (one line for the user)."""


def serve_app(command: Sequence[str], port: int) -> None:
    """Serve `command` (the app's command line) on 127.0.0.1:`port` until interrupted."""
    try:
        from textual_serve.server import Server
    except ImportError:
        raise ServeError("serve needs textual-serve: pip install 'context-inspector[serve]'") from None
    server = Server(
        " ".join(shlex.quote(c) for c in command), host="127.0.0.1", port=port, title="context-inspector"
    )
    try:
        server.serve()
    except OSError as exc:
        raise ServeError(f"cannot serve on 127.0.0.1:{port}: {exc.strerror or exc}") from None
