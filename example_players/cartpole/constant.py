"""CartPole: always push left (Kaggle style, no SDK import); the pole falls in about 10 steps."""


def agent(observation, configuration):
    return 0
