"""A local HTTP server on 127.0.0.1 that speaks the OpenAI chat-completions and Anthropic Messages
APIs, scripted per request: success, 429, 500, a stall past the client's timeout, malformed JSON,
quota exhaustion, a refused key, and bodies that echo the caller's key (to prove it is redacted)."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeLLM:
    """``script``: a list of actions consumed one per request (then ``default``). An action is
    ``"ok"``, ``"429"``, ``"500"``, ``"stall"``, ``"malformed"``, ``"quota"``, ``"auth"``, ``"echo_key"``
    (an error body holding the key) or ``"ok_echo"`` (a completion that contains the key)."""

    def __init__(self, script=(), default="ok", stall_s=1.0):
        self.script = list(script)
        self.default = default
        self.stall_s = stall_s
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length))
                key = self.headers.get("Authorization", "").removeprefix("Bearer ") \
                    or self.headers.get("x-api-key", "")
                headers = {k.lower(): v for k, v in self.headers.items()}
                with fake.lock:
                    action = fake.script.pop(0) if fake.script else fake.default
                    fake.requests.append({"path": self.path, "body": body, "headers": headers,
                                          "action": action})
                anthropic = self.path.endswith("/v1/messages")
                fake.respond(self, action, body, key, anthropic)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    def respond(self, handler, action, body, key, anthropic):
        user = body["messages"][-1]["content"]
        text = f"Once upon a time a story about {user.split('about: ')[-1].splitlines()[0]}. The end."
        if action == "ok_echo":
            text += f" My key is {key}."
        if action in ("ok", "ok_echo"):
            if anthropic:
                payload = {"content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                           "usage": {"input_tokens": 10, "output_tokens": 12}}
            else:
                choice = {"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                payload = {"choices": [choice],
                           "usage": {"prompt_tokens": 10, "completion_tokens": 12}}
            return self._send(handler, 200, json.dumps(payload).encode())
        if action == "stall":
            time.sleep(self.stall_s)
            return self._send(handler, 200, b"{}")
        if action == "malformed":
            return self._send(handler, 200, b'{"choices": [{"message": ')
        if action == "429":
            error = {"error": {"type": "rate_limit_error", "message": "Rate limit reached, slow down"}}
            return self._send(handler, 429, json.dumps(error).encode())
        if action == "500":
            return self._send(handler, 500, b'{"error": {"message": "internal error"}}')
        if action == "quota":
            if anthropic:
                message = "Your credit balance is too low to access the API."
                error = {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
                return self._send(handler, 400, json.dumps(error).encode())
            error = {"error": {"message": "You exceeded your current quota.", "type": "insufficient_quota",
                               "code": "insufficient_quota"}}
            return self._send(handler, 429, json.dumps(error).encode())
        if action == "auth":
            error = {"error": {"message": f"Incorrect API key: {key}"}}
            return self._send(handler, 401, json.dumps(error).encode())
        if action == "echo_key":
            error = {"error": {"message": f"bad request from key {key}"}}
            return self._send(handler, 500, json.dumps(error).encode())
        raise ValueError(action)

    @staticmethod
    def _send(handler, status, data: bytes):
        try:
            handler.send_response(status)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(data)))
            handler.end_headers()
            handler.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client timed out and left
            pass
