"""The protocol line the referee writes (``referee.channel.encode``)."""

from __future__ import annotations

import json

import pytest

from referee.channel import encode


def test_a_message_is_one_line_of_compact_json() -> None:
    line = encode({"type": "act", "id": 3, "legal_actions": [0, 1], "observation": {"a": 1.5}})

    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert json.loads(line) == {
        "type": "act",
        "id": 3,
        "legal_actions": [0, 1],
        "observation": {"a": 1.5},
    }


def test_an_observation_with_integer_keys_is_sent_with_string_keys() -> None:
    # As JSON has them, and as the standard library's encoder would write them.
    message = {"type": "act", "observation": {"hands": {0: [1, 2], 1: []}, "turn": 0}}

    line = encode(message)

    assert json.loads(line) == json.loads(json.dumps(message))
    assert json.loads(line)["observation"]["hands"] == {"0": [1, 2], "1": []}


def test_what_is_not_json_is_refused() -> None:
    with pytest.raises(TypeError):
        encode({"type": "act", "observation": object()})
