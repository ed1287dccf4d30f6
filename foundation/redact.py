"""What hyporag writes or prints about a user's endpoints and its LMs' text, made safe to keep and to show.

A URL may carry a password (`http://user:PW@proxy/v1`, an MLflow URI with basic auth): every URL hyporag records
(run.json, MLflow params and artifacts, mlflow_run.json) or prints goes through `redact_url`. Corpus passages and
LM replies are untrusted text: `printable` keeps a terminal from obeying escape sequences hidden in them.
"""

from __future__ import annotations

import base64
import re
import urllib.parse

_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)[^/@\s]+@")
# C0 and C1 controls except tab and newline: ESC starts ANSI/OSC sequences (ESC]52 sets the clipboard, ESC[2J
# clears the screen), CR can overwrite a printed line, and 0x9b is the one-byte CSI
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def redact_url(url: str | None) -> str | None:
    """The URL without its user and password (`http://host:5000/v1`); anything else unchanged."""
    if not url:
        return url
    return _USERINFO.sub(lambda m: m.group("scheme"), str(url))


def redact_text(text: str) -> str:
    """Every URL inside a message (an error from LiteLLM or MLflow) without its user and password."""
    return _USERINFO.sub(lambda m: m.group("scheme"), text)


def split_userinfo(url: str) -> tuple[str, tuple[str, str] | None]:
    """(the URL without userinfo, (user, password) or None): credentials travel as an auth header, not as a host."""
    parts = urllib.parse.urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, None
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = host + (f":{parts.port}" if parts.port else "")
    clean = urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    return clean, (urllib.parse.unquote(parts.username or ""), urllib.parse.unquote(parts.password or ""))


def printable(text: object) -> str:
    """Text safe to write to a terminal: control characters shown as `\\x1b`-style escapes, tabs and newlines kept."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(text))


def basic_auth(user: str, password: str) -> str:
    """The Authorization header value for HTTP basic auth."""
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
