"""Credentials out of URLs before they are printed, logged or stored.

``redact_url("http://bob:pw@host/v1?api_key=abc&x=1")`` -> ``"http://bob:***@host/v1?api_key=***&x=1"``:
the password of ``user:password@`` and the value of every query parameter whose name looks like a
secret (key, token, secret, password, signature, auth, ...) are replaced by ``***``.
``redact_text`` does the same for every URL inside a longer text (an error message, a repr).
"""
from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

MASK = "***"
SECRET_PARAM = re.compile(r"(key|token|secret|passw|pwd|sig|auth|credential|session|code)", re.IGNORECASE)
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>`]*[^\s'\"<>`.,;:)\]]")  # no trailing punctuation


def redact_url(url: str | None) -> str | None:
    """The URL with its password and secret-looking query values masked (unparseable text: the
    part before any ``@`` is masked, to be safe)."""
    if not url:
        return url
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if "@" in netloc:
            userinfo, host = netloc.rsplit("@", 1)
            user = userinfo.split(":", 1)[0]
            netloc = f"{user}:{MASK}@{host}" if ":" in userinfo else f"{MASK}@{host}"
        query = parts.query
        if query:
            pairs = parse_qsl(query, keep_blank_values=True)
            query = urlencode([(k, MASK if SECRET_PARAM.search(k) else v) for k, v in pairs], safe="*")
        return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    except ValueError:
        return re.sub(r"//[^/@]*@", f"//{MASK}@", url)


def redact_text(text: str) -> str:
    """Every URL in ``text`` redacted with ``redact_url``."""
    return _URL.sub(lambda m: redact_url(m.group(0)), text) if text and "://" in text else text


def redact_value(value):
    """``redact_text`` applied to every string inside nested dicts/lists (for manifests)."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {k: redact_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_value(v) for v in value]
    return value
