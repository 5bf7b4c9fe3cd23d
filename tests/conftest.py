import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=150, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# mutation testing runs the suite once per mutant: fewer examples, but the same ones every time
settings.register_profile("mutation", max_examples=25, deadline=None, derandomize=True,
                          suppress_health_check=list(HealthCheck))
settings.load_profile(os.environ.get("PPVIZ_HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev"))


def _require(name: str) -> bool:
    return os.environ.get(name, "") not in ("", "0", "false")


@pytest.fixture(scope="session")
def torch_pipelining():
    """torch.distributed.pipelining, or a skip; under PPVIZ_REQUIRE_TORCH=1 a missing torch fails."""
    try:
        import torch.distributed.pipelining.schedules as schedules
    except ImportError as exc:
        if _require("PPVIZ_REQUIRE_TORCH"):
            pytest.fail(f"PPVIZ_REQUIRE_TORCH=1 but torch cannot be imported: {exc}")
        pytest.skip("torch is not installed")
    return schedules


@pytest.fixture
def no_network(monkeypatch):
    """Python-level network access fails for the test's duration."""
    import socket

    def refuse(*args, **kwargs):
        raise OSError("network is blocked in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
