"""Transfer tests never leave this machine: every socket connection to an address other than the
loopback interface fails the test (the HTTP backends are driven against tests/transfer/fake_llm.py)."""

import socket

import pytest

LOOPBACK = {"127.0.0.1", "::1", "localhost"}


@pytest.fixture(autouse=True)
def loopback_only(monkeypatch):
    real_connect = socket.socket.connect

    def connect(self, address):
        host = address[0] if isinstance(address, tuple) else address
        if isinstance(host, str) and host not in LOOPBACK and not host.startswith("/"):
            raise AssertionError(f"a test tried to reach {address!r}; only 127.0.0.1 is allowed")
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    yield
