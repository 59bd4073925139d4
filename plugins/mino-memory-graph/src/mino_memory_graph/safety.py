"""What may never be remembered, and redaction before anything is sent or stored.

``refusal(text)`` says why a piece of text must not be written to memory (or None). It is
the reflection's filter: a reflection is the model summarising a run in which files, web
pages and tool output were read, so anything in it may carry someone else's instruction.
The filter refuses, by pattern:

- instruction-like text: override phrases ("ignore previous instructions"), persona
  changes ("you are now ..."), standing orders ("before any work, run ...", "every
  session must ..."), attempts to skip the user ("without asking", "do not tell the user");
- secret-bearing text: API keys and tokens of the common shapes, private key blocks,
  ``password=...``-style assignments, bearer tokens, JWTs, long random-looking strings,
  and requests to send data to a URL;
- curl-to-shell: a download piped into an interpreter, ``bash <(curl ...)``, ``eval
  "$(curl ...)"``;
- invisible or lookalike characters: control, zero-width, direction-changing, private-use
  and non-ASCII space characters; Latin words mixed with Cyrillic or Greek letters;
  full-width ASCII;
- markup: chat-template and prompt tags (``<system>``, ``<|im_start|>``, ``[INST]``),
  HTML elements that execute or load (``<script``, ``<img``, ``<iframe``...), and markdown
  image links that carry data in their query string.

It errs on the side of refusing: a refused item is simply not stored, and the user is told
how many were refused and why. ``redact(text)`` replaces secret-shaped strings with
``[redacted]``; the reflection's input is redacted before it leaves the machine.
"""
from __future__ import annotations

import re
import unicodedata

_I = re.IGNORECASE

INSTRUCTION = [
    re.compile(r"\b(ignore|disregard|forget|override|bypass)\b[^.\n]{0,40}\b(previous|prior|above|"
               r"earlier|all|any|your|the|system|safety)\b[^.\n]{0,30}\b(instructions?|rules?|"
               r"prompts?|messages?|guidelines?|directions?|polic(y|ies)|constraints?)", _I),
    re.compile(r"\bnew (instructions?|rules?|system prompt)\b", _I),
    re.compile(r"\b(system|developer) (prompt|message|instructions?)\b", _I),
    re.compile(r"\byou are (now|no longer)\b", _I),
    re.compile(r"\b(act|behave|respond) as (if you (are|were)|an?|the)\b", _I),
    re.compile(r"\bpretend (to be|you are|you're)\b", _I),
    re.compile(r"\byour (new )?(role|persona|identity|name) (is|will be)\b", _I),
    re.compile(r"\b(from now on|henceforth|going forward)\b[^.\n]{0,30}\b(you|assistant|ai)\b"
               r"[^.\n]{0,20}\b(must|should|will|shall)\b", _I),
    re.compile(r"\b(before|at the start of|prior to)\s+(any|every|each|all)\s+(work|session|task|"
               r"turn|conversation|request|command)s?\b", _I),
    re.compile(r"\b(every|each|all)\s+(future\s+)?(sessions?|turns?|conversations?)\b[^.\n]{0,40}"
               r"\b(run|execute|must|should|first)\b", _I),
    re.compile(r"\bwithout (asking|telling|confirmation|approval|permission)\b", _I),
    re.compile(r"\b(do not|don't|never) (tell|inform|ask|warn|notify) the user\b", _I),
    re.compile(r"\b(note|message|instructions?) (to|for) (the )?(ai|assistants?|agents?|llms?|"
               r"models?|bots?)\b", _I),
    re.compile(r"\b(disable|turn off|skip)\b[^.\n]{0,20}\b(sandbox|permission|confirmation|"
               r"approval|safety|guard)s?\b", _I),
    re.compile(r"\b(save|store|add|write)\b[^.\n]{0,30}\b(to|in|into) (your|the) memory\b", _I),
]

SECRET = [
    re.compile(r"\bsk-(live-|proj-|ant-)?[A-Za-z0-9_-]{16,}"),
    re.compile(r"\b(AKIA|ASIA)[0-9A-Z]{16}\b"),
    re.compile(r"\b(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}\b"),
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}\b"),
    re.compile(r"\bglpat-[A-Za-z0-9_-]{16,}\b"),
    re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b"),
    re.compile(r"\bAIza[0-9A-Za-z_-]{30,}\b"),
    re.compile(r"\b(sk|pk|rk)_(live|test)_[A-Za-z0-9]{16,}\b"),
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY( BLOCK)?-----"),
    re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    re.compile(r"\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{16,}", _I),
    re.compile(r"\b(password|passwd|pwd|passphrase|secret|api[_ -]?key|access[_ -]?key|"
               r"auth[_ -]?token|token|client[_ -]?secret|private[_ -]?key)\b\s*(is|[:=])\s*"
               r"['\"]?[^\s'\"]{6,}", _I),
    re.compile(r"[a-z][a-z0-9+.-]*://[^\s/:@]+:[^\s/@]+@", _I),  # credentials in a URL
]
# A long run of letters and digits mixing both, such as a token with no known prefix.
_LONG_RANDOM = re.compile(r"[A-Za-z0-9+/_=-]{32,}")
EXFILTRATION = re.compile(
    r"\b(send|post|upload|forward|exfiltrate|leak|email|paste)\b[^\n]{0,80}?\b(to|at)\s+"
    r"(https?://|\S+@\S+\.\w+)", _I)

