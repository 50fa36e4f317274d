"""``python -m duel_runner``: the referee's command line (``python -m referee``), with no
database: play, validate or replay agents, LLM players (``llm:MODEL@URL``) included."""

from referee.cli import main

raise SystemExit(main())
