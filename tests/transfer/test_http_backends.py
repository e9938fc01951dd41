"""Both HTTP clients against the local fake server: request shapes, the retry schedule on 429, 500,
timeouts and malformed JSON, quota exhaustion and refused keys stopping the backend, and keys that
never show in an error message."""

import pytest

from stylebench_jax.errors import UserInputError
from stylebench_jax.transfer.config import BackendConfig
from stylebench_jax.transfer.generation import BackendStopped, GenerationFailed, GenerationRequest
from stylebench_jax.transfer.http_backends import AnthropicBackend, OpenAIChatBackend, is_quota_error
from tests.transfer.fake_llm import FakeLLM

KEY = "sk-test-9f8e7d6c5b4a-SECRET"
REQUEST = GenerationRequest("b/x#e0#s0", "You are a creative writer.",
                            "STYLE...\nWrite an original short story about: Mars\n\nRequirements:",
                            excerpt=None, seed=1234, target_words=700)


def backend(kind, url, sleeps, **overrides):
    base_url = url + ("/v1" if kind == "openai" else "")
    config = BackendConfig(name="llm", kind=kind, api_key_env="FAKE_KEY", base_url=base_url, model="m-1",
                           **overrides)
    cls = OpenAIChatBackend if kind == "openai" else AnthropicBackend
    return cls(config, environ={"FAKE_KEY": KEY}, sleep=sleeps.append)


def test_openai_request_follows_the_seed_parameters():
    with FakeLLM() as fake:
        g = backend("openai", fake.url, []).generate(REQUEST)
    assert g.text.startswith("Once upon a time a story about Mars") and g.attempts == 1
    request = fake.requests[0]
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["authorization"] == f"Bearer {KEY}"
    body = request["body"]
    assert body["messages"] == [{"role": "system", "content": REQUEST.system},
                                {"role": "user", "content": REQUEST.user}]
    assert (body["model"], body["temperature"], body["top_p"], body["max_tokens"], body["seed"]) == \
        ("m-1", 0.9, 0.95, 1200, 1234)
    assert g.finish_reason == "stop" and g.usage["completion_tokens"] == 12


def test_anthropic_request_follows_the_messages_api():
    with FakeLLM() as fake:
        g = backend("anthropic", fake.url, []).generate(REQUEST)
    request = fake.requests[0]
    assert request["path"] == "/v1/messages" and request["headers"]["x-api-key"] == KEY
    assert request["headers"]["anthropic-version"] == "2023-06-01"
    body = request["body"]
    assert body["system"] == REQUEST.system
    assert body["messages"] == [{"role": "user", "content": REQUEST.user}]
    assert "seed" not in body and body["top_p"] == 0.95 and body["max_tokens"] == 1200
    assert g.finish_reason == "end_turn" and "Mars" in g.text


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_retries_429_500_malformed_and_timeouts_with_the_backoff_schedule(kind):
    sleeps = []
    with FakeLLM(["429", "500", "malformed"], stall_s=0.6) as fake:
        g = backend(kind, fake.url, sleeps).generate(REQUEST)
    assert g.attempts == 4 and len(g.retried_errors) == 3 and len(fake.requests) == 4
    assert sleeps == [0.5, 1.5, 3.0]  # seed 003 §7.2: 0.5 s, 1.5 s, 3.0 s
    assert "HTTP 429" in g.retried_errors[0] and "HTTP 500" in g.retried_errors[1]
    assert "malformed JSON" in g.retried_errors[2]
    sleeps.clear()
    with FakeLLM(["stall"], stall_s=0.6) as fake:
        g = backend(kind, fake.url, sleeps, timeout_s=0.2).generate(REQUEST)
    assert g.attempts == 2 and "timed out" in g.retried_errors[0] and sleeps == [0.5]


def test_gives_up_after_the_last_delay():
    sleeps = []
    with FakeLLM(default="500") as fake:
        with pytest.raises(GenerationFailed, match="gave up after 4 attempts") as caught:
            backend("openai", fake.url, sleeps).generate(REQUEST)
    assert caught.value.attempts == 4 and len(fake.requests) == 4 and sleeps == [0.5, 1.5, 3.0]


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_quota_exhaustion_stops_the_backend_without_retrying(kind):
    with FakeLLM(["quota"]) as fake:
        with pytest.raises(BackendStopped) as caught:
            backend(kind, fake.url, []).generate(REQUEST)
    assert caught.value.reason == "quota_exhausted" and len(fake.requests) == 1


def test_refused_key_stops_the_backend_and_the_key_is_redacted():
    with FakeLLM(["auth"]) as fake:
        with pytest.raises(BackendStopped) as caught:
            backend("openai", fake.url, []).generate(REQUEST)
    assert caught.value.reason == "auth_failed"
    assert KEY not in str(caught.value) and "[REDACTED]" in str(caught.value)
    with FakeLLM(default="echo_key") as fake:
        with pytest.raises(GenerationFailed) as failed:
            backend("anthropic", fake.url, []).generate(REQUEST)
    assert KEY not in str(failed.value) and all(KEY not in e for e in failed.value.retried_errors)
    with FakeLLM(["ok_echo"]) as fake:
        g = backend("openai", fake.url, []).generate(REQUEST)
    assert KEY not in g.text and "[REDACTED]" in g.text


def test_quota_markers_and_missing_keys():
    assert is_quota_error(429, '{"error": {"code": "insufficient_quota"}}')
    assert is_quota_error(402, "")
    gemini_rate = "Quota exceeded for quota metric 'Generate Content API requests per minute'"
    assert not is_quota_error(429, gemini_rate)
    assert not is_quota_error(429, "Rate limit reached for requests")
    config = BackendConfig(name="g", kind="openai", api_key_env="NOT_SET_ANYWHERE", model="m")
    with pytest.raises(UserInputError, match="NOT_SET_ANYWHERE is not set"):
        OpenAIChatBackend(config, environ={})


@pytest.mark.parametrize("key", ["sk-one\nsk-two", "sk-caf\u00e9"])
def test_a_malformed_key_is_refused_without_being_shown(key):
    config = BackendConfig(name="g", kind="openai", api_key_env="K", model="m")
    with pytest.raises(UserInputError) as refused:
        OpenAIChatBackend(config, environ={"K": key})
    assert "environment variable K holds" in str(refused.value)
    assert "sk-" not in str(refused.value)


def test_a_base_url_without_scheme_or_host_is_refused():
    from stylebench_jax.config import InvalidField

    with pytest.raises(InvalidField, match="expected an http:// or https:// URL"):
        BackendConfig(name="k", kind="openai", api_key_env="K", model="m", base_url="api.moonshot.ai/v1")
    config = BackendConfig(name="k", kind="openai", api_key_env="K", model="m", base_url_env="URL")
    with pytest.raises(UserInputError, match="environment variable URL 'http://': expected a host"):
        OpenAIChatBackend(config, environ={"K": "sk-1", "URL": "http://"})


def test_no_retry_after_the_run_is_interrupted():
    """Ctrl-C used to leave every request in flight retrying its whole schedule (6 requests sent after
    the interrupt): once the backend's halt is set, the next retry is not made."""
    with FakeLLM(["500", "500", "500", "500"]) as fake:
        sleeps = []
        b = backend("openai", fake.url, sleeps)
        b.halt.set()
        with pytest.raises(BackendStopped) as stopped:
            b.generate(REQUEST)
        assert stopped.value.reason == "interrupted" and len(fake.requests) == 1
