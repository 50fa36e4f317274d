from arena_sdk import agent


@agent
def divide(turn):
    return turn.legal_actions[0] // 0
