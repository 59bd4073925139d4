"""Secrets in text: where they are (``find_secrets``) and the text without them
(``redact_secrets``). One detector for everything mino keeps (both memory backends call
it before every write; the graph's recall calls it again before anything is shown).

It judges spans, not lines: only the secret itself becomes ``[redacted]``, so a fix such as
``NODE_OPTIONS=--max-old-space-size=4096`` or a message that mentions a password stays
whole and useful. Five detectors, each for one shape people paste:

- ``provider``: keys with a known prefix or layout (OpenAI, Anthropic, AWS, GitHub, GitLab,
  Slack, Stripe, Google, npm, PyPI, SendGrid, Hugging Face, JWTs, private key blocks...);
- ``url``: the password (or a token used as the user) in ``scheme://user:password@host``;
- ``assignment``: the value given to a name that says it is secret (``DB_PASSWORD=...``,
  ``"apiKey": "..."``, ``client_secret: ...``, ``--password=...``), unless the value is a
  reference (``$VAR``, ``${VAR}``, ``os.environ[...]``), a number or empty;
- ``prose``: a password-shaped word near a credential word in the same clause ("admin
  creds, admin / Tr0ub4dor-Staging-7", "pw for the vpn is ..."): a word mixing letters
  with digits or symbols, not a version, ticket, path, address, date or NAME_OF_A_VARIABLE;
- ``entropy``: a long random-looking run with no keyword at all. Tokens are split on
  ``= - _ / : . , ;`` first, so flags, paths and versions are judged by their parts, and
  hex (hashes, trace ids, digests) and upper-case-only ids (ULIDs) are never flagged
  without a keyword.

Measured against Yelp's detect-secrets on a labelled set: ``bench/secret_detection.py``.
The regular expressions compile on first use, so importing this module costs nothing.
"""
from __future__ import annotations

import math
import re
from functools import lru_cache

REDACTED = "[redacted]"


class _Lazy:
    """A pattern compiled on first use, so importing this module compiles nothing."""

    def __init__(self, pattern: str, flags: int = 0):
        self.pattern, self.flags, self._rx = pattern, flags, None

    def __getattr__(self, name):
        if self._rx is None:
            self._rx = re.compile(self.pattern, self.flags)
        return getattr(self._rx, name)

_PROVIDER = [
    r"\bsk-ant-(?:api|admin)\d\d-[A-Za-z0-9_-]{20,}",
    r"\bsk-(?:proj-|live-|svcacct-)?[A-Za-z0-9_-]{20,}",
    r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b",
    r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}\b",
    r"\bgithub_pat_[A-Za-z0-9_]{40,}\b",
    r"\bglpat-[A-Za-z0-9_-]{20,}",
    r"\bxox[abposr]-[A-Za-z0-9-]{10,}",
    r"\bAIza[0-9A-Za-z_-]{35}",
    r"\b(?:sk|pk|rk)_(?:live|test)_[A-Za-z0-9]{16,}\b",
    r"\bwhsec_[A-Za-z0-9+/=]{16,}",
    r"\bnpm_[A-Za-z0-9]{36}\b",
    r"\bpypi-AgE[A-Za-z0-9_-]{50,}",
    r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}",
    r"\bhf_[A-Za-z0-9]{30,}\b",
    r"\bdop_v1_[a-f0-9]{64}\b",
    r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b",
    r"\bglc_[A-Za-z0-9+/=]{32,}",
    r"\b\d{8,10}:AA[A-Za-z0-9_-]{30,}",  # a Telegram bot token
    r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",  # a JWT
    r"-----BEGIN [A-Z ]*PRIVATE KEY( BLOCK)?-----(?:.*?-----END [A-Z ]*PRIVATE KEY( BLOCK)?-----|.*)",
    r"(?<=AccountKey=)[A-Za-z0-9+/]{40,}={0,2}",
    r"(?i)(?<=\bbearer )[A-Za-z0-9._~+/-]{16,}=*",
    r"(?i)(?<=\bbasic )[A-Za-z0-9+/]{16,}=*",
]

