"""Exit statuses and the one error the subcommands raise."""

OK, FAILED, USAGE = 0, 1, 2


class CliError(Exception):
    """A message for the user (one line) and the exit status to leave with."""

    def __init__(self, message: str, status: int = USAGE):
        super().__init__(message)
        self.status = status
