"""A transcript copied beside its original by a file manager or a browser ("X (1).jsonl", "X - Copy.jsonl",
"session_X copy 2.json") is a copy of session X: its messages come in once, merged with the other copies."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from import_helpers import import_json, messages, sessions

from hermes_state_tools.importers import jsonl
from hermes_state_tools.importers.build import COPY_SUFFIX, file_id

SID = "20260301_090000_3f9a2c7e"
SUFFIXES = (" (1)", " (12)", " - Copy", " - Copy (2)", " copy", " copy 3", " (copy)", " (another copy)",
            " (3rd copy)", " (11th copy)", " - Copy - Copy", " (1) (1)", " - Copy (2) - Copy", " copy copy 2",
            # other languages, other file managers and sync clients
            " - Kopie", " - Kopie (2)", " - Copie", " - Copia", " - C\u00f3pia", " - Kopia",
            " - \u041a\u043e\u043f\u0438\u044f", " - \u30b3\u30d4\u30fc", " \u306e\u30b3\u30d4\u30fc",
            " - \u526f\u672c",
            " Kopie", " copia 2", " 2", " (Copy)",
            "_1", "-1", ".bak", ".old", "~", " (Ann's conflicted copy 2026-03-01)",
            " (conflicted copy 2026-03-01 090000)", ".sync-conflict-20260301-090000-ABCDEF7", "-DESKTOP-4F2K1")


def _lines(*contents: str) -> bytes:
    records = [{"role": "session_meta", "platform": "telegram", "timestamp": "2026-03-01T09:00:00"}]
    records += [{"role": "user" if n % 2 == 0 else "assistant", "content": text,
                 "timestamp": f"2026-03-01T09:00:{n + 1:02d}"} for n, text in enumerate(contents)]
    return b"".join(json.dumps(record).encode() + b"\n" for record in records)


def test_copies_of_a_transcript_come_in_once(tmp_path):
    folder = tmp_path / "sessions"
    folder.mkdir()
    (folder / f"{SID}.jsonl").write_bytes(_lines("hello", "hi there"))
    (folder / f"{SID} (1).jsonl").write_bytes(_lines("hello", "hi there"))
    (folder / f"{SID} - Copy.jsonl").write_bytes(_lines("hello", "hi there", "one more"))  # copied later
    (folder / f"{SID} - Copy - Copy.jsonl").write_bytes(_lines("hello", "hi there"))  # a copy's copy
    (folder / f"{SID} (another copy).jsonl").write_bytes(_lines("hello", "hi there"))  # GNOME Files
    (folder / f"session_{SID} copy 2.json").write_text(json.dumps(
        {"session_id": SID, "platform": "telegram", "messages": [{"role": "user", "content": "hello"},
                                                                  {"role": "assistant", "content": "hi there"}]}))
    db = tmp_path / "state.db"
    code, doc = import_json(db, folder)
    assert code == 0, doc["problems"]
    assert list(sessions(db)) == [SID]
    assert [m["content"] for m in messages(db, SID)] == ["hello", "hi there", "one more"]
    named = sorted(Path(p["file"]).name for p in doc["problems"] if p["kind"] == "copy_name")
    assert named == sorted([f"{SID} (1).jsonl", f"{SID} - Copy.jsonl", f"{SID} - Copy - Copy.jsonl",
                            f"{SID} (another copy).jsonl", f"session_{SID} copy 2.json"])
    assert not [p for p in doc["problems"] if p["kind"] == "session_id_mismatch"]
    again_code, again = import_json(db, folder)
    assert again_code == 0 and again["messages_imported"] == 0 and again["sessions_updated"] == 0


_ENGLISH = 14  # SUFFIXES up to here are English file managers' own


def test_copies_made_in_any_language_or_by_a_sync_client_come_in_once(tmp_path):
    folder = tmp_path / "sessions"
    folder.mkdir()
    (folder / f"{SID}.jsonl").write_bytes(_lines("hello", "hi there"))
    for n, suffix in enumerate(SUFFIXES[_ENGLISH:]):
        more = ("hello", "hi there", "one more") if n % 5 == 0 else ("hello", "hi there")
        (folder / f"{SID}{suffix}.jsonl").write_bytes(_lines(*more))
    cron = "cron_a1b2c3d4e5f6_20260301_090000"
    (folder / f"{cron}.jsonl").write_bytes(_lines("run the report"))
    (folder / f"{cron} - Kopie.jsonl").write_bytes(_lines("run the report"))
    db = tmp_path / "state.db"
    code, doc = import_json(db, folder)
    assert code == 0, doc["problems"]
    assert sorted(sessions(db)) == [SID, cron]
    assert [m["content"] for m in messages(db, SID)] == ["hello", "hi there", "one more"]
    assert len([p for p in doc["problems"] if p["kind"] == "copy_name"]) == len(SUFFIXES[_ENGLISH:]) + 1


def test_a_name_that_only_looks_like_a_copy_keeps_its_id(tmp_path):
    folder = tmp_path / "sessions"
    folder.mkdir()
    (folder / "notes (1).jsonl").write_bytes(_lines("a note"))
    db = tmp_path / "state.db"
    code, doc = import_json(db, folder)
    assert code == 0 and list(sessions(db)) == ["notes (1)"]
    assert not [p for p in doc["problems"] if p["kind"] == "copy_name"]


_IDS = st.from_regex(r"\d{8}_\d{6}_[0-9a-f]{8}", fullmatch=True)


@given(_IDS, st.sampled_from(SUFFIXES))
def test_a_copy_suffix_on_a_session_id_gives_the_id(session_id, suffix):
    assert file_id(session_id + suffix) == session_id
    assert file_id(session_id) == session_id


@given(st.one_of(st.text(max_size=40), st.builds(str.__add__, _IDS, st.text(max_size=12))))
def test_only_a_session_id_with_a_copy_suffix_is_read_as_a_copy(name):
    original = file_id(name)
    if original != name:
        assert re.fullmatch(r"\d{8}_\d{6}_[0-9A-Za-z]+", original)
        assert re.fullmatch(f"(?:{COPY_SUFFIX})+", name[len(original):])
    assert file_id(original) == original


_NAME_TEXT = st.text(st.sampled_from("._ (1)-Copyab9\u00e9"), max_size=12)


@given(st.one_of(_NAME_TEXT, _NAME_TEXT.map(lambda text: SID + text), st.sampled_from(SUFFIXES).map(lambda s: SID + s)),
       st.sampled_from([".jsonl", ".json"]), st.booleans())
def test_a_files_session_id_is_read_from_its_name_as_from_its_stem(text: str, suffix: str, snapshot: bool) -> None:
    # The reader groups files by their names as text (ingest/planning/units.py:name_id); it must give the id
    # Path.stem gives, whatever the name (leading dots, copies' suffixes, no id at all).
    from hermes_state_tools.importers.discover import file_shape, name_shape
    from hermes_state_tools.ingest.planning.units import name_id, stored_id

    path = Path("/x") / (("session_" if snapshot else "") + text + suffix)
    shape = file_shape(path)
    expected = None
    if shape == "jsonl":
        expected = stored_id(file_id(path.stem))
    elif shape == "snapshot" and path.name.startswith("session_"):
        expected = stored_id(file_id(path.stem[len("session_"):]))
    assert name_id(path.name, name_shape(path.name)) == expected
    assert name_id(os.path.basename(str(path)), shape) == expected
    assert jsonl._stem(str(path)) == jsonl._stem(path) == path.stem  # read_plain's id, of a name as text


def test_a_copy_kept_beside_a_homes_sessions_folder_comes_in_once(tmp_path):
    home = tmp_path / "hermes"
    (home / "sessions").mkdir(parents=True)
    (home / "sessions.bak").mkdir()
    (home / "sessions" / f"{SID}.jsonl").write_bytes(_lines("hello", "hi there", "one more"))
    (home / "sessions.bak" / f"{SID}.jsonl").write_bytes(_lines("hello", "hi there"))
    (home / "sessions.bak" / "20260201_090000_0a0b0c0d.jsonl").write_bytes(_lines("only in the copy"))
    db = tmp_path / "state.db"
    code, doc = import_json(db, home)
    assert code == 0, doc["problems"]
    assert sorted(sessions(db)) == ["20260201_090000_0a0b0c0d", SID]
    assert [m["content"] for m in messages(db, SID)] == ["hello", "hi there", "one more"]


def test_copies_of_a_save_file_without_an_id_come_in_once(tmp_path):
    saved = tmp_path / "sessions" / "saved"
    saved.mkdir(parents=True)
    chat = {"model": "m", "messages": [{"role": "user", "content": "save this plan"},
                                       {"role": "assistant", "content": "Plan saved."}]}
    for suffix in ("", " (1)", " - Copy"):
        (saved / f"hermes_conversation_20260301_101010{suffix}.json").write_text(json.dumps(chat))
    db = tmp_path / "state.db"
    code, doc = import_json(db, tmp_path / "sessions")
    assert code == 0, doc["problems"]
    assert list(sessions(db)) == ["saved_20260301_101010"]
    assert [m["content"] for m in messages(db, "saved_20260301_101010")] == ["save this plan", "Plan saved."]
    assert len([p for p in doc["problems"] if p["kind"] == "copy_name"]) == 2
