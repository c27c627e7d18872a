"""The query sanitizer: any text a user types becomes a valid FTS5 query (phrases, OR, NOT and
prefix* kept; syntax characters, dangling and doubled operators dropped), and, for a query with
CJK text, a tree of terms (`parse`) where each CJK run and each Latin word is a term."""

from __future__ import annotations

import re
from dataclasses import dataclass

_OPERATORS = {"AND", "OR", "NOT"}
_TOKEN = re.compile(r'"([^"]*)"|(\S+)')
# FTS5 syntax characters that never carry meaning in a user's words: they become spaces
# (so `C++` searches `C`, `(problem` searches `problem`) before terms are formed.
_SYNTAX_CHARS = re.compile(r'[+{}()^"]')
_PLAIN_WORD = re.compile(r"^[^\W_]+$")
_HAS_WORD_CHAR = re.compile(r"[^\W_]")
CJK_CLASS = (
    "\u1100-\u11ff\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u3100-\u312f\u3130-\u318f"
    "\u31a0-\u31ff\u3200-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff"
    "\uff65-\uffdc\U00020000-\U0003134f"
)
_CJK = re.compile(f"[{CJK_CLASS}]")
CJK_RUN = re.compile(f"[{CJK_CLASS}]+")


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


def has_terms(query: str) -> bool:
    """Whether the query holds anything to search for: a word, a CJK run, or punctuation searched as
    text; not an empty query, nor one of only quotes and `*`."""
    return contains_cjk(query) or bool(sanitize_fts5_query(query)) or bool(plain_terms(query))


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


# A query with CJK text is parsed into a tree instead: FTS5's unicode61 tokenizer keeps a whole CJK
# run as one token (`東京の天気は晴れ` is one "word"), so a CJK term must match as a substring while
# the Latin words around it stay FTS5 terms. Grammar (operators upper-case, as in FTS5):
#   query := and (OR and)*      and := (NOT? primary)+ joined by AND or by juxtaposition
#   primary := ( query ) | "phrase" | word     -- a word splits into its CJK and Latin runs

@dataclass(frozen=True)
class Latin:
    """An FTS5 term: a bareword or a phrase, optionally a prefix."""

    text: str
    phrase: bool = False
    prefix: bool = False

    def fts(self) -> str:
        star = "*" if self.prefix else ""
        if not self.phrase and _PLAIN_WORD.match(self.text) and self.text not in {"NEAR", *_OPERATORS}:
            return self.text + star
        return '"' + self.text.replace('"', "") + '"' + star


@dataclass(frozen=True)
class Substring:
    """A literal substring: a CJK run, or a quoted phrase that holds CJK."""

    text: str

    @property
    def cjk_only(self) -> bool:
        return bool(CJK_RUN.fullmatch(self.text))


@dataclass(frozen=True)
class Not:
    child: Node


@dataclass(frozen=True)
class And:
    children: tuple[Node, ...]


@dataclass(frozen=True)
class Or:
    children: tuple[Node, ...]


Node = Latin | Substring | Not | And | Or
_PARSE_TOKEN = re.compile(r'"([^"]*)"?|(\()|(\))|([^\s()"]+)')
_CJK_PUNCT = re.compile("[\u3000-\u303f\uff65]")  # 、。「」: separators between terms, not searched
_LATIN_SYNTAX = re.compile(r'[+{}()^"*:]')


def _word_terms(word: str) -> list[Node]:
    """A bare word -> its terms: a CJK run is a substring (`*` changes nothing: it matches anywhere
    already); a word that glues Latin to CJK (`Agent通信`, `100%完成`) is one substring, as typed,
    since unicode61 indexed it as one token; a Latin word is an FTS5 term (`word*` a prefix)."""
    prefix = word.endswith("*") and len(word) > 1
    terms: list[Node] = []
    for part in _CJK_PUNCT.split(word.rstrip("*")):
        if contains_cjk(part):
            terms.append(Substring(part))
            continue
        for chunk in _LATIN_SYNTAX.sub(" ", part).split():
            if _HAS_WORD_CHAR.search(chunk):
                terms.append(Latin(chunk, phrase=not _PLAIN_WORD.match(chunk), prefix=prefix))
    return terms


