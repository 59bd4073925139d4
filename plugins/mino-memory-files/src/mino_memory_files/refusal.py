"""What a memory file may never hold when nobody confirms the save: secrets.

In a turn the confirmation is where the person catches a secret (the program does not
check, as the files backend's chapter says). A save nobody confirms (``mino mcp serve
--allow-save``) has no such person, so this filter refuses text shaped like a credential.
"""
from __future__ import annotations

import re

_I = re.IGNORECASE
SECRETS = [
    (re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY( BLOCK)?-----"), "a private key"),
    (re.compile(r"\b(sk|pk|rk)[-_](live[-_]|test[-_]|proj-|ant-)?[A-Za-z0-9_-]{16,}"), "an API key"),
    (re.compile(r"\b(AKIA|ASIA)[0-9A-Z]{16}\b"), "an AWS access key"),
    (re.compile(r"\b(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}\b|\bgithub_pat_\w{20,}"), "a GitHub token"),
    (re.compile(r"\bglpat-[A-Za-z0-9_-]{16,}|\bxox[abposr]-[A-Za-z0-9-]{10,}|\bAIza[\w-]{30,}"),
     "an access token"),
    (re.compile(r"\beyJ[\w-]{8,}\.eyJ[\w-]{8,}\.[\w-]{8,}"), "a JSON web token"),
    (re.compile(r"\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{16,}", _I), "an authorization header"),
    (re.compile(r"\b(password|passwd|pwd|passphrase|secret|api[_ -]?key|access[_ -]?key|"
                r"auth[_ -]?token|token|client[_ -]?secret)\b\s*(is|[:=])\s*['\"]?[^\s'\"]{6,}", _I),
     "a password or key assignment"),
    (re.compile(r"[a-z][a-z0-9+.-]*://[^\s/:@]+:[^\s/@]+@", _I), "credentials in a URL"),
]


def refusal(text: str) -> str | None:
    for pattern, what in SECRETS:
        if pattern.search(text):
            return what
    return None
