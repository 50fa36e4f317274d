from arena_sdk import Agent


class RandomAgent(Agent):
    def act(self, turn):
        return turn.random.choice(turn.legal_actions)
