"""Choose the Windows code page of a file's non-UTF-8 text from the evidence it holds.

Hermes opened transcripts without an encoding, so a Windows install wrote them in its system
code page (cp1252 in western Europe, cp1254 in Turkey, ...). The pages share ASCII and most
of their letters; they differ in a handful of positions (cp1252 and cp1254 in six: ðÐýÝþÞ
against ğĞıİşŞ), so one line alone often cannot tell them apart, and deciding per line
flips between them. The whole file is judged at once: every word's non-ASCII letters must
belong to one language's alphabet, and the page under which most words do is chosen.

No dependency does this better for short chat text: general detectors (charset-normalizer,
chardet) score by character frequencies of long documents and guess wrong on a few words;
this needs only the alphabets of the languages each page was made for.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

# Candidates in order of preference when the evidence ties (the most common pages first).
CANDIDATES = ("cp1252", "cp1254", "cp1250", "cp1251", "cp1253", "cp1257", "cp1256", "cp1255",
              "cp932", "cp936", "cp949", "cp950")  # the East Asian pages: two bytes a character

# The non-ASCII letters of the languages each page serves (lower case; upper case is folded).
_ALPHABETS = {
    "tr": "çğıöşüâîû", "az": "çəğıöşü", "is": "áðéíóúýþæö", "de": "äöüß", "fr": "àâæçéèêëîïôœùûüÿ",
    "es": "áéíñóúü", "pt": "áâãàçéêíóôõú", "it": "àèéìíîòóùú", "ca": "àçèéíïòóúü", "nl": "áéëíïóöúü",
    "sv": "åäöé", "da": "åæøé", "fi": "äöå", "pl": "ąćęłńóśźż", "cs": "áčďéěíňóřšťúůýž",
    "sk": "áäčďéíĺľňóôŕšťúýž", "hu": "áéíóöőúüű", "ro": "ăâîșțşţ", "hr": "čćđšž", "sl": "čšž",
    "ru": "абвгдеёжзийклмнопрстуфхцчшщъыьэюя", "uk": "абвгґдеєжзиіїйклмнопрстуфхцчшщьюя",
    "bg": "абвгдежзийклмнопрстуфхцчшщъьюя", "sr": "абвгдђежзијклљмнњопрстћуфхцчџш",
    "el": "αβγδεζηθικλμνξοπρστυφχψωάέήίόύώϊϋΐΰς", "lt": "ąčęėįšųūž", "lv": "āčēģīķļņšūž",
    "et": "äöõüšž", "ar": "ابتثجحخدذرزسشصضطظعغفقكلمنهويءآأؤإئةى", "he": "אבגדהוזחטיכלמנסעפצקרשתךםןףץ",
}
_LANGUAGES = {letter: frozenset(lang for lang, alphabet in _ALPHABETS.items() if letter in alphabet)
              for letter in set("".join(_ALPHABETS.values()))}
_CJK = frozenset({"cjk"})  # kana, ideographs, hangul: one "language" for this test


def _languages_of(letter: str) -> frozenset[str]:
    known = _LANGUAGES.get(letter)
    if known is not None:
        return known
    point = ord(letter)
    if 0x3040 <= point <= 0x30FF or 0x4E00 <= point <= 0x9FFF or 0xAC00 <= point <= 0xD7AF \
            or 0xFF66 <= point <= 0xFF9F or 0x3400 <= point <= 0x4DBF:
        return _CJK
    return frozenset()
# A word that mixes ASCII letters with non-ASCII ones is written in a Latin alphabet.
_LATIN = frozenset(_ALPHABETS) - {"ru", "uk", "bg", "sr", "el", "ar", "he"}
_WORD = re.compile(r"[^\W\d_]+")
_EVIDENCE_LIMIT = 1 << 20  # bytes of non-UTF-8 lines judged: plenty to decide, bounded memory


@dataclass(frozen=True)
class Choice:
    codec: str
    score: int  # words that fit one alphabet minus words that fit none
    runner_up: str | None  # the next page when it reads the evidence differently and nearly as well


def _score(text: str) -> int:
    """Words that fit the file's best-fitting language, minus twice the words that fit none."""
    fits: Counter[str] = Counter()
    misfits = 0
    for word in _WORD.findall(text):
        # "İ".lower() is "i" + a combining dot, which would leave a Turkish word no Turkish letter: it
        # counts as the dotless ı, a letter of the same alphabets
        lowered = word.replace("\u0130", "\u0131").lower().replace("\u0307", "")
        letters = {ch for ch in lowered if ord(ch) > 127}
        if not letters:
            continue
        languages: frozenset[str] | None = _LATIN if len(letters) < len(set(lowered)) else None
        for letter in letters:
            known = _languages_of(letter)
            languages = known if languages is None else languages & known
        fits.update(languages or ())
        misfits += not languages
    score = max(fits.values(), default=0) - 2 * misfits
    # Symbols other pages decode to where this one has letters (‹, ¤, control characters) count against it.
    return score - sum(1 for ch in text if ord(ch) > 127 and not ch.isalpha() and not ch.isspace()
                 and ch not in "€‚„…†‡‰‘’“”•–—™©®°±²³µ·¹º»«¼½¾¿¡¢£¥§¨¬¯´¶¸×÷、。「」『』・ー（）！？，：；")


def choose(evidence: Iterable[bytes]) -> Choice:
    """The code page that reads these non-UTF-8 lines as the most plausible text."""
    raw = b"\n".join(_bounded(evidence))
    results: list[tuple[int, int, str, str]] = []
    for order, codec in enumerate(CANDIDATES):
        try:
            text = raw.decode(codec)
        except UnicodeDecodeError:
            continue  # a byte this page leaves undefined: not the page the file was written in
        results.append((_score(text), -order, codec, text))
    if not results:
        return Choice("latin-1", 0, None)
    results.sort(reverse=True)
    best = _turkish_over_icelandic(results)
    close = [r for r in results if r is not best and r[3] != best[3] and r[0] >= best[0] - max(1, abs(best[0]) // 10)]
    return Choice(best[2], best[0], close[0][2] if close else None)


_SHARED_BY_ICELANDIC = frozenset("ðýþÐÝÞ")  # what cp1252 reads where cp1254 has ğışĞİŞ
_ONLY_ICELANDIC = frozenset("áéíóúæÁÉÍÓÚÆ")  # Icelandic letters Turkish lacks (the same in both pages)


def _turkish_over_icelandic(results: list[tuple[int, int, str, str]]) -> tuple[int, int, str, str]:
    """The best reading; when cp1254 reads the evidence as well as cp1252, whose reading has Icelandic
    letters only where the two pages differ (þ for ş, ý for ı, Ý for İ) and none of the Icelandic
    vowels Turkish lacks, the Turkish one. Turkish words with ş, ı or ğ alone fit Icelandic as well
    under cp1252, and ties went to cp1252: 'Şişli' was stored as 'Þiþli'."""
    best = results[0]
    if best[2] != "cp1252":
        return best
    turkish = next((r for r in results if r[2] == "cp1254"), None)
    letters = set(best[3])
    if turkish is not None and turkish[0] >= best[0] and letters & _SHARED_BY_ICELANDIC \
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
