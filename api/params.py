"""The constrained values of paths and queries: what does not fit is a 422 with the
reason, never a database error."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

#: An environment's or a competitor's name.
Slug = Annotated[str, Field(pattern=r"^[-a-zA-Z0-9_]+$", max_length=64)]
#: A row's id (a PostgreSQL bigint).
Id = Annotated[int, Field(ge=1, le=2**63 - 1)]
#: A version or a match's index (a PostgreSQL integer).
Number = Annotated[int, Field(ge=0, le=2**31 - 1)]
#: A line of text a person gave (a team's name): no control character, which PostgreSQL
#: refuses (NUL) or a page would show garbled.
PRINTABLE = r"^[^\x00-\x1f\x7f]*$"
