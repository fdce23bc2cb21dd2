"""Credentials in a URI never printed: `MLFLOW_TRACKING_URI=https://user:secret@host` once put the
password into `tinytf predict`'s error line. Every line the CLI prints about a store goes through
`redacted`; `tinytf.cli.main.guarded` applies it to every error line."""

from __future__ import annotations

import re

# scheme://userinfo@host: the userinfo runs to the last '@' before the path (a password with an
# unencoded '@' in it is still all hidden), and holds no '/' or space
USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<info>[^/\s]*)@")


def redacted(text: str) -> str:
    """`text` with the password of every URI in it replaced by ***: https://user:***@host. A user
    alone (often a token: https://TOKEN@host) becomes ***@host."""

    def hide(match: re.Match) -> str:
        user, colon, _ = match["info"].partition(":")
        return f"{match['scheme']}{user}:***@" if colon else f"{match['scheme']}***@"

    return USERINFO.sub(hide, text)
