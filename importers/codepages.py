"""Choose the Windows code page of a file's non-UTF-8 text from the evidence it holds.

Hermes opened transcripts without an encoding, so a Windows install wrote them in its system
code page (cp1252 in western Europe, cp1254 in Turkey, ...). The pages share ASCII and most
of their letters; they differ in a handful of positions (cp1252 and cp1254 in six: ðÐýÝþÞ
against ğĞıİşŞ), so one line alone often cannot tell them apart, and deciding per line
flips between them. The whole file is judged at once, and each page by how likely the text it
reads is under that page rather than by whether it decodes: cp1250 decodes every cp1252 letter
too, reading French `naïve` as `naďve` and `½` as the spacing accent `˝`. A page is used by the
people whose languages it was made for, so the words that count for a page are those of the one
of its languages that fits most words of the file; a word of no language, a capital after a
small letter, and a symbol no text is written with (or one between two letters) count against
it. Where the evidence ties, the more common page wins (cp1252 by far).

No dependency does this better for short chat text: general detectors (charset-normalizer,
chardet) score by character frequencies of long documents and guess wrong on a few words;
this needs only the alphabets of the languages each page was made for.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise
from typing import NamedTuple

# Candidates in order of preference when the evidence ties (the most common pages first).
CANDIDATES = ("cp1252", "cp1254", "cp1250", "cp1251", "cp1253", "cp1257", "cp1256", "cp1255",
              "cp932", "cp936", "cp949", "cp950")  # the East Asian pages: two bytes a character

# The non-ASCII letters of the languages each page serves (lower case; upper case is folded).
_ALPHABETS = {
    "tr": "çğıöşüâîû", "az": "çəğıöşü", "is": "áðéíóúýþæö", "de": "äöüß", "fr": "àâæçéèêëîïôœùûüÿ",
    "es": "áéíñóúü", "pt": "áâãàçéêíóôõú", "it": "àèéìíîòóùú", "ca": "àçèéíïòóúü", "nl": "áéëíïóöúü",
    "sv": "åäöé", "da": "åæøé", "no": "åæøéóòô", "fi": "äöåšž", "fo": "áíóúýæøð", "ga": "áéíóú",
    "gd": "àèìòùáéó", "lb": "äëéèüöâêô", "af": "áéèêëíîïóôöúûü", "sq": "çë", "eu": "ñü", "gl": "áéíóúñü",
    "pl": "ąćęłńóśźż", "cs": "áčďéěíňóřšťúůýž",
    "sk": "áäčďéíĺľňóôŕšťúýž", "hu": "áéíóöőúüű", "ro": "ăâîșțşţ", "hr": "čćđšž", "sl": "čšž",
    "ru": "абвгдеёжзийклмнопрстуфхцчшщъыьэюя", "uk": "абвгґдеєжзиіїйклмнопрстуфхцчшщьюя",
    "bg": "абвгдежзийклмнопрстуфхцчшщъьюя", "sr": "абвгдђежзијклљмнњопрстћуфхцчџш",
    "el": "αβγδεζηθικλμνξοπρστυφχψωάέήίόύώϊϋΐΰς", "lt": "ąčęėįšųūž", "lv": "āčēģīķļņšūž",
    "et": "äöõüšž", "ar": "ابتثجحخدذرزسشصضطظعغفقكلمنهويءآأؤإئةى", "he": "אבגדהוזחטיכלמנסעפצקרשתךםןףץ",
}
# The languages each page was made for: a word in another page's language is no evidence for it.
_WESTERN = frozenset({"is", "de", "fr", "es", "pt", "it", "ca", "nl", "sv", "da", "no", "fi", "fo", "ga", "gd",
                      "lb", "af", "sq", "eu", "gl"})
_SERVES: dict[str, frozenset[str]] = {
    "cp1252": _WESTERN, "cp1254": frozenset({"tr", "az"}),
    "cp1250": frozenset({"pl", "cs", "sk", "hu", "ro", "hr", "sl"}),
    "cp1251": frozenset({"ru", "uk", "bg", "sr"}), "cp1253": frozenset({"el"}),
    "cp1257": frozenset({"lt", "lv", "et"}), "cp1256": frozenset({"ar"}), "cp1255": frozenset({"he"}),
    **dict.fromkeys(("cp932", "cp936", "cp949", "cp950"), frozenset({"cjk"})),
}
_LANGUAGES = {letter: frozenset(lang for lang, alphabet in _ALPHABETS.items() if letter in alphabet)
              for letter in set("".join(_ALPHABETS.values()))}
_CJK = frozenset({"cjk"})  # kana, ideographs, hangul: one "language" for this test
# A word that mixes ASCII letters with non-ASCII ones is written in a Latin alphabet.
_LATIN = frozenset(_ALPHABETS) - {"ru", "uk", "bg", "sr", "el", "ar", "he"}
# Symbols text is written with. Others (spacing accents such as ˝ ˇ ¸, ¦, ¤, control characters)
# are what a page reads where another has letters; so is a symbol between two letters of a
# spaced script, but for the apostrophe and the Catalan middle dot (col·lecció).
_PLAIN_SYMBOLS = frozenset("€‚„…†‡‰‘’“”•–—™©®°±²³µ·¹º»«¼½¾¿¡¢£¥§×÷ª‹›"
                           "、。「」『』・ー（）！？，：；")
_INSIDE_WORDS = frozenset("’‘·")
_NUMBERS = "²³¹¼½¾"  # word characters to Python's re, symbols here
_WORD = re.compile(rf"[^\W\d_{_NUMBERS}]+")
_LETTER = rf"[^\W\d_{_NUMBERS}]"
# (a character class each, tried at every character: a lookaround first would cost it 5x)
_ODD = re.compile(rf"[^\w\s\x00-\x7f{re.escape(''.join(_PLAIN_SYMBOLS))}]")
_SPACED_SYMBOLS = "".join(sorted(ch for ch in _PLAIN_SYMBOLS
                                  if ch not in _INSIDE_WORDS and ord(ch) < 0x3000 and not ch.isalpha()))
_BETWEEN_LETTERS = re.compile(rf"[{re.escape(_SPACED_SYMBOLS)}](?<={_LETTER}.)(?={_LETTER})")
_EVIDENCE_LIMIT = 1 << 20  # bytes of non-UTF-8 lines judged: plenty to decide, bounded memory


@dataclass(frozen=True)
class Choice:
    codec: str
    score: int  # words of the page's best language minus twice the words of none, minus odd symbols
    runner_up: str | None  # the next page when it reads the evidence differently and nearly as well


def _languages_of(letter: str) -> frozenset[str]:
    known = _LANGUAGES.get(letter)
    if known is not None:
        return known
    point = ord(letter)
    if 0x3040 <= point <= 0x30FF or 0x4E00 <= point <= 0x9FFF or 0xAC00 <= point <= 0xD7AF \
            or 0xFF66 <= point <= 0xFF9F or 0x3400 <= point <= 0x4DBF:
        return _CJK
    return frozenset()


def _words(text: str) -> list[str]:
    """The runs of letters (a fraction or a superscript is a symbol, not part of a word)."""
    return _WORD.findall(text)


def _word_languages(word: str) -> frozenset[str]:
    """The languages whose alphabet holds every non-ASCII letter of a word (empty: none does)."""
    # "İ".lower() is "i" + a combining dot, which would leave a Turkish word no Turkish letter: it
    # counts as the dotless ı, a letter of the same alphabets
    lowered = word.replace("\u0130", "\u0131").lower().replace("\u0307", "")
    letters = {ch for ch in lowered if ord(ch) > 127}
    languages: frozenset[str] | None = _LATIN if len(letters) < len(set(lowered)) else None
    for letter in letters:
        known = _languages_of(letter)
        languages = known if languages is None else languages & known
    return languages or frozenset()


def _score(text: str, codec: str) -> int:
    """Words of the page's best-fitting language, minus twice the words of no language, minus odd
    symbols. A word of only another page's languages (a Czech name in French text) counts neither way."""
    serves = _SERVES.get(codec, frozenset())
    fits: Counter[str] = Counter()
    misfits = 0
    for word, times in Counter(_words(text)).items():  # each word judged once (chat repeats its words)
        if word.isascii():
            continue
        languages = _word_languages(word)
        # a capital after a small letter (Greek "Καλημέρα" read as cp1251 "КблзмЭсб") is no writing
        if not languages or any(a.islower() and b.isupper() for a, b in pairwise(word)):
            misfits += times
        else:
            for language in languages & serves:
                fits[language] += times
    return max(fits.values(), default=0) - 2 * misfits - _odd_symbols(text)


