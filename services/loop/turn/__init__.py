"""One turn: the pipeline, its request and its acceptance gate."""
