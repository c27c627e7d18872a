"""The query sanitizer: any text a user types becomes a valid FTS5 query (phrases, OR, NOT and
prefix* kept; syntax characters, dangling and doubled operators dropped)."""

from __future__ import annotations

import re

_OPERATORS = {"AND", "OR", "NOT"}
_TOKEN = re.compile(r'"([^"]*)"|(\S+)')
# FTS5 syntax characters that never carry meaning in a user's words: they become spaces
# (so `C++` searches `C`, `(problem` searches `problem`) before terms are formed.
_SYNTAX_CHARS = re.compile(r'[+{}()^"]')
_PLAIN_WORD = re.compile(r"^[^\W_]+$")
_HAS_WORD_CHAR = re.compile(r"[^\W_]")
_CJK = re.compile(
    "[\u1100-\u11ff\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u3100-\u312f\u3130-\u318f"
    "\u31a0-\u31ff\u3200-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff"
    "\uff65-\uffdc\U00020000-\U0003134f]"
)
def contains_cjk(text: str) -> bool:
    return bool(_CJK.search(text or ""))


def _term(text: str, prefix: bool) -> str | None:
    """One search term as FTS5 text: a bareword when it is plain letters/digits, else a phrase."""
    if not _HAS_WORD_CHAR.search(text):
        return None
    star = "*" if prefix else ""
    if _PLAIN_WORD.match(text) and text != "NEAR":
        return text + star
    return '"' + text.replace('"', "") + '"' + star


def _items(query: str) -> list[str]:
    """Terms and operators in order; an unmatched double quote is dropped."""
    # FTS5 reads its query as a C string: a NUL, even inside a phrase, ends it mid-token.
    query = query.replace("\x00", " ")
    if query.count('"') % 2:
        cut = query.rfind('"')
        query = query[:cut] + " " + query[cut + 1:]
    items: list[str] = []
    for phrase, bare in _TOKEN.findall(query):
        if phrase:
            term = _term(phrase, prefix=False)
            items += [term] if term else []
            continue
        for word in _SYNTAX_CHARS.sub(" ", bare).split():
            if word in _OPERATORS:
                items.append(word)
                continue
            prefix = len(word) > 1 and word.endswith("*")
            term = _term(word.rstrip("*") if prefix else word, prefix)
            items += [term] if term else []
    return items


def _drop_dangling_operators(items: list[str]) -> list[str]:
    """No operator at either end, and none right after another (`a AND OR b` keeps the first)."""
    kept: list[str] = []
    for item in items:
        if item in _OPERATORS and (not kept or kept[-1] in _OPERATORS):
            continue
        kept.append(item)
    while kept and kept[-1] in _OPERATORS:
        kept.pop()
    if not kept:
        # Only operator words (a search for "NOT" or "OR"): the user means the words themselves.
        kept = [f'"{item}"' for item in items if item in _OPERATORS]
    return kept


def sanitize_fts5_query(query: str) -> str:
    """Any user text -> an FTS5 query that cannot raise; '' when nothing searchable is left."""
    return " ".join(_drop_dangling_operators(_items(query or "")))


def plain_terms(query: str) -> list[str]:
    """The query's words and quoted phrases without operators or quotes, for the literal-substring fallback.

    Empty when the query uses OR or NOT: an AND of substrings would answer a different question.
    """
    if {"OR", "NOT"} & set(_drop_dangling_operators(_items(query or ""))):
        return []
    terms = []
    for phrase, bare in _TOKEN.findall((query or "").replace("\x00", " ")):
        for term in [phrase.strip()] if phrase else bare.split():
            term = term.strip('"*')
            if term and term not in _OPERATORS:
                terms.append(term)
    return terms
