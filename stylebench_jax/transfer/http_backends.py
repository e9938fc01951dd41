"""LLM backends over HTTP with the standard library only (``urllib.request``): an OpenAI-compatible
chat-completions client (OpenAI, and Gemini and Kimi/Moonshot through their OpenAI-compatible
endpoints) and an Anthropic Messages client (seed 003 §7.2 step 4).

Requests (``temperature`` 0.9, ``top_p`` 0.95, ``max_tokens`` 1200, the item's seed):

- ``openai``: ``POST {base_url}/chat/completions`` with ``Authorization: Bearer <key>``, body
  ``{model, messages: [system, user], temperature, top_p, max_tokens, seed}``; text from
  ``choices[0].message.content``.
- ``anthropic``: ``POST {base_url}/v1/messages`` with ``x-api-key`` and ``anthropic-version:
  2023-06-01``, body ``{model, system, messages: [user], temperature, top_p, max_tokens}`` (the
  Messages API has no seed: it is recorded, not sent; set ``top_p: null`` for models that refuse both
  sampling parameters, as the authors' client does); text = the concatenated ``text`` blocks.

The key is read from the environment variable the config names (``api_key_env``); base URL and
model from ``base_url_env``/``model_env`` when those are set, else the config. The key goes only into
the request header: every message that leaves a backend (errors, retried-error notes, even the
generated text) passes through ``generation.redact``.

Errors (``generation`` module docstring): 429 and 5xx are retried unless the body says the quota or
credit is exhausted (``insufficient_quota``, ``exceeded_current_quota``, "credit balance is too low",
"billing", "quota exceeded" unless per minute/second) or the status is 402, which stop the backend
(``BackendStopped("quota_exhausted")``); 401 and 403 stop it as ``auth_failed``; other 4xx fail the
item; timeouts, dropped connections, malformed JSON and empty completions are retried.
"""

from __future__ import annotations

import http.client
import json
import os
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping

from stylebench_jax.errors import UserInputError
from stylebench_jax.transfer.config import DEFAULT_BASE_URLS, BackendConfig
from stylebench_jax.transfer.generation import (
    BackendStopped,
    Generation,
    GenerationFailed,
    GenerationRequest,
    TransientError,
    redact,
    with_retries,
)

QUOTA_MARKERS = ("insufficient_quota", "exceeded_current_quota", "credit balance is too low", "billing",
                 "quota exceeded", "exceeded your current quota", "out of credits",
                 "resource has been exhausted")
RATE_WINDOWS = ("per minute", "per second", "perminute", "persecond")
BODY_EXCERPT = 300
ANTHROPIC_VERSION = "2023-06-01"


def is_quota_error(status: int, body: str) -> bool:
    """Quota/credit exhaustion (module docstring), as opposed to a passing rate limit."""
    if status == 402:
        return True
    text = body.lower()
    return any(m in text for m in QUOTA_MARKERS) and not any(w in text for w in RATE_WINDOWS)


def url_problem(url: str) -> str | None:
    """Why ``url`` cannot be an API base URL (None when it can): an http(s) scheme and a host."""
    parsed = urllib.parse.urlsplit(url.strip())
    if parsed.scheme not in ("http", "https"):
        return "expected an http:// or https:// URL"
    if not parsed.hostname:
        return "expected a host name after the scheme"
    return None


