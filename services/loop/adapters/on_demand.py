"""A channel to a service the supervisor may start on demand (services/kernel/on_demand.py).

When the supervisor runs memory or the gateway on demand (it says so in ``AI_CODING_ON_DEMAND``),
the loop's first call may be the one that starts it: the call then waits for the service's start
(up to :data:`START_WAIT_SECONDS`) before its own deadline counts, so a memory block is not dropped
from the first turn after an idle stop. Every call on such a channel waits for the service to be
ready (gRPC ``waitForReady``), so one that meets the service stopping for idleness is retried on the
next one instead of failing. A service that does not start in time is given up on for a minute
(its calls then fail at once, as a service that is down always did), so a crash loop does not stall
every turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections.abc import Mapping

import grpc

from services.kernel.channels import FAST_RECONNECT, aio_channel
from services.kernel.endpoints import Endpoint
from services.kernel.on_demand import START_WAIT_SECONDS, names_from, waiting
from services.loop.core.errors import AuxiliaryError

GIVE_UP_SECONDS = 60.0
"""After a start that took longer than START_WAIT_SECONDS, calls stop waiting for this long."""

_WAIT_FOR_READY = ("grpc.service_config", json.dumps({"methodConfig": [{"name": [{}], "waitForReady": True}]}))


class ServiceChannel:
    """One service's aio channel, created on first use (it belongs to the event loop running then)."""

    def __init__(self, endpoint: Endpoint, component: str, env: Mapping[str, str] | None = None) -> None:
        self.endpoint = endpoint
        self.component = component
        """Named in the AuxiliaryError of a start that did not come ("memory", "mcp_catalog")."""
        self.on_demand = endpoint.scheme == "unix" and endpoint.service in names_from(os.environ if env is None else env)
        self._channel: grpc.aio.Channel | None = None
        self._given_up_until = 0.0
        self._warming: asyncio.Task[None] | None = None

    @property
    def channel(self) -> grpc.aio.Channel:
        if self._channel is None:
            self._channel = aio_channel(self.endpoint, [_WAIT_FOR_READY, *FAST_RECONNECT] if self.on_demand else None)
        return self._channel

    def waiting(self) -> bool:
        """True while the service runs on demand and is not running (the next call starts it)."""
        return self.on_demand and waiting(self.endpoint.path)

    async def started(self) -> None:
        """Return once the service can take a call: at once unless it runs on demand and this channel
        is not connected; raises AuxiliaryError when it did not start in time."""
        if not self.on_demand or time.monotonic() < self._given_up_until:
            return
        channel = self.channel
        if channel.get_state(try_to_connect=True) == grpc.ChannelConnectivity.READY:
            return
        try:
            await asyncio.wait_for(channel.channel_ready(), START_WAIT_SECONDS)
        except TimeoutError:
            self._given_up_until = time.monotonic() + GIVE_UP_SECONDS
            raise AuxiliaryError(self.component, f"the {self.endpoint.service} service did not start within "
                                                 f"{START_WAIT_SECONDS:.0f} s (see `ai-coding logs "
                                                 f"{self.endpoint.service}`)") from None

    def warm(self) -> None:
        """Start the service now, without waiting, when it runs on demand and is not running."""
        if not self.waiting() or (self._warming is not None and not self._warming.done()):
            return
        self._warming = asyncio.ensure_future(self._warm())

    async def _warm(self) -> None:
        with contextlib.suppress(AuxiliaryError):  # the call that needs it says so
            await self.started()

    async def close(self) -> None:
        if self._warming is not None:
            self._warming.cancel()
        if self._channel is not None:
            await self._channel.close()
