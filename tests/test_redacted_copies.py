"""A redacted JSON snapshot (newer Hermes masks secrets in it, agent/redact.py) holds the same messages
as state.db and the JSONL: matched where the alignment puts them, the unmasked text kept, never a
second message; a text that differs anywhere outside a mask stays a message of its own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from import_helpers import fts_in_sync, import_json, message_extras, query, write_jsonl

from hermes_state_tools import SessionDB
from hermes_state_tools.core.records import LegacyMessage, LegacySession
from hermes_state_tools.ingest.copies.merge import plan_session
from hermes_state_tools.ingest.copies.redaction import unredacted_side

SID = "20260601_100000_abc123"
START = 1780308000.0
KEY = "sk-proj-abcdefghijklmnopqrstuv1234"
SAID = [("user", f"use my key {KEY} for the call"), ("assistant", "Done, the key works."),
        ("user", "thanks"), ("assistant", "ok")]
MASKED = [("user", "use my key sk-pro...1234 for the call"), *SAID[1:]]


def stored_db(path: Path, said: list[tuple[str, str]] = SAID) -> Path:
    """What state.db holds: the session as said, one message a second from START."""
    db = SessionDB(path)
    db.create_session(SID, "cli", model="m")
    ids = [db.append_message(SID, role, text) for role, text in said]
    for n, message_id in enumerate(ids):
        db._conn.execute("UPDATE messages SET timestamp = ? WHERE id = ?", (START + n, message_id))
    db._conn.execute("UPDATE sessions SET started_at = ? WHERE id = ?", (START, SID))
    db._conn.commit()
    db.close()
    return path


def snapshot(home: Path, said: list[tuple[str, str]] = MASKED) -> Path:
    """A JSON snapshot as newer Hermes writes it (sessions.write_json_snapshots), text redacted."""
    folder = home / "sessions"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"session_{SID}.json"
    path.write_text(json.dumps({
        "session_id": SID, "model": "m", "platform": "cli", "session_start": "2026-06-01T10:00:00",
        "last_updated": "2026-06-01T10:01:00", "system_prompt": "", "tools": [], "message_count": len(said),
        "messages": [{"role": role, "content": text} for role, text in said]}, indent=2))
    return path


def gateway_jsonl(home: Path) -> Path:
    lines = [{"role": role, "content": text, "timestamp": f"2026-06-01T10:00:0{n}"} for n, (role, text) in
             enumerate(SAID)]
    return write_jsonl(home / "sessions" / f"{SID}.jsonl", [{"role": "session_meta", "platform": "cli"}, *lines])


def stored(db: Path) -> list[tuple[str, str]]:
    return [(r["role"], r["content"]) for r in
            query(db, "SELECT role, content FROM messages WHERE session_id = ? ORDER BY timestamp, id", (SID,))]


def counts(report: dict[str, Any]) -> tuple[Any, ...]:
    return (report["messages_imported"], report["sessions_created"], report["sessions_updated"],
            report["messages_skipped_duplicate"], report["messages_enriched"], report["failure_counts"])


def test_the_redacted_snapshot_of_a_stored_session_adds_nothing(tmp_path):
    db = stored_db(tmp_path / "state.db")
    home = tmp_path / "home"
    snapshot(home)
    _code, dry = import_json(db, home, options=["--dry-run"])
    code, real = import_json(db, home)
    assert code == 0 and counts(dry) == counts(real) == (0, 0, 0, 4, 0, {})
    assert real["notice_counts"] == {"redacted_copy": 1}
    assert stored(db) == SAID
    _code, again = import_json(db, home)
    assert counts(again) == (0, 0, 0, 4, 0, {}) and stored(db) == SAID


def test_a_redacted_snapshot_and_the_jsonl_in_one_import_store_each_message_once_unmasked(tmp_path):
    db, home = tmp_path / "state.db", tmp_path / "home"
    snapshot(home)
    gateway_jsonl(home)
    _code, dry = import_json(db, home, options=["--dry-run"])
    code, real = import_json(db, home)
    assert code == 0 and counts(dry) == counts(real)
    assert real["messages_imported"] == 4 and stored(db) == SAID
    _code, again = import_json(db, home)
    assert again["messages_imported"] == 0 and again["sessions_updated"] == 0 and stored(db) == SAID


def test_a_redacted_copy_with_its_reasoning_in_the_text_is_the_stored_message(tmp_path):
    # <think> blocks are compared apart from the text (align.content_key), masked copies too: the
    # snapshot's reply holds its reasoning inline where state.db's does not, and a mask.
    said = [SAID[0], ("assistant", f"Done, the key {KEY} works."), *SAID[2:]]
    db = stored_db(tmp_path / "state.db", said)
    home = tmp_path / "home"
    snapshot(home, [MASKED[0], ("assistant", "<think>checking</think>\nDone, the key sk-pro...1234 works."),
                    *MASKED[2:]])
    code, real = import_json(db, home)
    assert code == 0 and counts(real) == (0, 0, 0, 4, 0, {}) and stored(db) == said


def test_a_snapshot_alone_is_stored_as_it_is_and_unmasked_when_the_jsonl_comes(tmp_path):
    db, home = tmp_path / "state.db", tmp_path / "home"
    snapshot(home)
    code, first = import_json(db, home)
    assert code == 0 and first["messages_imported"] == 4 and stored(db) == MASKED
    assert "redacted_copy" not in first["notice_counts"]  # nothing to match it with: no notice
    gateway_jsonl(home)
    _code, dry = import_json(db, home, options=["--dry-run"])
    code, later = import_json(db, home)
    assert code == 0 and counts(dry) == counts(later)
    assert later["messages_imported"] == 0 and later["messages_enriched"] >= 1
    assert stored(db) == SAID and fts_in_sync(db)
    first_id = query(db, "SELECT MIN(id) AS id FROM messages")[0]["id"]
    assert message_extras(db, SID)[first_id] == {"masked_text": MASKED[0][1]}  # kept, were they two after all
    def found(word: str) -> int:
        return int(query(db, "SELECT COUNT(*) AS n FROM messages_fts WHERE messages_fts MATCH ?", (word,))[0]["n"])
    assert (found("abcdefghijklmnopqrstuv1234"), found("pro")) == (1, 0)  # the index follows the text
    _code, again = import_json(db, home)
    assert (again["messages_imported"], again["messages_enriched"], again["sessions_updated"]) == (0, 0, 0)


@pytest.mark.parametrize("said, masked", [
    # The hidden run holds a space: no token redact.py masks.
    ("use my key sk-proj-abc defghijklm1234 for the call", "use my key sk-pro...1234 for the call"),
    # 12 characters: redact.py masks it as ***, never with its head and tail.
    ("use my key sk-proXY1234 for the call", "use my key sk-pro...1234 for the call"),
    # A character outside the mask differs.
    (f"use my key {KEY} for a call", "use my key sk-pro...1234 for the call"),
    ("API_KEY=hunter2 and then", "API_KEY=*** and than"),
    # *** hides one run, never two words.
    ("my password is two words ok", "my password is *** ok"),
    # Markdown, not a mask: after whitespace redact.py masks only a vendor-prefixed token.
    ("Title\n---\nBody", "Title\n***\nBody"),
    # Inside a word no mask starts (an ellipsis).
    ("Loadingabcdefghijdone", "Loading...done"),
    # Neither text holds a mask: different texts, however close.
    (f"use my key {KEY} for the call", f"use my key {KEY} for the call!"),
])
def test_messages_that_differ_outside_a_mask_stay_two(tmp_path, said, masked):
    db = stored_db(tmp_path / "state.db", [("user", said), *SAID[1:]])
    home = tmp_path / "home"
    snapshot(home, [("user", masked), *MASKED[1:]])
    code, report = import_json(db, home)
    assert code == 0 and report["messages_imported"] == 1 and "redacted_copy" not in report["notice_counts"]
    assert sorted(stored(db)) == sorted([("user", said), ("user", masked), *SAID[1:]])


def test_a_masked_copy_matches_only_at_its_place_and_role(tmp_path):
    said = [("user", "hi"), ("assistant", "hello"), ("user", f"key {KEY} please"), ("assistant", "ok"),
            ("assistant", f"echo {KEY}")]
    db = stored_db(tmp_path / "state.db", said)
    home = tmp_path / "home"
    # The masked user message sits before what precedes its unmasked copy; the masked assistant text
    # is a user message in the snapshot. Neither is the stored message.
    snapshot(home, [("user", "key sk-pro...1234 please"), ("assistant", "hmm"), ("user", "hi"),
                    ("assistant", "hello"), ("user", "key sk-pro...1234 please"), ("assistant", "ok"),
                    ("user", "echo sk-pro...1234")])
    code, report = import_json(db, home)
    assert code == 0 and report["messages_imported"] == 3 and report["notice_counts"] == {"redacted_copy": 1}
    rows = stored(db)
    assert rows.count(("user", "key sk-pro...1234 please")) == 1 and ("user", "echo sk-pro...1234") in rows
    assert rows.count(("user", f"key {KEY} please")) == 1 and ("assistant", f"echo {KEY}") in rows


def _copy(kind: str, said: list[tuple[str, str]], timed: bool) -> LegacySession:
    return LegacySession(SID, f"/files/{kind}", kind, fields={"source": "cli"}, messages=tuple(
        LegacyMessage(role, text, START + n if timed else None) for n, (role, text) in enumerate(said)))


def test_the_first_copy_masked_takes_the_text_of_a_later_unmasked_one():
    """A snapshot merges before a /save file (KIND_ORDER): the save's unmasked text is what is stored."""
    plan = plan_session(SID, [_copy("snapshot", MASKED, False), _copy("save", SAID, False)], None, START)
    assert [(m.role, m.content) for m, _t, _i in plan.inserts] == SAID
    assert [m.extra for m, _t, _i in plan.inserts] == [{"masked_text": MASKED[0][1]}, {}, {}, {}]
    assert [p.kind for p in plan.problems] == ["redacted_copy"] and plan.duplicates == 4


