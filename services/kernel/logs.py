"""Service logging: one file per service under ``<runtime>/logs``."""

from __future__ import annotations

import logging
import logging.handlers
import os
from pathlib import Path


def log_path(log_dir: Path, service: str) -> Path:
    return log_dir / f"{service}.log"


def setup_logging(service: str, log_dir: Path) -> Path:
    """Send the ``ai_coding`` loggers of this process to ``<log_dir>/<service>.log``."""
    log_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = log_path(log_dir, service)
    handler = logging.handlers.RotatingFileHandler(path, maxBytes=5_000_000, backupCount=2, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    level = os.environ.get("AI_CODING_LOG_LEVEL", "INFO").upper()
    root.setLevel(getattr(logging, level, logging.INFO))
    return path
