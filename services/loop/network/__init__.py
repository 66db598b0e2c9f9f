"""The session's standing network grants (``/network``)."""
