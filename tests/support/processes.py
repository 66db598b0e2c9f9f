"""Our services as real child processes (``ai-coding serve NAME``), and a health prober timing them."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import yaml
from grpc_health.v1 import health_pb2, health_pb2_grpc

AI_CODING = str(Path(sys.executable).with_name("ai-coding"))
CHANNEL_OPTIONS = [("grpc.max_receive_message_length", 64 * 1024 * 1024),
                   ("grpc.max_send_message_length", 64 * 1024 * 1024)]


def write_user_config(home: Path, config: dict[str, Any]) -> None:
    """The user-layer config file every child process reads."""
    cfg_dir = home / ".config" / "ai-coding"
    cfg_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    (cfg_dir / "config.yaml").write_text(yaml.safe_dump(config))
    os.chmod(cfg_dir / "config.yaml", 0o600)


class ServiceProcess:
    """``ai-coding serve NAME`` as a child process listening on ``sock``."""

    def __init__(self, name: str, sock: Path, log: Path) -> None:
        self.name, self.sock, self.log = name, sock, log
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60.0) -> None:
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen([AI_CODING, "serve", self.name], stdout=out, stderr=out)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.sock.exists():
                channel = grpc.insecure_channel(f"unix:{self.sock}")
                try:
                    grpc.channel_ready_future(channel).result(timeout=1)
                    return
                except grpc.FutureTimeoutError:
                    pass
                finally:
                    channel.close()
            assert self.proc.poll() is None, self.log.read_text()
            time.sleep(0.05)
        raise AssertionError(f"{self.name} service did not start: {self.log.read_text()}")

    def channel(self) -> grpc.Channel:
        return grpc.insecure_channel(f"unix:{self.sock}", options=CHANNEL_OPTIONS)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)


@dataclass
class HealthProbe:
    """Calls grpc.health.v1 Check on a socket every ``interval`` s in a thread; keeps each latency."""

    sock: Path
    interval: float = 0.05
    latencies: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> HealthProbe:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def _run(self) -> None:
        channel = grpc.insecure_channel(f"unix:{self.sock}")
        stub = health_pb2_grpc.HealthStub(channel)
        while not self._stop.is_set():
            began = time.monotonic()
            try:
                stub.Check(health_pb2.HealthCheckRequest(), timeout=30)
                self.latencies.append(time.monotonic() - began)
            except grpc.RpcError as exc:
                self.failures.append(f"{exc.code()}: {exc.details()}")
                self.latencies.append(time.monotonic() - began)
            self._stop.wait(self.interval)
        channel.close()

    def worst(self) -> float:
        return max(self.latencies, default=0.0)
