"""One exception type for every problem a user can fix (bad params, bad data, bad files).

The CLI and the stage scripts turn it into a one-line message and exit status 2, so a
scheduled run fails with a sentence that names the key or file instead of a traceback.
"""


class TinyTFError(Exception):
    exit_code = 2


class ParamsError(TinyTFError):
    """A key or value in params.yaml is wrong; the message names the key and the file."""


class DataError(TinyTFError):
    """An input file or download is wrong; the message names the file (and line)."""


class OutputError(TinyTFError):
    """An output cannot be put in place (a read-only folder, say); the message names the path."""