# Words that say the value next to them is secret. Matched on an identifier's parts
# (DB_PASSWORD -> db, password) or as words in prose.
_STRONG = {"password", "passwd", "passphrase", "pwd", "pw", "pass", "pword", "passcode"}
_SECRET_WORDS = _STRONG | {"secret", "token", "apikey", "credential", "credentials", "creds",
                           "authtoken", "dsn", "sessionid", "cookie"}
# "key" alone names too much (a sort key, keyboard); these words before it make it a secret
_KEY_QUALIFIERS = {"api", "access", "secret", "private", "encryption", "signing", "account",
                   "master", "client", "auth", "license", "app", "x"}
_PROSE_WORDS = (r"passwords?|passwd|passphrase|pwd|pw|pass|creds|credentials?|login|log in|"
                r"logged in|sign in|signed in|username|user|account|admin|root|secret|token|"
                r"api key|access key|key")

_REFERENCE = _Lazy(r"^(?:\$|%|<%|\{\{|os\.|getenv|env\b|ENV\[|process\.env|settings\.|"
                        r"config\.|vault:|secret:|ref\+|!|\*+$|x+$|<[^>]*>$|\.\.\.$)", re.I)
_NUMBER = _Lazy(r"^[+-]?\d+(?:\.\d+)?[a-z]{0,2}$", re.I)
_VERSION = _Lazy(r"^v?\d+(?:\.\d+)+(?:[-+][\w.+-]*)?$", re.I)
_TICKET = _Lazy(r"^[A-Z][A-Z0-9]+-\d+$")
_CONSTANT = _Lazy(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$|^[A-Z]{2,}$")  # NAME_OF_A_VAR, CLI
_DATE = _Lazy(r"^\d{4}-\d\d-\d\d(?:[T ]\d\d:\d\d(?::\d\d)?(?:\.\d+)?Z?)?$|^\d\d:\d\d(?::\d\d)?$")
_EMAIL = _Lazy(r"^[\w.+-]+@[\w-]+(?:\.[\w-]+)+$")
_HEXISH = _Lazy(r"^[0-9a-fA-F]+$")
_SRI = _Lazy(r"\b(?:sha(?:1|256|384|512))[-:]", re.I)
_SPECIAL = set("!#$%^&*+=?~@")


@lru_cache(maxsize=1)
def _compiled():
    """The patterns, compiled once, on first use."""
    provider = [re.compile(p, re.S) for p in _PROVIDER]
    url = re.compile(r"[a-z][a-z0-9+.-]*://(?P<user>[^\s/:@'\"]*)(?::(?P<pw>[^\s/@'\"]+))?@[\w.-]",
                     re.I)
    ident = r"[A-Za-z_][\w.-]*"
    assignment = re.compile(
        rf"(?P<name>{ident})['\"]?\s*(?::=|=>|=|:(?!:))\s*(?:(?P<q>['\"])(?P<qv>[^'\"\n]{{1,200}})(?P=q)"
        rf"|(?P<value>[^\s'\",;}}<>]+))")
    flag = re.compile(
        r"(?:^|\s)(?:--(?P<flag>password|passwd|pass|token|access-token|api-key|apikey|secret|"
        r"client-secret|auth-token)[= ]|-p(?=\S)|(?:sshpass|redis-cli)\s(?:.*?\s)?-[pa]\s|"
        r"(?:-u|--user)\s+[^\s:]+:|htpasswd\s+-b\s+\S+\s+\S+\s+)(?P<q>['\"]?)(?P<value>[^\s'\"]+)(?P=q)")
    prose = re.compile(rf"(?<![\w-])(?:{_PROSE_WORDS})(?![\w-])", re.I)
    # "the passphrase ... is 'a few plain words'": a quoted value after a password word
    quoted = re.compile(r"(?<![\w-])(?:passwords?|passwd|passphrase|pwd|pw|pass)(?![\w-])"
                        r"[^.;\n'\"]{0,40}?(?:\bis|\bare|:|=)\s*(?P<q>['\"])(?P<value>[^'\"\n]{4,80})(?P=q)",
                        re.I)
    word = re.compile(r"\S+")
    entropy = re.compile(r"[A-Za-z0-9+/=_.:,;-]{20,}")
    # "the api key for X is 249f8d...": a long hex value stated for a secret word (hex
    # alone, near a weaker word such as "user", is an id: a session, a commit)
    stated = re.compile(r"(?<![\w-])(?:passwords?|passwd|passphrase|pwd|pw|pass|secret|token|"
                        r"api key|access key|key)(?![\w-])[^.;\n]{0,40}?(?:\bis|:|=)\s+"
                        r"(?P<value>[0-9a-fA-F]{20,})\b", re.I)
    return provider, url, assignment, flag, prose, quoted, stated, word, entropy


def _parts(name: str) -> list[str]:
    """An identifier's words: DB_PASSWORD, apiKey, x-api-key, spring.datasource.password."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [p.lower() for p in re.split(r"[\W_]+", spaced) if p]


def _secret_name(name: str) -> str | None:
    """``strong`` for a password-like name, ``secret`` for another secret name, else None."""
    parts = _parts(name)
    if not parts:
        return None
    if any(p in _STRONG or p.endswith(("password", "passwd")) for p in parts):
        return "strong"
    if parts[-1] in ("id", "ids", "ttl", "secs", "seconds", "count", "type", "name", "file",
                     "path", "url", "expiry", "expires", "length", "size"):
        return None  # about the secret, not the secret (bos_token_id, token_ttl)
    joined = "".join(parts)
    for i, p in enumerate(parts):
        if p in _SECRET_WORDS or p.endswith(("token", "secret")):
            return "secret"
        if p == "key" and (i == 0 or parts[i - 1] in _KEY_QUALIFIERS or len(parts) == 1):
            return "secret"
    if joined.endswith(("apikey", "secretkey", "accesskey", "privatekey")):
        return "secret"
    return None


def _entropy(s: str) -> float:
    counts: dict[str, int] = {}
    for ch in s:
        counts[ch] = counts.get(ch, 0) + 1
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def random_looking(piece: str) -> bool:
    """A run that only a machine would write: 20+ characters mixing upper case, lower case
    and digits with high entropy. Hex (hashes) and upper-case-only ids are not."""
    if len(piece) < 20 or _HEXISH.match(piece):
        return False
    upper = sum(c.isupper() for c in piece)
    lower = sum(c.islower() for c in piece)
    digits = sum(c.isdigit() for c in piece)
    if not (upper >= 2 and lower >= 2 and digits >= 2):
        return False
    return _entropy(piece) >= 3.9


def password_like(word: str) -> bool:
    """A word a person would use as a password: 6+ characters, letters mixed with digits or
    symbols; not a number, version, date, ticket, path, address, URL or CONSTANT_NAME."""
    w = word.strip("'\"()[]{}<>,;.`")
    if len(w) < 6 or len(w) > 80:
        return False
    if ("/" in w or "://" in w or _EMAIL.match(w) or _VERSION.match(w) or _TICKET.match(w)
            or _CONSTANT.match(w) or _DATE.match(w) or _NUMBER.match(w) or _REFERENCE.match(w)):
        return False
    letters = any(c.isalpha() for c in w)
    digit = any(c.isdigit() for c in w)
    special = any(c in _SPECIAL for c in w)
    return letters and (digit or special)


def _value_secret(value: str, strength: str, quoted: bool) -> bool:
    v = value.strip()
    if not v or _REFERENCE.match(v) or _NUMBER.match(v) or v.lower() in (
            "true", "false", "none", "null", "nil", "undefined", "required", "changeme"):
        return False
    if "(" in v or v.startswith(("[", "{")):
        return False  # a call or a structure: code that computes the value
    if strength == "strong" and (quoted or len(v) >= 6) and len(v) >= 4:
        return not (_CONSTANT.match(v) or re.fullmatch(r"[a-z]+(?:[-_][a-z]+)*", v) and not quoted)
    return (password_like(v) and not re.fullmatch(r"[a-z]+(?:-[a-z]+)+", v)) or random_looking(
        v) or (len(v) >= 16 and bool(_HEXISH.match(v)))


def find_secrets(text: str) -> list[tuple[int, int, str]]:
    """Spans ``(start, end, detector)`` of the secrets in ``text``, in order, not overlapping."""
    if not text:
        return []
    provider, url, assignment, flag, prose, quoted, stated, word, entropy = _compiled()
    spans: list[tuple[int, int, str]] = []
    for rx in provider:
        spans.extend((m.start(), m.end(), "provider") for m in rx.finditer(text))
    for m in url.finditer(text):
        if m.group("pw") and not _REFERENCE.match(m.group("pw")):
            spans.append((m.start("pw"), m.end("pw"), "url"))
        elif m.group("user") and (random_looking(m.group("user")) or (
                len(m.group("user")) >= 24 and _HEXISH.match(m.group("user")))):
            spans.append((m.start("user"), m.end("user"), "url"))
    for m in flag.finditer(text):
        if _value_secret(m.group("value"), "strong", bool(m.group("q"))):
            spans.append((m.start("value"), m.end("value"), "assignment"))
    at = 0
    while (m := assignment.search(text, at)) is not None:
        group = "qv" if m.group("qv") is not None else "value"
        strength = _secret_name(m.group("name"))
        if strength and _value_secret(m.group(group), strength, group == "qv"):
            spans.append((m.start(group), m.end(group), "assignment"))
            at = m.end()
        else:  # the value may itself start the next assignment (host:_password=...)
            at = m.start(group)
    for m in stated.finditer(text):
        spans.append((m.start("value"), m.end("value"), "prose"))
    for m in quoted.finditer(text):
        if not _REFERENCE.match(m.group("value")):
            spans.append((m.start("value"), m.end("value"), "prose"))
    for m in prose.finditer(text):
        clause_start = max(text.rfind(c, 0, m.start()) for c in ".;\n!?") + 1
        ends = [i for i in (text.find(c, m.end()) for c in (". ", ";", "\n", "? ")) if i >= 0]
        lo = max(clause_start, m.start() - 60)
        hi = min(min(ends) if ends else len(text), m.end() + 60)
        for w in word.finditer(text, lo, hi):
            whole = w.group(0).strip("'\"()[]{}<>,;.`")
            if (whole.startswith("-") or "=" in whole or "(" in whole or _DATE.match(whole) or _EMAIL.match(whole)
                    or "://" in whole or _HEXISH.match(whole)):
                continue
            for piece in re.finditer(r"[^/:\s]+(?:/[^/:\s]+)*", w.group(0)):
                p = piece.group(0)
                for sub in (re.finditer(r"[^/]+", p) if p.count("/") == 1 else [piece]):
                    s = sub.group(0)
                    core = s.strip("'\"()[]{}<>,;.`")
                    if password_like(core) and not _SRI.match(core):
                        start = w.start() + piece.start() + (sub.start() if sub is not piece else 0)
                        start += s.find(core)
                        spans.append((start, start + len(core), "prose"))
    for m in entropy.finditer(text):
        if _SRI.search(text, max(m.start() - 7, 0), m.start() + 7):
            continue  # sha512-... subresource integrity and sha256: digests are hashes
        for piece in re.finditer(r"[^=_/:.,;-]+", m.group(0)):
            if random_looking(piece.group(0)):
                spans.append((m.start() + piece.start(), m.start() + piece.end(), "entropy"))
    return _merged(spans)


def _merged(spans):
    out: list[tuple[int, int, str]] = []
    for start, end, kind in sorted(spans):
        if out and start <= out[-1][1]:
            if end > out[-1][1]:
                out[-1] = (out[-1][0], end, out[-1][2])
            continue
        out.append((start, end, kind))
    return out


def redact_secrets(text: str) -> str:
    """``text`` with each secret replaced by ``[redacted]``; everything else kept."""
    spans = find_secrets(text)
    if not spans:
        return text
    out, at = [], 0
    for start, end, _ in spans:
        out.append(text[at:start])
        out.append(REDACTED)
        at = end
    out.append(text[at:])
    return "".join(out)


def has_secret(text: str) -> bool:
    return bool(find_secrets(text))