def test_a_tool_result_matched_by_its_call_id_keeps_the_unmasked_output():
    call = [{"id": "call_1", "type": "function", "function": {"name": "terminal", "arguments": "{}"}}]

    def copy(kind: str, output: str) -> LegacySession:
        return LegacySession(SID, f"/files/{kind}", kind, fields={"source": "cli"}, messages=(
            LegacyMessage("user", "show env"), LegacyMessage("assistant", None, tool_calls=call),
            LegacyMessage("tool", output, tool_call_id="call_1"), LegacyMessage("assistant", "done")))
    said, masked = f"OPENAI_API_KEY={KEY}\nHOME=/root", "OPENAI_API_KEY=sk-pro...1234\nHOME=/root"
    for kinds in (("jsonl", said), ("snapshot", masked)), (("snapshot", masked), ("save", said)):
        plan = plan_session(SID, [copy(kind, text) for kind, text in kinds], None, START)
        assert [m.content for m, _t, _i in plan.inserts][2] == said and len(plan.inserts) == 4
        assert [p.kind for p in plan.problems] == ["redacted_copy"]


# --- The mask model against redact.py's masks (hypothesis) -------------------------------------------

_TOKEN_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"
# Literal text never holds a mask's shape (no '.', '*', '+', '«', '['): a `***` in the text itself could
# be a mask, so a change next to it could be what the mask hid.
_LITERAL_CHARS = "abcXYZ019 \n\t=:\"',;()/_-é你"
_PEM = ("-----BEGIN RSA PRIVATE KEY-----\n", "\n-----END RSA PRIVATE KEY-----")