class HttpBackend:
    """Shared plumbing of the two HTTP clients; subclasses define ``url``, ``headers``, ``payload``
    and ``parse``."""

    def __init__(self, config: BackendConfig, environ: Mapping[str, str] | None = None, sleep=None):
        environ = os.environ if environ is None else environ
        self.config = config
        self.name, self.kind = config.name, config.kind
        key = environ.get(config.api_key_env or "", "")
        if not key.strip():
            raise UserInputError(f"backend {config.name!r}: environment variable {config.api_key_env} is not "
                                 "set (it must hold the API key)")
        self._key = key.strip()
        if not (self._key.isascii() and self._key.isprintable()):  # never echoed: it is a secret
            raise UserInputError(f"backend {config.name!r}: environment variable {config.api_key_env} holds "
                                 "a line break, a control or a non-ASCII character; expected one API key")
        self.secrets = (self._key,)
        base = ((environ.get(config.base_url_env) if config.base_url_env else None) or config.base_url
                or DEFAULT_BASE_URLS[config.kind]).strip()
        problem = url_problem(base)
        if problem:
            where = f"environment variable {config.base_url_env}" if config.base_url_env and \
                environ.get(config.base_url_env) else "base_url"
            raise UserInputError(f"backend {config.name!r}: {where} {base!r}: {problem}")
        self.base_url = base.rstrip("/")
        self.model = (environ.get(config.model_env) if config.model_env else None) or config.model
        if not self.model:
            raise UserInputError(f"backend {config.name!r}: no model (set {config.model_env} or model)")
        self.concurrency = config.concurrency
        self.halt = threading.Event()  # set when the run is interrupted: no retry after it
        self._sleep = sleep
        self._opener = urllib.request.build_opener()

    # ------------------------------------------------------------------ one attempt
    def _post(self, payload: dict) -> dict:
        data = json.dumps(payload).encode("utf-8")
        request = urllib.request.Request(self.url, data=data, headers=self.headers(), method="POST")
        try:
            with self._opener.open(request, timeout=self.config.timeout_s) as response:
                raw = response.read()
        except urllib.error.HTTPError as error:
            body = self._body(error)
            self._raise_for_status(error.code, body)
        except TimeoutError:
            raise TransientError(f"timed out after {self.config.timeout_s} s") from None
        except urllib.error.URLError as error:
            if isinstance(error.reason, TimeoutError):
                raise TransientError(f"timed out after {self.config.timeout_s} s") from None
            raise TransientError(f"connection failed: {self._clean(str(error.reason))}") from None
        except (ConnectionError, http.client.HTTPException) as error:
            raise TransientError(f"connection dropped: {type(error).__name__}") from None
        try:
            return json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            excerpt = self._clean(raw[:BODY_EXCERPT])
            raise TransientError(f"malformed JSON in a 200 response: {excerpt!r}") from None

    def _body(self, error: urllib.error.HTTPError) -> str:
        try:
            return error.read().decode("utf-8", "replace")
        except Exception:  # noqa: BLE001 - a body we cannot read is just absent
            return ""

    def _clean(self, text) -> str:
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
        return redact(str(text), self.secrets)

    def _raise_for_status(self, status: int, body: str) -> None:
        detail = f"HTTP {status}: {self._clean(body[:BODY_EXCERPT])}"
        if is_quota_error(status, body):
            raise BackendStopped(f"{self.name}: quota exhausted ({detail})", "quota_exhausted")
        if status in (401, 403):
            raise BackendStopped(f"{self.name}: key refused ({detail})", "auth_failed")
        if status == 429 or status >= 500:
            raise TransientError(detail)
        raise GenerationFailed(detail)

    def _attempt(self, request: GenerationRequest) -> Generation:
        body = self._post(self.payload(request))
        try:
            text, finish, usage = self.parse(body)
        except (KeyError, IndexError, TypeError, AttributeError):
            excerpt = self._clean(json.dumps(body)[:BODY_EXCERPT])
            raise TransientError(f"unexpected response shape: {excerpt}") from None
        if not isinstance(text, str) or not text.strip():
            raise TransientError(f"empty completion (finish reason {finish!r})")
        return Generation(self._clean(text.strip()), finish_reason=finish, usage=usage, model=self.model)

    # ------------------------------------------------------------------ the backend call
    def generate(self, request: GenerationRequest) -> Generation:
        kwargs = {} if self._sleep is None else {"sleep": self._sleep}
        try:
            return with_retries(lambda: self._attempt(request), self.config.retry_delays, halt=self.halt,
                                **kwargs)
        except GenerationFailed as error:
            raise GenerationFailed(self._clean(str(error)), error.attempts,
                                   [self._clean(e) for e in error.retried_errors]) from None

    def _sampling(self) -> dict:
        out = {"temperature": self.config.temperature, "max_tokens": self.config.max_tokens}
        if self.config.top_p is not None:
            out["top_p"] = self.config.top_p
        return out


class OpenAIChatBackend(HttpBackend):
    @property
    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

    def headers(self) -> dict:
        return {"Authorization": f"Bearer {self._key}", "Content-Type": "application/json"}

    def payload(self, request: GenerationRequest) -> dict:
        messages = [{"role": "system", "content": request.system}, {"role": "user", "content": request.user}]
        body = {"model": self.model, "messages": messages, **self._sampling()}
        if self.config.send_seed:
            body["seed"] = request.seed
        return body

    def parse(self, body: dict):
        choice = body["choices"][0]
        return choice["message"]["content"], choice.get("finish_reason"), body.get("usage")


class AnthropicBackend(HttpBackend):
    @property
    def url(self) -> str:
        return f"{self.base_url}/v1/messages"

    def headers(self) -> dict:
        return {"x-api-key": self._key, "anthropic-version": ANTHROPIC_VERSION,
                "content-type": "application/json"}

    def payload(self, request: GenerationRequest) -> dict:
        return {"model": self.model, "system": request.system,
                "messages": [{"role": "user", "content": request.user}], **self._sampling()}

    def parse(self, body: dict):
        blocks = body["content"]
        text = "\n".join(b["text"] for b in blocks if b.get("type") == "text")
        return text, body.get("stop_reason"), body.get("usage")


HTTP_BACKENDS = {"openai": OpenAIChatBackend, "anthropic": AnthropicBackend}
