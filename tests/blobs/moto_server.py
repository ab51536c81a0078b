"""Moto's S3 server (ThreadedMotoServer) on 127.0.0.1 and a free port, for the blob-store tests.

Run as a script by conftest.py: it prints the port, then serves until its stdin closes. It runs in a
process of its own so that the tests' tracemalloc measures the client alone (moto keeps objects and
request bodies in memory) and moto's CPU work does not contend for the tests' GIL.

Two gaps of moto are filled by the middleware below, so that the tests hold against real S3 too:

* moto does not check the expiry of presigned URLs; S3 answers 403 ``Request has expired`` to a SigV4
  query-string request at or after ``X-Amz-Date + X-Amz-Expires``, and so does the middleware;
* moto lists every multipart upload as initiated on 2010-11-10; the middleware records when each was
  created and puts that date in ListMultipartUploads answers (sweep_orphans ages uploads by it).

Everything else is moto's own handling.
"""

from __future__ import annotations

import logging
import re
import sys
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from moto.server import ThreadedMotoServer
from werkzeug.serving import make_server

EXPIRED = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n'
    b"<Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>"
)


UPLOAD = re.compile(rb"<Upload>.*?</Upload>", re.DOTALL)
UPLOAD_ID = re.compile(rb"<UploadId>([^<]+)</UploadId>")
INITIATED = re.compile(rb"<Initiated>[^<]*</Initiated>")


def middleware(app):  # a WSGI middleware
    initiated: dict[bytes, bytes] = {}

    def buffered(environ):  # (status, headers, body) of moto's answer
        captured = []
        body = b"".join(app(environ, lambda status, headers, exc_info=None: captured.append((status, headers))))
        return captured[0][0], captured[0][1], body

    def wrapped(environ, start_response):
        query = parse_qs(environ.get("QUERY_STRING", ""), keep_blank_values=True)
        if "uploads" in query and environ["REQUEST_METHOD"] in ("POST", "GET"):
            status, headers, body = buffered(environ)
            if environ["REQUEST_METHOD"] == "POST":  # CreateMultipartUpload
                match = UPLOAD_ID.search(body)
                if match:
                    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
                    initiated[match.group(1)] = f"<Initiated>{now}</Initiated>".encode()
            else:  # ListMultipartUploads

                def fix(upload: re.Match) -> bytes:
                    match = UPLOAD_ID.search(upload.group(0))
                    date = initiated.get(match.group(1)) if match else None
                    return INITIATED.sub(date, upload.group(0)) if date else upload.group(0)

                body = UPLOAD.sub(fix, body)
                headers = [(k, v) for k, v in headers if k.lower() != "content-length"]
                headers.append(("Content-Length", str(len(body))))
            start_response(status, headers)
            return [body]
        if "X-Amz-Expires" in query and "X-Amz-Date" in query:
            signed_at = datetime.strptime(query["X-Amz-Date"][0], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
            if datetime.now(UTC) >= signed_at + timedelta(seconds=int(query["X-Amz-Expires"][0])):
                start_response(
                    "403 Forbidden", [("Content-Type", "application/xml"), ("Content-Length", str(len(EXPIRED)))]
                )
                return [EXPIRED]
        return app(environ, start_response)

    return wrapped


class Server(ThreadedMotoServer):
    def _server_entry(self) -> None:
        app = middleware(DomainDispatcherApplication(create_backend_app))
        self._server = make_server(self._ip_address, self._port, app, True, request_handler=MotoRequestHandler)
        self._server_ready_event.set()
        self._server.serve_forever()


def main() -> None:
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request
    server = Server(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    print(server.get_host_and_port()[1], flush=True)
    sys.stdin.read()  # until the test session closes our stdin (or dies)
    server.stop()


if __name__ == "__main__":
    main()