def _masks(draw: Any) -> tuple[str, str, bool]:
    """One secret as redact.py finds it, the mask it puts in its place, and whether it is a prefixed
    token (masked wherever it stands) rather than a value (masked after ``KEY=``, a quote, ``key: ``)."""
    kind = draw(st.sampled_from(["long", "short", "value", "long value", "vault", "label", "pem", "phone"]))
    if kind in ("long", "short"):  # _PREFIX_RE: _mask_token keeps head 6 and tail 4 from 18 characters on
        prefix = draw(st.sampled_from(["sk-", "ghp_", "github_pat_", "xoxb-", "hf_", "eyJ", "AKIA"]))
        sizes = (18 - len(prefix), 50) if kind == "long" else (1, 17 - len(prefix))
        token = prefix + draw(st.text(_TOKEN_CHARS + ".", min_size=sizes[0], max_size=sizes[1]))
        return token, f"{token[:6]}...{token[-4:]}" if kind == "long" else "***", True
    if kind in ("value", "long value"):  # an assignment's, a field's or a header's value: any characters
        value = draw(st.text(_TOKEN_CHARS + "!#$%&@~*.", min_size=1 if kind == "value" else 18, max_size=40))
        return value, f"{value[:6]}...{value[-4:]}" if len(value) >= 18 else "***", False
    if kind == "vault":  # replaced wherever it stands
        return draw(st.text(_TOKEN_CHARS + "!#$%&@~", min_size=1, max_size=30)), "«redacted-vault-secret»", True
    if kind == "label":  # file_read=True: the non-reusable sentinel
        label = draw(st.sampled_from(["ghp_", "sk-", "xoxb-", "hf_"]))
        return label + draw(st.text(_TOKEN_CHARS, min_size=10, max_size=30)), f"«redacted:{label}…»", True
    if kind == "pem":
        body = draw(st.text("ABCDEFabcdef0123456789+/=\n", min_size=0, max_size=80))
        return _PEM[0] + body + _PEM[1], "[REDACTED PRIVATE KEY]", True
    phone = "+" + draw(st.sampled_from("123456789")) + draw(st.text("0123456789", min_size=6, max_size=14))
    keep = 2 if len(phone) <= 8 else 4
    return phone, phone[:keep] + "****" + phone[-keep:], True