def _odd_symbols(text: str) -> int:
    return len(_ODD.findall(text)) + len(_BETWEEN_LETTERS.findall(text))


class _Reading(NamedTuple):
    score: int
    order: int  # minus the page's place among the candidates: ties go to the more common page
    codec: str
    text: str


def choose(evidence: Iterable[bytes]) -> Choice:
    """The code page that reads these non-UTF-8 lines as the most plausible text."""
    raw = b"\n".join(_bounded(evidence))
    results: list[_Reading] = []
    for order, codec in enumerate(CANDIDATES):
        try:
            text = raw.decode(codec)
        except UnicodeDecodeError:
            continue  # a byte this page leaves undefined: not the page the file was written in
        results.append(_Reading(_score(text, codec), -order, codec, text))
    if not results:
        return Choice("latin-1", 0, None)
    results.sort(reverse=True)
    best = _turkish_over_icelandic(results)
    close = [r for r in results if r is not best and r.text != best.text
             and r.score >= best.score - max(1, abs(best.score) // 10)]
    return Choice(best.codec, best.score, close[0].codec if close else None)


_SHARED_BY_ICELANDIC = frozenset("ðýþÐÝÞ")  # what cp1252 reads where cp1254 has ğışĞİŞ
_ONLY_ICELANDIC = frozenset("áéíóúæÁÉÍÓÚÆ")  # Icelandic letters Turkish lacks (the same in both pages)


def _turkish_over_icelandic(results: list[_Reading]) -> _Reading:
    """The best reading; when cp1254 reads the evidence as well as cp1252, whose reading has Icelandic
    letters only where the two pages differ (þ for ş, ý for ı, Ý for İ) and none of the Icelandic
    vowels Turkish lacks, the Turkish one. Turkish words with ş, ı or ğ alone fit Icelandic as well
    under cp1252, and ties went to cp1252: 'Şişli' was stored as 'Þiþli'."""
    best = results[0]
    if best.codec != "cp1252":
        return best
    turkish = next((r for r in results if r.codec == "cp1254"), None)
    letters = set(best.text)
    if turkish is not None and turkish.score >= best.score and letters & _SHARED_BY_ICELANDIC \
            and not letters & _ONLY_ICELANDIC:
        return turkish
    return best


def _bounded(evidence: Iterable[bytes]) -> Iterable[bytes]:
    total = 0
    for line in evidence:
        # Only the bytes around non-ASCII ones carry evidence; ASCII-only runs are cut short.
        yield line
        total += len(line)
        if total >= _EVIDENCE_LIMIT:
            return