def _parse_tokens(query: str) -> list[str | list[Node]]:
    """Operators and parentheses as strings; each word or phrase as the list of its terms."""
    out: list[str | list[Node]] = []
    for phrase, lpar, rpar, word in _PARSE_TOKEN.findall(query.replace("\x00", " ")):
        if lpar or rpar:
            out.append(lpar or rpar)
        elif word in _OPERATORS:
            out.append(word)
        elif word:
            terms = _word_terms(word)
            out += [terms] if terms else []
        elif phrase.strip():
            text = " ".join(phrase.split())
            if contains_cjk(text):
                out.append([Substring(text)])
            elif _HAS_WORD_CHAR.search(text):
                out.append([Latin(text, phrase=True)])
    return out


def _combine(kind: type[And] | type[Or], parts: list[Node]) -> Node | None:
    flat: list[Node] = []
    for part in parts:
        flat += list(part.children) if isinstance(part, kind) else [part]
    if not flat:
        return None
    return flat[0] if len(flat) == 1 else kind(tuple(flat))


class _Parser:
    """Recursive descent; a doubled operator keeps the first (`a AND OR b` is `a AND b`)."""

    def __init__(self, tokens: list[str | list[Node]]) -> None:
        self.tokens, self.at = tokens, 0

    def peek(self) -> str | list[Node] | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def take(self) -> str | list[Node] | None:
        token = self.peek()
        self.at += 1
        return token

    def skip_operators(self) -> None:
        while self.peek() in ("AND", "OR"):
            self.take()

    def query(self, nested: bool = False) -> Node | None:
        parts = [node for node in [self.conjunction()] if node is not None]
        while (token := self.peek()) == "OR" or (token == ")" and not nested):
            self.take()  # an OR, or a `)` that closes nothing: skipped
            if token == ")":
                node = self.conjunction()
                if node is not None:
                    parts[-1:] = [_combine(And, [*parts[-1:], node])]  # type: ignore[list-item]
                continue
            self.skip_operators()
            node = self.conjunction()
            parts += [node] if node is not None else []
        return _combine(Or, parts)

    def conjunction(self) -> Node | None:
        parts: list[Node] = []
        while (token := self.peek()) is not None and token not in (")", "OR"):
            if token == "AND":
                self.take()
                self.skip_operators()
                continue
            node = self.negation()
            parts += [node] if node is not None else []
        return _combine(And, parts)

    def negation(self) -> Node | None:
        if self.peek() != "NOT":
            return self.primary()
        self.take()
        self.skip_operators()
        child = self.negation()
        return Not(child) if child is not None else None

    def primary(self) -> Node | None:
        token = self.take()
        if token == "(":
            node = self.query(nested=True)
            if self.peek() == ")":
                self.take()
            return node
        if isinstance(token, list):
            return _combine(And, token)
        return None  # a stray `)`


def parse(query: str) -> Node | None:
    """User text -> a tree of terms; None when nothing searchable is left (or only a NOT).

    A query made only of operator words (`OR`, `NOT`) searches for those words.
    """
    tokens = _parse_tokens(query or "")
    node = _Parser(tokens).query()
    operators = [t for t in tokens if isinstance(t, str) and t in _OPERATORS]
    if node is None and operators:
        node = _combine(And, [Latin(t, phrase=True) for t in operators])
    return None if isinstance(node, Not) else node


def first_term(node: Node) -> str | None:
    """The first positive term: what a snippet is centred on."""
    if isinstance(node, (Latin, Substring)):
        return node.text
    if isinstance(node, Not):
        return None
    for child in node.children:
        found = first_term(child)
        if found:
            return found
    return None
