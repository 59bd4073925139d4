"""hybrid-v1's words: lowercase ASCII alphanumerics, English stopwords dropped, the
Snowball English stemmer (Porter2, through PyStemmer); relative time expressions. No
numpy, so the on-disk index (``index.py``) tokenises with exactly the rules the scorer
uses: a change of these rules is a change of the index's format (``index.SCHEMA``).

Why Snowball (issue 25): the light suffix stripper it replaces folded plurals, -ing and
-ed only, so "tracing" never met "traces", "connection" never met "connect", "lately"
never met "late". Snowball is the maintained stemmer search engines use (Lucene,
SQLite's and PostgreSQL's full-text search); PyStemmer is its C implementation, one small
wheel with no dependency, so a word costs a dictionary look-up once memoised.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import Stemmer

_SNOWBALL = Stemmer.Stemmer("english")

# English function words, contractions split at the apostrophe, and chat fillers.
STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being below between
    both but by can could did do does doing down during each few for from further had has have having he her
    here hers herself him himself his how i if in into is it its itself just me more most my myself no nor not
    now of off on once only or other ought our ours ourselves out over own same she should so some such than
    that the their theirs them themselves then there these they this those through to too under until up very
    was we were what when where which while who whom why will with would you your yours yourself yourselves
    s t d ll m re ve n't also really yeah oh hey hi
    """.split()
)

# Relative time expressions (stemmed form).  Month names and years are left
# out on purpose: they also occur in dates kept as metadata on every node.
_RELATIVE_TIME = frozenset(
    """
    yesterday today tonight tomorrow ago last next week weekend month year recently soon earlier lately
    monday tuesday wednesday thursday friday saturday sunday
    """.split()
)
_TEMPORAL_QUERY = re.compile(
    r"^\W*when\b|\bwhat (?:year|month|date|day|time)\b|\bhow long ago\b|\bwhich (?:year|month|day)\b"
)
_WORD = re.compile(r"[a-z0-9]+")
_WORD_OR_NUL = re.compile(r"[a-z0-9]+|\x00")


def stem(word: str) -> str:
    """The Snowball English stem of one lowercase word (numbers and words of 3 letters
    or fewer are kept as they are: "ran", "api", "k8s" mean what they say)."""
    if len(word) <= 3 or word.isdigit():
        return word
    return _SNOWBALL.stemWord(word)


_STEMS: dict[str, str | None] = {w: None for w in STOPWORDS}  # word -> stem, None = stopword


def tokenize(text: str) -> list[str]:
    """Lowercase, split on non-alphanumerics, drop stopwords, stem (memoised per word)."""
    memo = _STEMS
    found = _WORD.findall(text.lower())
    try:  # every word seen before: one pass in C
        return [s for s in map(memo.__getitem__, found) if s is not None]
    except KeyError:
        pass
    out = []
    for w in found:
        s = memo.get(w, w)
        if s is w:  # not seen yet (a stored stem is never the same object as a new word)
            s = stem(w)
            if len(memo) < 1 << 20:
                memo[w] = s
        if s is not None:
            out.append(s)
    return out


_RELATIVE_TIME_STEMS = frozenset(stem(w) for w in _RELATIVE_TIME)


def is_temporal_query(query: str) -> bool:
    return _TEMPORAL_QUERY.search(query.lower()) is not None


@dataclass(frozen=True)
class HybridParams:
    k1: float = 1.2
    b: float = 0.75
    neighbour: float = 0.5
    cluster: float = 0.5
    hashing: float = 0.2
    # 0: mino writes no speaker facts, so the agent's recall names no entities (issue 16);
    # bench/locomo_recall.py's benchmark-built HybridIndex rows name speakers and pass 0.5.
    entity: float = 0.0
    temporal: float = 0.3
    # A turn's episode holds the person's own words, and the cluster and neighbour signals
    # of its session lift it further; a saved fact (a memory node, a pitfall) has neither.
    # So a message that merely mentioned a fact's words ranked above the fact it saved
    # (issue 25). An episode's score is multiplied by this: between episodes nothing
    # changes (LoCoMo through the loop stores only episodes), against a fact of about the
    # same match the fact comes first. The agent's recall paths apply it (``search.py``,
    # ``HybridScorer``); ``HybridIndex`` knows no kinds. ``memory.graph.episode_weight``;
    # below 1 it also lets a fact outrank the message that saved it (``results.lift_saved``),
    # 1 is the rule before issue 25.
    episode: float = 0.8
