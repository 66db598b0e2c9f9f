"""``python -m services.fake_model``: the same as ``ai-coding fake-model``."""

from services.fake_model.main import main

raise SystemExit(main())
