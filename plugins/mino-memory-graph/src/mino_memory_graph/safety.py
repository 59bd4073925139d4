"""What may never be remembered, and redaction before anything is sent or stored.

``refusal(text)`` says why a piece of text must not be written to memory (or None). It is
the reflection's filter: a reflection is the model summarising a run in which files, web
pages and tool output were read, so anything in it may carry someone else's instruction.
The filter refuses, by pattern:

- instruction-like text: override phrases ("ignore previous instructions"), persona
  changes ("you are now ..."), standing orders ("before any work, run ...", "every
  session must ..."), attempts to skip the user ("without asking", "do not tell the user");
- claims of authority the text cannot have: "approved by the user", "the user
  authorized ...", flags that switch checks off (``--trust-all``, ``--dangerously-...``):
  text the model wrote is never the person's approval;
- requests to send data to a URL;
- curl-to-shell: a download piped into an interpreter, ``bash <(curl ...)``, ``eval
  "$(curl ...)"``;
- invisible or lookalike characters: control, zero-width, direction-changing, private-use
  and non-ASCII space characters; Latin words mixed with Cyrillic or Greek letters;
  full-width ASCII;
- markup: chat-template and prompt tags (``<system>``, ``<|im_start|>``, ``[INST]``),
  HTML elements that execute or load (``<script``, ``<img``, ``<iframe``...), and markdown
  image links that carry data in their query string.

It errs on the side of refusing: a refused item is simply not stored, and the user is told
how many were refused and why. Secrets are not a reason to refuse: ``redact(text)``
replaces each secret (``mino_core.secret_scan``: the one token, not the line) with
``[redacted]``, so a fix keeps its flags (issue 25: ``NODE_OPTIONS=--max-old-space-size=4096``
was once dropped whole). The reflection's input is redacted before it leaves the machine,
every journal write is redacted (``store.Request.apply``), and ``shown(text)`` filters,
redacts and escapes every recalled text again when a block is rendered: a line another
program, a teammate or an import wrote passes the same checks as our own.
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
# Text that claims the person's authority: a remembered line is never an approval.
AUTHORITY = [
    re.compile(r"\b(approved|authori[sz]ed|confirmed|allowed|permitted|sanctioned|okay(ed)?|ok'?d|"
               r"signed off|requested|mandated)\s+(it\s+)?by\s+(the\s+)?(user|owner|admin|"
               r"administrator|operator|maintainer|human|person|developer)s?\b", _I),
    re.compile(r"\b(the\s+)?(user|owner|human|person|operator)\s+(has\s+|had\s+|already\s+)*"
               r"(approved|authori[sz]ed|allowed|permitted|consented|agreed|confirmed|"
               r"pre-?approved|signed off)\b", _I),
    re.compile(r"\b(with|has|have|got)\s+(the\s+)?(user'?s?|owner'?s?|explicit|prior|standing|"
               r"full)\s+(approval|permission|consent|authori[sz]ation|blessing)\b", _I),
    re.compile(r"\b(pre-?approved|user-approved|auto-?approved?|already approved|always approved)\b",
               _I),
    re.compile(r"(^|\s)--?(trust-all|trust-everything|dangerously[\w-]*|no-sandbox|"
               r"disable-sandbox|allow-all|skip-permissions?|bypass[\w-]*|yolo|no-confirm|"
               r"unsafe-perm)\b", _I),
]

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
    if EXFILTRATION.search(text):
        return "a request to send data somewhere"
    for rx in MARKUP:
        if rx.search(text):
            return "prompt or HTML markup"
    for rx in INSTRUCTION:
        if rx.search(text):
            return "instruction-like text (an order to the assistant, not a fact)"
    for rx in AUTHORITY:
        if rx.search(text):
            return "a claim of the user's approval or a flag that turns checks off"
    return None


def secret_warning(text: str) -> str | None:
    """"a secret (...)" when ``text`` holds one (for a confirmation's warning), else None."""
    from mino_core import find_secrets

    found = find_secrets(text or "")
    return f"a secret ({found[0][2]}), which is saved as {REDACTED}" if found else None


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
    """``text`` with each secret replaced by ``[redacted]`` (``mino_core.secret_scan``)."""
    if not text:
        return text
    from mino_core import redact_secrets

    return redact_secrets(text)


# The fields of a journal operation that hold text (ops.py); ids, kinds and numbers never do.
OP_TEXT_FIELDS = ("label", "key", "value", "new_key", "new_value", "detail")
_OP_CACHE: dict[str, str] = {}  # the same short texts recur (log kinds, "ok", ids)


def _redacted_cached(text: str) -> str:
    hit = _OP_CACHE.get(text)
    if hit is None:
        hit = redact(text)
        if len(text) <= 256:
            if len(_OP_CACHE) >= 4096:
                _OP_CACHE.clear()
            _OP_CACHE[text] = hit
    return hit


def redact_op(body: dict) -> dict:
    """A journal operation's body with its texts redacted (the same dict when nothing
    changes, so the common case copies nothing). A ``PushContext`` chunk's note too."""
    out = body
    for key in OP_TEXT_FIELDS:
        value = body.get(key)
        if isinstance(value, str) and value:
            clean = _redacted_cached(value)
            if clean != value:
                if out is body:
                    out = dict(body)
                out[key] = clean
    chunk = body.get("chunk")
    note = chunk.get("note") if isinstance(chunk, dict) else None
    if isinstance(note, str) and note and _redacted_cached(note) != note:
        out = dict(out) if out is body else out
        out["chunk"] = {**chunk, "note": _redacted_cached(note)}
    return out


def shown(text: str, placeholder: str = "[not shown: {why}]") -> str:
    """A recalled text as a block shows it: secrets redacted, colour codes dropped, a
    placeholder where the filter refuses it, and what is left escaped (``escape``) so no
    invisible character, line break or markup-like tag reaches the model unseen. Applied at
    recall time to everything, whoever wrote it and whenever: a journal line written by
    another program, a teammate or an import, or before a filter existed, passes here too."""
    return escape(observed(text, placeholder))


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
