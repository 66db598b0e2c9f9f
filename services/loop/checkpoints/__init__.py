"""Checkpoints as a session feature: the tools service snapshots the workspace before every
changing step; this feature remembers which snapshot belongs to which turn and step, takes one
at the end of every turn (what the user changes after it is theirs), and gives the user
``/rewind``, ``/undo``, ``/redo`` and ``/checkpoints``. The model has no way to restore."""
