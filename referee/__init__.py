"""The referee: plays duels between sandboxed agents, with no Django and no database.

``referee.duel`` plays a duel (``run_duel``), ``referee.validation`` a validation by
self-play (``validate``), ``referee.channel`` is its end of one agent's protocol stream,
``referee.results`` the records a duel produces, and ``python -m referee`` the command line.
"""
