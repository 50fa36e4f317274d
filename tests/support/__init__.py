"""Test infrastructure shared by the whole suite.

- ``require``: skip a test whose prerequisite is missing, or fail it when
  ``ARENA_REQUIRE_ALL=1`` (CI) says every test must run.
- ``postgres``: a throwaway PostgreSQL cluster for one test run.
- ``database`` (pytest plugin): points the test databases at PostgreSQL.
- ``browser`` (pytest plugin): Playwright with Debian's Chromium, ``page`` and
  ``screenshot`` fixtures.
"""