@st.composite
def redacted_texts(draw: Any) -> tuple[str, str, list[tuple[int, int]]]:
    """(the text as said, as redacted, the spans of the said text that masks replaced). A prefixed token
    stands after whitespace or punctuation, a value after what redact.py finds values by."""
    said, masked, spans = "", "", []
    for _ in range(draw(st.integers(1, 4))):
        literal = draw(st.text(_LITERAL_CHARS, max_size=12))
        secret, mask, anywhere = _masks(draw)
        before = draw(st.sampled_from([" ", "\n", "(", ", "] if anywhere else
                                      ["KEY=", ' "token": "', " 'password': '", "\npassword: ", " x-api-key: "]))
        said, masked = said + literal + before, masked + literal + before
        spans.append((len(said), len(said) + len(secret)))
        glue = draw(st.sampled_from(["", '"', "'", ",", ")"]))
        said, masked = said + secret + glue + " ", masked + mask + glue + " "
    tail = draw(st.text(_LITERAL_CHARS, max_size=12))
    return said + tail, masked + tail, spans


@settings(max_examples=examples(400), deadline=None)
@given(redacted_texts())
def test_a_text_redacted_as_redact_py_does_matches_its_original(case):
    said, masked, _spans = case
    assert unredacted_side(said, masked) == 0 and unredacted_side(masked, said) == 1


@settings(max_examples=examples(400), deadline=None)
@given(redacted_texts(), st.data())
def test_a_character_changed_outside_the_masks_never_matches(case, data):
    said, masked, spans = case
    outside = [i for i in range(len(said)) if not any(start <= i < end for start, end in spans)]
    at = data.draw(st.sampled_from(outside))
    other = data.draw(st.sampled_from([c for c in _LITERAL_CHARS + "*." if c != said[at]]))
    changed = said[:at] + other + said[at + 1:]
    assert unredacted_side(changed, masked) is None and unredacted_side(masked, changed) is None


def _masks_without_whitespace() -> tuple[str, str]:
    """1900 '***' with no whitespace between them (a minified log or JSON): every mask's run reaches
    the text's end, so each mask could end at thousands of places."""
    return "a=bb" * 1000 + "c=bb" + "a=bb" * 899 + "Z", "a=***" * 1900 + "Z"


