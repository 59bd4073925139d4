"""What memory may show or keep of a text, for every memory backend: ``refusal(text)`` says
why a text must not be kept or shown (instruction-like text, claims of the user's approval,
curl-to-shell, requests to send data out, invisible or lookalike characters, prompt and
HTML markup), ``shown(text)`` is a recalled text as a backend may put it before the model
(secrets redacted, refused text replaced by a placeholder, the rest escaped), ``escape``
shows every invisible character as an escape. The graph backend's ``safety`` module builds
on these; the files backend's index uses ``shown`` for its summaries, so a memory file
another program wrote passes the same filter as a journal line.

Secrets are not a reason to refuse: ``mino_core.secret_scan`` redacts the one token.
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


_CSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")  # terminal colour and cursor codes


def observed(text: str, placeholder: str = "[not kept: {why}]") -> str:
    """What memory may keep of text nobody approved (a call's subject, a tool's output):
    secrets redacted, colour codes dropped, and ``placeholder`` (``{why}`` filled in)
    instead when ``refusal`` refuses it."""
    from .secret_scan import redact_secrets

    text = redact_secrets(_CSI.sub("", text or ""))
    why = refusal(text)
    return text if why is None else placeholder.format(why=why)


def shown(text: str, placeholder: str = "[not shown: {why}]") -> str:
    """A recalled text as a block shows it: ``observed`` (redacted, filtered) then escaped,
    so no invisible character, line break or markup-like tag reaches the model unseen.
    Applied at recall time to everything, whoever wrote it and whenever."""
    return escape(observed(text, placeholder), backslash=False)


def escape(value: str, backslash: bool = True) -> str:
    """Show every invisible character as an escape (for notices printed to a terminal).
    ``backslash=False`` keeps backslashes as they are (text the model reads: a command's
    ``\\d`` stays a command; an escape mino wrote cannot be told from one in the text, which
    only matters to a person reading a terminal)."""
    if value.isprintable() and (not backslash or "\\" not in value):
        return value  # the common case: nothing to show differently
    out = []
    for ch in value:
        if ch == "\n":
            out.append("\\n")
        elif ch == "\\" and backslash:
            out.append("\\\\")
        elif ch == " " or ch == "\\" or unicodedata.category(ch)[0] not in "CZ":
            out.append(ch)
        else:
            out.append(f"\\u{ord(ch):04x}" if ord(ch) <= 0xFFFF else f"\\U{ord(ch):08x}")
    return "".join(out)
