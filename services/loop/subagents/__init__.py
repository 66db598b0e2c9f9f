"""Subagents: the ``subAgent`` tool, child runs as ephemeral sessions, the runs table and ``/tasks``.

- ``contract``: the ``output_schema`` checks and the tolerant parse (pure);
- ``packet``: what a run returns and how it maps to the parent's tool result;
- ``child``: a child run's state and its ``ports.TurnContext`` over the parent session;
- ``manager``: one session's runs (foreground, background, capacity, table, transcripts).
"""
