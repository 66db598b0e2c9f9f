"""gRPC clients of the other services behind the loop's ports (services/loop/core/ports.py)."""
