"""Workflows on the shared models that belong to no single app, one module per concept:
revisions, uploads, environments, publication, accounts, LLM players, online agents,
people playing (human), score competitions and confinement."""
