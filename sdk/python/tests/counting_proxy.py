"""An HTTP forwarder to the gateway that counts the POST /v1/audit requests through it (how many
requests a client's audit events took) and records every request line (`requests`: how often a
verifier fetched the JWKS); while `held` it answers 503 (a gateway that is away)."""

from __future__ import annotations

import http.client
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class CountingProxy:
    def __init__(self, target_port: int) -> None:
        self.audit_requests = 0
        self.requests: list[str] = []
        self.held = False
        proxy = self

        class Forward(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                self._forward()

            def do_POST(self) -> None:
                self._forward()

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _forward(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                proxy.requests.append(f"{self.command} {self.path}")
                if proxy.held:
                    self._answer(503, b'{"message":"held"}')
                    return
                if self.command == "POST" and self.path == "/v1/audit":
                    proxy.audit_requests += 1
                upstream = http.client.HTTPConnection("127.0.0.1", target_port, timeout=10)
                try:
                    upstream.request(self.command, self.path, body=body or None, headers=dict(self.headers))
                    answer = upstream.getresponse()
                    self._answer(answer.status, answer.read())
                finally:
                    upstream.close()

            def _answer(self, status: int, payload: bytes) -> None:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Forward)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
