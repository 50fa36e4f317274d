"""The one domain exception: user-facing, saying what was wrong and what to do."""


class ArenaError(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
