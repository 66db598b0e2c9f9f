"""A test that calls memory or the gateway itself, as a client that knows they start on demand
(services/kernel/on_demand.py): its first call starts the service, so it waits for it first."""

from __future__ import annotations

from clients.cli.runtime import wait_until
from services.kernel.channels import check_health
from services.kernel.endpoints import PROTO_SERVICE, Endpoint


def started(endpoint: Endpoint, timeout: float = 30.0) -> None:
    """Return once ``endpoint``'s service serves; the first health check starts one on demand."""
    assert wait_until(lambda: check_health(endpoint, PROTO_SERVICE[endpoint.service], timeout=2.0) == "SERVING",
                      timeout, interval=0.1), f"the {endpoint.service} service did not start at {endpoint}"
