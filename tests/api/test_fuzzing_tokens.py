"""The API fuzzed with tokens through the real gateway, and each read of real rows: see
``test_fuzzing.py`` for what is fuzzed and how (a module of its own, so that two test
processes fuzz at once)."""

from __future__ import annotations

import pytest
import schemathesis

from tests.support.fuzzing import FuzzedWorld

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

with_tokens = schemathesis.pytest.from_fixture("token_schema")


@with_tokens.parametrize()
def test_it_answers_every_request_with_tokens_as_its_document_says(case):
    case.call_and_validate()


def test_it_answers_each_read_of_real_rows_as_its_document_says(
    world: FuzzedWorld, token_schema: schemathesis.BaseSchema
):
    """Generated ids rarely hit a row: each read once more, on the story's rows, with the
    token its security scheme names."""
    for path, parameters in world.reads.items():
        operation = token_schema[path]["GET"]
        security = operation.definition.raw["security"]
        schemes = {scheme for requirement in security for scheme in requirement}
        token = world.model_token if "ModelTokenAuth" in schemes else world.user_token
        case = operation.Case(path_parameters=parameters)
        response = case.call_and_validate(headers={"Authorization": f"Bearer {token}"})
        assert response.status_code == 200, path
    documented = {
        path for path, methods in token_schema.raw_schema["paths"].items() if "get" in methods
    }
    assert documented == set(world.reads)
