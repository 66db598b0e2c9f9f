"""Plans that prove themselves: acceptance items and their gate, the /plan runner, receipts,
the uncertainty ledger and checkpoint_write.

- ``acceptance``: a session's acceptance items (a statement plus a shell proof), where they
  come from (``/accept``, the user config, a plan item's ``verify``, the model's proposal tool);
- ``gate``: runs the unpassed proofs through the tools service, like any bash call;
- ``policy``: the pure parts the turn policy asks (the ``[acceptance-gate]`` nudge, the
  verdict facts).
"""
