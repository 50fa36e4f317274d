from arena_sdk import Agent


class Chatty(Agent):
    def act(self, turn):
        print("thinking about", turn.legal_actions)
        return turn.legal_actions[0]
