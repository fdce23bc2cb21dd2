"""One exception type for every problem a user can fix: the CLI and the stages turn it into a
one-line message naming the key or file, and exit status 2, instead of a traceback."""


class TinyTFError(Exception):
    exit_code = 2


class ParamsError(TinyTFError):
    """A key or value in params.yaml is wrong; the message names the key and the file."""


class DataError(TinyTFError):
    """An input file or download is wrong; the message names the file (and line)."""


class OutputError(TinyTFError):
    """An output cannot be put in place (a read-only folder, say); the message names the path."""
