"""The one domain exception: user-facing, saying what was wrong and what to do."""


class ArenaError(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def sentence(message: str) -> str:
    """A service's message (``the file is empty``) as a sentence for a page."""
    message = message.strip()
    if not message:
        return message
    message = message[0].upper() + message[1:]
    return message if message.endswith((".", "!", "?")) else message + "."
