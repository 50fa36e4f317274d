"""Background work as jobs: one record (``core.models.jobs``) and one lifecycle for every
kind (a build, a validation, a publication, a duel, an evaluation).

- ``policies``: what each kind is (its task, subject, lease and attempts);
- ``lifecycle``: queueing, re-queueing, cancelling, and what a job's end does to the jobs
  that wait for it;
- ``worker``: a worker's side (claim, heartbeat, record, give back);
- ``watchdog``: recovery of jobs whose worker died or whose message was lost;
- ``dispatch``: starting a job's task once the transaction commits;
- ``signals``: what one app tells the others;
- ``local_builds``: a hosted revision's build on the worker's host.
"""
