"""ai-coding services: one package per gRPC service plus the shared kernel."""