def test_masks_over_runs_without_whitespace_are_given_up_early(monkeypatch):
    from hermes_state_tools.ingest.copies import redaction

    calls = []
    real = redaction._hidden_ends
    monkeypatch.setattr(redaction, "_hidden_ends", lambda *args: calls.append(1) or real(*args))
    redaction._masked_cached.cache_clear()
    assert unredacted_side(*_masks_without_whitespace()) is None
    # Each position tried counts: the search stops after _MOST_POSITIONS of them (it went through
    # 48,000 masks' runs of 7,600 places each, seconds for one pair of messages).
    assert len(calls) < 5000


@pytest.mark.soak
def test_masks_over_runs_without_whitespace_cost_little():
    import time

    from hermes_state_tools.ingest.copies import redaction

    redaction._masked_cached.cache_clear()
    began = time.perf_counter()
    assert unredacted_side(*_masks_without_whitespace()) is None
    assert time.perf_counter() - began < 1.0  # 4-6 s before (a gap compares up to 10,000 such pairs)


def test_a_long_run_of_masked_messages_is_stored_once(tmp_path):
    """Past 100 masked messages in a row the gap's full pairing costs too much; they are paired in order."""
    said = [(role, f"step {n}: {role} sets TOKEN=secret{n} now") for n in range(120) for role in ("user", "assistant")]
    db = stored_db(tmp_path / "state.db", said)
    home = tmp_path / "home"
    snapshot(home, [(role, text.replace(f"secret{text.split()[1][:-1]}", "***")) for role, text in said])
    _code, dry = import_json(db, home, options=["--dry-run"])
    code, real = import_json(db, home)
    assert code == 0 and counts(dry) == counts(real) == (0, 0, 0, 240, 0, {})
    assert stored(db) == said


@pytest.mark.parametrize("stored_as, saved_as", [(SAID, SAID), (SAID, MASKED), (MASKED, MASKED), (MASKED, SAID)])
def test_a_dry_run_counts_as_the_real_run_when_the_session_comes_back_in_a_save_file(tmp_path, stored_as, saved_as):
    """The save file is planned against what the JSONL's plan would leave (a dry run writes nothing):
    the stored rows' keys and texts as the real run reads them, a masked text as the JSONL unmasks it."""
    db = stored_db(tmp_path / "state.db", stored_as)
    home = tmp_path / "home"
    lines = [{"role": r, "content": t, "timestamp": f"2026-06-01T10:00:0{n}"} for n, (r, t) in enumerate(SAID)]
    write_jsonl(home / "sessions" / f"{SID}.jsonl", [{"role": "session_meta", "platform": "cli"}, *lines,
                {"role": "user", "content": "more", "timestamp": "2026-06-01T10:00:09"}])
    saved = home / "sessions" / "saved"
    saved.mkdir(parents=True)
    (saved / "hermes_conversation_20260601_100500.json").write_text(json.dumps(
        {"session_id": SID, "model": "m", "session_start": "2026-06-01T10:00:00",
         "messages": [{"role": r, "content": t} for r, t in saved_as]}))
    _code, dry = import_json(db, home, options=["--dry-run"])
    code, real = import_json(db, home)
    assert code == 0 and counts(dry) == counts(real) and real["messages_imported"] == 1
    assert stored(db) == [*SAID, ("user", "more")]


_MASKY = st.lists(st.sampled_from([
    *"ab1 =:\"'/+*.\n«»…-_", "sk-", "sk-pro", "abcdef", "wxyz", "***", "...", "****", "«redacted:", "«redacted-secret»",
    "[REDACTED PRIVATE KEY]", "+1234", "5678", "+1", "12", "+1****12", "+123****5678"]),
    max_size=80).map("".join)


@given(_MASKY)
@settings(max_examples=examples(400), deadline=None)
def test_masks_are_found_at_every_position_a_shape_matches(text):
    """Only the positions before each shape's anchor are tried: the same masks as trying every position."""
    from hermes_state_tools.ingest.copies import redaction

    found = []
    for shape, _anchor, _offset in redaction._MASKS:
        for match in shape.finditer(text):
            hidden = redaction._stands_for(match, redaction._context(text[max(0, match.start() - 80):match.start()]))
            if hidden is not None:
                found.append(redaction.Mask(match.start(), match.start() + len(match.group(1)), hidden))
    redaction._masked_cached.cache_clear()
    result = redaction.masked(text)
    assert (result.masks if result else ()) == tuple(sorted(found, key=lambda m: (m.start, m.end)))


