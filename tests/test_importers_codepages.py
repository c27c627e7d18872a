"""The code page of a file's non-UTF-8 text, chosen from the whole file and named in the report."""

from __future__ import annotations

import json

import pytest

from hermes_state_tools.core.records import Problem
from hermes_state_tools.importers.codepages import choose
from hermes_state_tools.importers.text import JsonLine, iter_json_lines, read_document

TURKISH = "Günaydın! Bugün İstanbul'da hava güneşli, şemsiyeye gerek yok. Çok teşekkürler ağabey."


@pytest.mark.parametrize(("text", "codec"), [
    (TURKISH, "cp1254"),
    ("Café «résumé» — 5 €, naïve façade, “quotes” and ‘single’ ones…", "cp1252"),
    ("Müller: Straße öffnen, schön", "cp1252"),
    ("Þetta er íslenska, með ð og þ.", "cp1252"),
    # Turkish whose only non-ASCII letters are ş, ı, İ, ğ: cp1252 reads them as Icelandic þ, ý, Ý, ð
    ("Şişli'de İş Bankası şubesi", "cp1254"),
    ("İyi akşamlar, İzmir'e gidiyorum", "cp1254"),
    ("Şimdi İstanbul'dayım", "cp1254"),
    ("İstanbul'da şu an saat kaç?", "cp1254"),
    ("Zażółć gęślą jaźń, łódź", "cp1250"),
    ("Привет, как дела? Всё хорошо.", "cp1251"),
    ("Ąžuolas ir ėglė šalia upės", "cp1257"),
    ("こんにちは、元気ですか？", "cp932"),
    ("你好，世界，这是中文", "cp936"),
    ("Dobrý den, jak se máš? Děkuji, mám se dobře. Čtvrtek je hezký.", "cp1250"),
    ("Árvíztűrő tükörfúrógép. Köszönöm szépen, jó napot!", "cp1250"),
    ("Bună ziua! Mulţumesc frumos, şi eu sunt bine. În România.", "cp1250"),
    ("Dobar dan! Kako ste? Hvala lijepo, ćevapi su dobri. Đak, šuma, žaba, čaj.", "cp1250"),
    ("Dobrý deň! Ďakujem pekne, mám sa dobre. Ľúbim ťa.", "cp1250"),
    ("Dzień dobry! Dziękuję bardzo, wszystko w porządku. Łódź jest piękna.", "cp1250"),
    ("Merhaba, nasılsın? İyiyim, teşekkür ederim.", "cp1254"),
    ("Добрий день! Як справи? Дякую, все добре.", "cp1251"),
    # read as cp1251, Greek is "КблзмЭсб" and Arabic "гСНИЗ": capitals after small letters
    ("Καλημέρα! Τι κάνεις; Ευχαριστώ πολύ.", "cp1253"),
    ("مرحبا كيف حالك", "cp1256"),
    ("Labdien! Paldies, man iet labi. Ļoti jauki, ņem šo.", "cp1257"),
    ("Tere hommikust! Aitäh, mul läheb hästi. Õun ja šokolaad.", "cp1257"),
])
def test_the_page_the_text_was_written_in_is_chosen(text, codec):
    assert choose([text.encode(codec)]).codec == codec


