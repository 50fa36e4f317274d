"""What the site and the REST API show, and to whom: one set of rules and reads below both.

- ``access``: who may see what (public, owner, organizer; hidden information while a match
  is played), as a check of one row and as a filter for lists.
- ``selectors``: the reads of the pages and the API (tournaments, duels and their seats,
  revisions, the leaderboard, ratings).
- ``replays`` and ``live``: a match's replay, and a running duel for its spectators.
- ``llm`` and ``scores``: LLM players' statistics and conversations; score competitions.
- ``charts``: the rating chart, drawn from the selectors' points.

``web`` (pages) and ``api`` (JSON) both call these and import neither each other.
"""
