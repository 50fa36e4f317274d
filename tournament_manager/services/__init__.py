"""Tournaments: creating, scheduling, launching, following duels to the end, standings.

Three formats:

- round robin: every pair of participants plays one duel; in a game of more than two
  players (N seats), every group of N participants plays one duel (``round_robin_groups``);
- Swiss: a set number of rounds; round 1 pairs by seed (the published leaderboard's
  order), each next round (scheduled by the
  tournament manager once the previous one is over) pairs by score groups, avoiding
  rematches (``tournament_manager.pairing``); when the count is odd, one player sits out
  with a bye worth a won duel;
- continuous ladder: runs until stopped; the newest validated revision of every
  competitor plays, paired by ``tournament_manager.matchmaking``, a few duels at a time;
  its standings are a Bradley-Terry fit of its own matches (``standings.py``); in a game
  of N players it matches groups of N.

Swiss pairs two players; a game of more than two is refused for it (a round robin or a
ladder plays it).

Points: 2 for a duel won (or a bye), 1 for a draw; standings by points, then (Swiss)
Buchholz, then duel wins, then total match score; ties share a rank; a withdrawn
participant keeps its results and ranks last. Progress counts are recomputed from the
duels, never incremented, so they stay exact whoever moved a duel. The duels themselves
are played by ``duel_runner.services``; the timed work (scheduled launches, expired leases, next
rounds, matchmaking) is done by the tournament manager daemon (``tournament_manager.daemon``).

Every change that several tournament managers (or a manager and an organizer) could
make at once is claimed with a conditional UPDATE and its row count: the first one wins,
the others find nothing to do.

The modules, each importing only those listed before it:

- ``scheduling``: a tournament's duels created, queued to play and cancelled;
- ``standings``: points, records and ranks recomputed from the finished duels;
- ``settlement``: progress counts, standings and the end of a tournament brought in line
  with its duels; what a duel's end, failure or re-run does to its tournament;
- ``participants``: a participant withdrawn;
- ``round_robin``: who plays whom in a round robin;
- ``swiss``: the rounds of a Swiss tournament;
- ``ladder``: a ladder's entries and its matchmaking;
- ``tournaments``: the lifecycle, from draft to launched, cancelled or stopped;
- ``standing``: each game's standing ladder and score competition;
- ``competitions``: a competition's final launched at its deadline and published, a team
  disqualified.
"""