# cp1252 text of each Western European language, as chat messages hold it: cp1250 decodes all of it too
# (ï as ď, ½ as ˝, ¿ as ż, ø as ř), which must not make its reading the likelier one.
WESTERN = {
    "English": "The naïve café owner’s résumé — “smart quotes” … costs €5 ±2 ½ kg, 10° × 3 µm.",
    "French": "Café naïve résumé — “smart quotes” … €5 ±2 ½",
    "French, more": "L'œuvre du cœur : où êtes-vous allés ? Ça coûte 12 € à Noël, déjà payé.",
    "German": "Grüße aus München! Die Straße ist schön, aber das Wetter ist schlecht. Größe: 42 × 30 cm.",
    "Spanish": "¿Cómo estás? ¡Mañana vamos a la montaña con el niño! Está a 5 km de aquí.",
    "Portuguese": "Não sei se ações são possíveis; a informação está na página três. Obrigação cumprida.",
    "Italian": "Perché è così difficile? Più tardi andrò là, però è già mezzogiorno. Città.",
    "Dutch": "Ik ben geïnteresseerd in België; de financiële coöperatie is één idee. Café.",
    "Danish": "Hej! Jeg kommer fra Århus og spiser rødgrød med fløde. Æbler er gode.",
    "Norwegian": "Været i Tromsø er kaldt; vi går på tur til Ålesund og spiser blåbær. Sjøen.",
    "Swedish": "Hej! Jag bor i Göteborg och äter kött på fredagar. Även åtta små äpplen.",
    "Finnish": "Hyvää päivää! Tämä on äänekäs kysymys: mitä sinä syöt tänään? Kiitos paljon.",
    "Icelandic": "Góðan daginn! Þetta er íslenska, með ð og þ. Ég á heima í Reykjavík. Hvað segirðu?",
    "Faroese": "Góðan dag! Eg eri úr Føroyum; hvussu hevur tú tað? Takk fyri seinast.",
    "Catalan": "Bon dia! La col·lecció és a la ciutat; l'escola té molts alumnes. Què fas avui? Açò.",
    "Galician": "Bo día! A nosa lingua é galega; ¿onde está a estación? Non sei nada máis.",
    "Basque": "Kaixo! Zer moduz? Euskal Herrian bizi naiz; ñabardura batzuk daude.",
    "Irish": "Dia duit! Tá mé go maith, go raibh maith agat. Cén chaoi a bhfuil tú? Ní féidir.",
    "Scottish Gaelic": "Ciamar a tha thu? Tha mi gu math; tha an t-sìde brèagha an-diugh. Fàilte òg.",
    "Luxembourgish": "Moien! Wéi geet et? Ech sinn aus Lëtzebuerg, a mir schwätzen Lëtzebuergesch. Äddi.",
    "Afrikaans": "Goeiedag! Hoe gaan dit? Ek is baie lief vir my kinders se môre; êrens ôf ê.",
    "Albanian": "Përshëndetje! Si jeni? Unë jam mirë, faleminderit. Çfarë bëni sot?",
}


@pytest.mark.parametrize("language", sorted(WESTERN))
def test_western_european_text_is_read_as_cp1252(language):
    assert choose([WESTERN[language].encode("cp1252")]).codec == "cp1252"


def test_one_page_for_the_whole_file_even_where_a_line_alone_cannot_tell(tmp_path):
    # "Ğ ğ ı İ ş Ş" alone reads as Icelandic letters in cp1252; the file's other line decides.
    lines = [{"role": "user", "content": TURKISH}, {"role": "assistant", "content": "Ğ ğ ı İ ş Ş"}]
    path = tmp_path / "20260210_101010_aa11bb22.jsonl"
    path.write_bytes(b"".join(json.dumps(r, ensure_ascii=False).encode("cp1254") + b"\n" for r in lines))
    items = list(iter_json_lines(path, str(path)))
    assert [i.value["content"] for i in items if isinstance(i, JsonLine)] == [TURKISH, "Ğ ğ ı İ ş Ş"]
    [notice] = [i for i in items if isinstance(i, Problem)]
    assert (notice.kind, notice.failure) == ("decoded_cp1252", False)
    assert "2 as cp1254" in notice.detail and "cp1254 chosen" in notice.detail


def test_utf8_lines_of_a_mixed_file_stay_utf8(tmp_path):
    path = tmp_path / "20260210_101010_aa11bb22.jsonl"
    path.write_bytes(json.dumps({"content": "ğ utf8"}, ensure_ascii=False).encode() + b"\n"
                     + json.dumps({"content": TURKISH}, ensure_ascii=False).encode("cp1254") + b"\n")
    values = [i.value["content"] for i in iter_json_lines(path, str(path)) if isinstance(i, JsonLine)]
    assert values == ["ğ utf8", TURKISH]


def test_a_whole_object_file_names_its_page(tmp_path):
    path = tmp_path / "session_x.json"
    path.write_bytes(json.dumps({"messages": [{"role": "user", "content": TURKISH}]}, ensure_ascii=False)
                     .encode("cp1254"))
    document = read_document(path, str(path))
    assert document.value["messages"][0]["content"] == TURKISH
    assert "cp1254" in document.problems[0].detail


def test_close_calls_name_the_other_reading():
    # Only single letters: cp1252 and cp1254 both read them as a language's letters.
    choice = choose(["Ð ð".encode("cp1252")])
    assert choice.runner_up is not None


def test_text_no_page_reads_as_words_is_flagged(tmp_path):
    path = tmp_path / "session_x.json"
    path.write_bytes(b'{"messages": [{"role": "user", "content": "\x81\x8d\x8f\x90\x9d"}]}')
    document = read_document(path, str(path))
    [notice] = document.problems
    assert "may be mojibake" in notice.detail and not notice.failure


def test_turkish_chosen_over_an_even_cp1252_reading_names_cp1252_as_the_other_reading():
    choice = choose(["Şişli'de İş Bankası şubesi".encode("cp1254")])
    assert (choice.codec, choice.runner_up) == ("cp1254", "cp1252")
