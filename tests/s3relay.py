"""An S3 server (moto) behind a byte-counting relay, for tests that count what a
command costs on a real object store.

:func:`counted_s3` starts moto's S3 application in a thread of its own, a TCP relay
in front of it that counts every byte each way (HTTP headers and bodies, as they
cross the wire), and a WSGI layer that records every request the server receives
(method, key, query): what S3 bills. Clients reach the server only through the relay.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote

from tests.conftest import make_bucket, s3_options


@dataclass
class Request:
    """One request as the server received it."""

    t: float
    method: str
    key: str
    """``bucket/key`` (a listing: ``bucket/`` and its prefix in ``query``)."""
    query: dict[str, list[str]]
    range: str | None
    body_up: int = 0
    """Bytes of the request's body (the payload of a PUT)."""
    body_down: int = 0
    """Bytes of the response's body (the payload of a GET, a listing's XML)."""

    @property
    def kind(self) -> str:
        """``list``, ``head``, ``get`` (``get range`` with a Range header), ``put``,
        ``multipart`` (create, part or complete), ``delete``, ``copy`` or ``other``."""
        if "uploads" in self.query or "uploadId" in self.query:
            return "multipart"
        if self.method == "GET":
            if "list-type" in self.query or "prefix" in self.query or "/" not in self.key.rstrip("/"):
                return "list"
            return "get range" if self.range else "get"
        return {"HEAD": "head", "PUT": "put", "DELETE": "delete", "POST": "delete"}.get(self.method, "other")


@dataclass
class Counts:
    """Bytes through the relay and the requests the server received."""

    down: int = 0
    """Bytes from the server to the clients."""
    up: int = 0
    """Bytes from the clients to the server."""
    requests: list[Request] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def bodies(self, first: int = 0, last: int | None = None) -> tuple[int, int]:
        """Bytes of the bodies of requests ``[first, last)``, down and up: the relay's
        bytes over the same requests less these are their HTTP headers."""
        with self.lock:
            chosen = self.requests[first:last]
        return sum(r.body_down for r in chosen), sum(r.body_up for r in chosen)

    def snapshot(self) -> tuple[int, int, int]:
        """``(down, up, requests)`` now."""
        with self.lock:
            return self.down, self.up, len(self.requests)


def _counting_app(app: Callable[..., Iterable[bytes]], counts: Counts) -> Callable[..., Iterable[bytes]]:
    def wrapped(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        path = unquote(environ.get("PATH_INFO", "")).lstrip("/")
        query = parse_qs(environ.get("QUERY_STRING", ""), keep_blank_values=True)
        request = Request(time.time(), environ["REQUEST_METHOD"], path, query, environ.get("HTTP_RANGE"))
        request.body_up = int(environ.get("CONTENT_LENGTH") or 0)
        with counts.lock:
            counts.requests.append(request)

        def respond(status: str, headers: list[tuple[str, str]], *args: Any) -> Any:
            length = next((int(v) for k, v in headers if k.lower() == "content-length"), 0)
            request.body_down = 0 if request.method == "HEAD" else length
            return start_response(status, headers, *args)

        return app(environ, respond)

    return wrapped


def _pump(src: socket.socket, dst: socket.socket, counts: Counts, direction: str) -> None:
    try:
        while True:
            data = src.recv(1 << 16)
            if not data:
                break
            with counts.lock:
                if direction == "up":
                    counts.up += len(data)
                else:
                    counts.down += len(data)
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (dst, src):
            with suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)


def _relay(listener: socket.socket, upstream: tuple[str, int], counts: Counts) -> None:
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            return
        server = socket.create_connection(upstream)
        for a, b, d in ((client, server, "up"), (server, client, "down")):
            threading.Thread(target=_pump, args=(a, b, counts, d), daemon=True).start()


@contextmanager
def counted_s3(bucket: str) -> Iterator[tuple[dict[str, Any], Counts]]:
    """An S3 server holding ``bucket`` behind a byte-counting relay: yields the s3fs
    storage options that reach it through the relay, and its :class:`Counts` (reset
    after the bucket is made)."""
    import logging

    from moto.server import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
    from werkzeug.serving import make_server

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    counts = Counts()
    app = _counting_app(DomainDispatcherApplication(create_backend_app), counts)
    server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=MotoRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    listener = socket.create_server(("127.0.0.1", 0))
    threading.Thread(target=_relay, args=(listener, server.server_address[:2], counts), daemon=True).start()
    endpoint = f"http://127.0.0.1:{listener.getsockname()[1]}"
    options = s3_options(endpoint)
    try:
        make_bucket(options, bucket)
        with counts.lock:
            counts.down = counts.up = 0
            counts.requests.clear()
        yield options, counts
    finally:
        listener.close()
        server.shutdown()
