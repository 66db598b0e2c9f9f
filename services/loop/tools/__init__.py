"""The session's tool table and how one batch of calls runs."""