@pytest.mark.parametrize("said", [
    [("assistant", "TOKEN=abc"), ("assistant", "TOKEN=def"), ("assistant", "TOKEN=***")],
    [("user", "KEY=x1"), ("user", "KEY=***"), ("user", "message 2"), ("user", "KEY=y2"), ("user", "KEY=***"),
     ("assistant", "KEY=z3")],
])
def test_a_message_whose_text_is_a_masked_copy_of_others_leaves_them_their_place(tmp_path, said):
    """'TOKEN=***' said as it is matches its masked copy by text, and the other masked copies still pair."""
    db = stored_db(tmp_path / "state.db", said)
    home = tmp_path / "home"
    snapshot(home, [(role, text.split("=")[0] + "=***" if "=" in text else text) for role, text in said])
    _code, dry = import_json(db, home, options=["--dry-run"])
    code, real = import_json(db, home)
    assert code == 0 and counts(dry) == counts(real) and real["messages_imported"] == 0
    assert stored(db) == said


def test_a_masked_text_changed_before_the_write_is_kept_and_said_of_nothing(tmp_path):
    """The replacement is guarded by the text read: a row another program changed meanwhile keeps its
    text, and its extra data gets no masked_text (nothing was replaced)."""
    import sqlite3

    from hermes_state_tools.ingest.planning.prepared import prepare
    from hermes_state_tools.ingest.planning.units import Unit
    from hermes_state_tools.ingest.writing.writer import write_batch

    db = stored_db(tmp_path / "state.db", MASKED)
    conn = sqlite3.connect(db, isolation_level=None)
    conn.row_factory = sqlite3.Row
    item = prepare(conn, Unit(SID, [_copy("jsonl", SAID, True)], (), START))
    assert item is not None and [e.content for e in item.enrich if e.content] == [SAID[0][1]]
    first = item.enrich[0].message_id
    conn.execute("UPDATE messages SET content = 'changed by another program' WHERE id = ?", (first,))
    conn.execute("BEGIN IMMEDIATE")
    write_batch(conn, (item,))
    conn.execute("COMMIT")
    conn.close()
    assert stored(db)[0] == ("user", "changed by another program")
    assert "masked_text" not in message_extras(db, SID).get(first, {})


def test_the_mask_cache_keeps_no_big_text_alive():
    # 256 tool outputs of megabytes with an ellipsis each, kept by the cache, would stay in memory
    # for the rest of the import.
    from hermes_state_tools.ingest.copies import redaction

    redaction._masked_cached.cache_clear()
    big = "Loading... done " + "x" * 200_000
    for n in range(20):
        redaction.masked(big + str(n))
    assert redaction._masked_cached.cache_info().currsize == 0
    redaction.masked("TOKEN=***")
    assert redaction._masked_cached.cache_info().currsize == 1


def test_a_secret_masked_inside_the_reasoning_is_unmasked_when_the_jsonl_comes(tmp_path):
    # The texts agree outside their <think> blocks, so they align as one message; the snapshot's
    # reasoning holds the masked key, the JSONL's the real one: the real text is stored.
    said = [SAID[0], ("assistant", f"<think>use {KEY}</think>\nDone."), *SAID[2:]]
    db, home = tmp_path / "state.db", tmp_path / "home"
    snapshot(home, [SAID[0], ("assistant", "<think>use sk-pro...1234</think>\nDone."), *SAID[2:]])
    code, first = import_json(db, home)
    assert code == 0 and first["messages_imported"] == 4
    write_jsonl(home / "sessions" / f"{SID}.jsonl", [{"role": "session_meta", "platform": "cli"}, *[
        {"role": role, "content": text, "timestamp": f"2026-06-01T10:00:0{n}"} for n, (role, text) in enumerate(said)]])
    code, later = import_json(db, home)
    assert code == 0 and later["messages_imported"] == 0 and later["messages_enriched"] >= 1
    assert stored(db) == said
