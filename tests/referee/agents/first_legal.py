from arena_sdk import Agent


class FirstLegal(Agent):
    """Deterministic: the same position always gets the same answer."""

    def act(self, turn):
        return turn.legal_actions[0]