CURL_TO_SHELL = [
    re.compile(r"\b(curl|wget|fetch|iwr|invoke-webrequest|invoke-restmethod)\b[^\n|;]*\|\s*"
               r"(sudo\s+)?(-\S+\s+)*(sh|bash|zsh|dash|ksh|fish|python[0-9.]*|perl|ruby|node|php|"
               r"iex|invoke-expression|source)\b", _I),
    re.compile(r"\b(sh|bash|zsh|source|\.)\s+<\(\s*(curl|wget)\b", _I),
    re.compile(r"\b(eval|sh\s+-c|bash\s+-c)\s+[\"']?\$\(\s*(curl|wget)\b", _I),
]

MARKUP = [
    re.compile(r"<\|?\s*/?\s*(system|assistant|user|developer|instructions?|im_start|im_end|"
               r"endoftext|tool|tools|function_calls?|context|memory|prompt)\s*\|?>", _I),
    re.compile(r"<\|[a-z_]+\|>", _I),
    re.compile(r"\[/?INST\]|<<\s*/?SYS\s*>>", _I),
    re.compile(r"^\s*#{1,6}\s*(system|instructions?|assistant)\b", _I | re.MULTILINE),
    re.compile(r"<\s*/?\s*(script|iframe|img|object|embed|svg|style|link|meta|form|input|"
               r"a\s+href|base|frame|audio|video|source)\b", _I),
    re.compile(r"!\[[^\]]*\]\(\s*[a-z]+://[^)\s]*[?&=#][^)]*\)", _I),
    re.compile(r"\bjavascript:", _I),
    re.compile(r"\bdata:[a-z]+/[a-z0-9.+-]+;base64,", _I),
]


def _char_problem(text: str) -> str | None:
    latin_words = False
    for word in re.findall(r"\w+", text):
        scripts = set()
        for ch in word:
            if ch.isascii():
                if ch.isalpha():
                    scripts.add("latin")
            elif ch.isalpha():
                name = unicodedata.name(ch, "")
                if name.startswith(("CYRILLIC", "GREEK")):
                    scripts.add("cyr/greek")
        if len(scripts) > 1:
            latin_words = True
            break
    if latin_words:
        return "lookalike characters (Latin mixed with Cyrillic or Greek in one word)"
    for ch in text:
        if ch in "\n\t" or ch == " ":
            continue
        cat = unicodedata.category(ch)
        if cat[0] == "C":
            return f"an invisible or control character (U+{ord(ch):04X})"
        if cat[0] == "Z":
            return f"a non-ASCII space (U+{ord(ch):04X})"
        if 0xFF01 <= ord(ch) <= 0xFF5E:
            return f"a full-width lookalike character (U+{ord(ch):04X})"
        if 0xE0000 <= ord(ch) <= 0xE007F:  # tag characters hide text
            return f"an invisible tag character (U+{ord(ch):04X})"
    return None


def _looks_random(token: str) -> bool:
    letters = sum(c.isalpha() for c in token)
    digits = sum(c.isdigit() for c in token)
    if digits < 4 or letters < 4:
        return False
    upper = sum(c.isupper() for c in token)
    lower = sum(c.islower() for c in token)
    # A path or a slug is mostly lower case words; a token mixes cases and digits.
    return upper >= 3 and lower >= 3 or digits >= 8


def refusal(text: str) -> str | None:
    """Why ``text`` must not be written to memory, or None when it may be."""
    if not text:
        return None
    why = _char_problem(text)
    if why:
        return why
    for rx in CURL_TO_SHELL:
        if rx.search(text):
            return "a download piped into a shell (curl-to-shell)"
    for rx in SECRET:
        if rx.search(text):
            return "something that looks like a secret (key, token, password)"
    for m in _LONG_RANDOM.finditer(text):
        if _looks_random(m.group(0)):
            return "a long random-looking string (possibly a secret)"
    if EXFILTRATION.search(text):
        return "a request to send data somewhere"
    for rx in MARKUP:
        if rx.search(text):
            return "prompt or HTML markup"
    for rx in INSTRUCTION:
        if rx.search(text):
            return "instruction-like text (an order to the assistant, not a fact)"
    return None


REDACTED = "[redacted]"
_CSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")  # terminal colour and cursor codes


def observed(text: str, placeholder: str = "[not kept: {why}]") -> str:
    """What memory may keep of text the program observed (a call's subject, a failure's
    output): redacted, colour codes dropped, and ``placeholder`` (``{why}`` filled in)
    instead when the reflection's filter (``refusal``) refuses it. Observed text is
    recorded without asking anyone, so it gets the same filter a reflection gets."""
    text = redact(_CSI.sub("", text or ""))
    why = refusal(text)
    return text if why is None else placeholder.format(why=why)


def redact(text: str) -> str:
    """``text`` with secret-shaped strings replaced by ``[redacted]``."""
    if not text:
        return text
    for rx in SECRET:
        text = rx.sub(REDACTED, text)
    return _LONG_RANDOM.sub(lambda m: REDACTED if _looks_random(m.group(0)) else m.group(0), text)


def escape(value: str) -> str:
    """Show every invisible character as an escape (for notices printed to a terminal)."""
    out = []
    for ch in value:
        if ch == "\n":
            out.append("\\n")
        elif ch == "\\":
            out.append("\\\\")
        elif ch == " " or unicodedata.category(ch)[0] not in "CZ":
            out.append(ch)
        else:
            out.append(f"\\u{ord(ch):04x}" if ord(ch) <= 0xFFFF else f"\\U{ord(ch):08x}")
    return "".join(out)
