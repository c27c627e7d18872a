from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from hermes_state_tools.importers.discover import discover, discover_names, file_shape

HOME = Path(__file__).resolve().parent.parent / "fixtures" / "legacy" / "home"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return Path(shutil.copytree(HOME, tmp_path / "hermes home"))


@pytest.mark.parametrize(
    ("name", "shape"),
    [
        ("sessions.json", "index"),
        ("20260310_184211_a1c4e9b2.jsonl", "jsonl"),
        ("session_20260310_184211_a1c4e9b2.json", "snapshot"),
        ("hermes_conversation_20260301_101010.json", "save"),
        (".sessions_abc.tmp", None),
        ("request_dump_x.json", None),
        ("payload_1.jsonl", None),
        ("notes.txt", None),
        ("sessions.json.bak", None),
    ],
)
def test_file_shape(name, shape):
    assert file_shape(Path(name)) == shape


def test_hermes_home(home):
    files, problems = discover([home])
    assert files == [
        home / "sessions" / "20260201_090000_aaaaaaaa.jsonl",
        home / "sessions" / "saved" / "hermes_conversation_20260201_100000.json",
    ]
    skipped = {Path(p.file).name: p for p in problems if p.kind == "skipped_file"}
    assert set(skipped) == {
        ".sessions_abc.tmp",
        "request_dump_20260201.json",
        "notes.txt",
        "payload_20260201.jsonl",
        "gateway.log",
    }
    assert all(p.line is None and not p.failure for p in problems)
    assert "dump of one API request" in skipped["request_dump_20260201.json"].detail


def test_copies_kept_beside_a_homes_sessions_are_read_and_its_other_folders_are_not(home):
    kept = {"sessions.bak": "20260201_090000_aaaaaaaa.jsonl", "old_sessions": "20260101_090000_bbbbbbbb.jsonl",
            "Backup/2026-03/sessions": "20260301_090000_cccccccc.jsonl",
            "skills/examples": "20260401_090000_dddddddd.jsonl", "hermes-agent/tests": "20260501_090000_eeeeeeee.jsonl",
            "golden": "20260601_090000_ffffffff.jsonl", "possessions": "20260701_090000_abababab.jsonl"}
    for folder, name in kept.items():
        (home / folder).mkdir(parents=True)
        (home / folder / name).write_text("{}\n")
    names = {str(f.relative_to(home)) for f in discover([home])[0]}
    assert {"sessions.bak/20260201_090000_aaaaaaaa.jsonl", "old_sessions/20260101_090000_bbbbbbbb.jsonl",
            "Backup/2026-03/sessions/20260301_090000_cccccccc.jsonl"} <= names
    assert not [n for n in names if n.startswith(("skills", "hermes-agent", "golden", "possessions"))]


def test_profiles_are_named_with_the_command_to_import_them(home):
    [profile] = [p for p in discover([home])[1] if p.kind == "profile_skipped"]
    target = home / "profiles" / "work"
    assert profile.file == str(target)
    assert f"hermes-state --db '{target}/state.db' import-jsonl '{target}'" in profile.detail
    assert not profile.failure


def test_a_profile_folder_is_a_home_of_its_own(home):
    files, problems = discover([home / "profiles" / "work"])
    assert files == [home / "profiles" / "work" / "sessions" / "20260202_090000_bbbbbbbb.jsonl"]
    assert problems == []


def test_several_paths_are_deduplicated_and_sorted_index_first(home):
    (home / "sessions" / "sessions.json").write_text("{}")
    single = home / "sessions" / "20260201_090000_aaaaaaaa.jsonl"
    files, problems = discover([single, home / "sessions", home, home / "sessions" / ".." / "sessions"])
    assert files == [
        home / "sessions" / "sessions.json",
        single,
        home / "sessions" / "saved" / "hermes_conversation_20260201_100000.json",
    ]
    assert len([p for p in problems if p.kind == "skipped_file" and p.file.endswith("notes.txt")]) == 1


def test_missing_path_is_a_failure(tmp_path):
    files, [problem] = discover([tmp_path / "nope"])
    assert (files, problem.kind, problem.failure, problem.file) == (
        [],
        "missing_path",
        True,
        str(tmp_path / "nope"),
    )


def test_a_noise_file_named_directly_is_skipped(home):
    files, [problem] = discover([home / "logs" / "payload_20260201.jsonl"])
    assert (files, problem.kind, problem.failure) == ([], "skipped_file", False)


def test_other_folders_in_a_sessions_folder_are_reported(tmp_path):
    (tmp_path / "archive").mkdir()
    files, [problem] = discover([tmp_path])
    assert (files, problem.kind, problem.file) == ([], "skipped_file", str(tmp_path / "archive"))


def test_a_file_reached_through_links_is_read_once(tmp_path):
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    (sessions / "20260201_090000_aaaaaaaa.jsonl").write_text('{"role": "user", "content": "hi"}\n')
    (sessions / "20260201_090000_bbbbbbbb.jsonl").symlink_to(sessions / "20260201_090000_aaaaaaaa.jsonl")
    (sessions / "20260201_090000_cccccccc.jsonl").symlink_to(tmp_path / "gone.jsonl")  # a dangling link
    (tmp_path / "linked").symlink_to(sessions, target_is_directory=True)
    files, problems = discover([sessions, tmp_path / "linked"])
    assert files == [sessions / "20260201_090000_aaaaaaaa.jsonl"]  # the link to it and the linked folder add nothing
    assert [(Path(p.file).name, p.kind) for p in problems] == [("20260201_090000_cccccccc.jsonl", "skipped_file")]


def test_nested_folders_are_walked_and_every_file_not_read_is_named(tmp_path):
    backups = tmp_path / "backups"
    for sub in ("", "2026-03", "old/deeper"):
        (backups / sub).mkdir(parents=True, exist_ok=True)
        (backups / sub / f"20260201_10000{len(sub)}_aaaaaaaa.jsonl").write_text('{"role": "user"}\n')
    (backups / "photos").mkdir()
    (backups / "photos" / "cat.png").write_bytes(b"\x89PNG")
    (backups / "empty").mkdir()
    (backups / "old" / "loop").symlink_to(backups, target_is_directory=True)
    files, problems = discover([backups])
    assert sorted(f.relative_to(backups).as_posix() for f in files) == [
        "2026-03/20260201_100007_aaaaaaaa.jsonl", "20260201_100000_aaaaaaaa.jsonl",
        "old/deeper/20260201_1000010_aaaaaaaa.jsonl"]
    named = {Path(p.file).relative_to(backups).as_posix(): p.detail for p in problems}
    assert set(named) == {"photos/cat.png", "empty", "old/loop"}
    assert "not a transcript" in named["photos/cat.png"]
    assert all(not p.failure for p in problems)


def test_a_home_inside_a_folder_is_read_as_a_home_and_its_database_pointed_at_merge(tmp_path):
    laptop = tmp_path / "backups" / "laptop"
    (laptop / "sessions").mkdir(parents=True)
    (laptop / "sessions" / "session_20260203_100000_cccccc.json").write_text("{}")
    (laptop / "state.db").write_bytes(b"")
    (laptop / "profiles" / "work").mkdir(parents=True)
    files, problems = discover([tmp_path / "backups"])
    assert files == [laptop / "sessions" / "session_20260203_100000_cccccc.json"]
    kinds = {p.kind: p.detail for p in problems}
    assert "hermes-state merge" in kinds["skipped_file"] and "profile_skipped" in kinds


def test_the_february_installs_logs_beside_the_code_are_read(tmp_path):
    logs = tmp_path / "home" / "hermes-agent" / "logs"
    logs.mkdir(parents=True)
    (logs / "session_20260206_101010_1a2b3c.json").write_text("{}")
    (tmp_path / "home" / "hermes-agent" / "run_agent.py").write_text("")
    files, problems = discover([tmp_path / "home"])
    assert files == [logs / "session_20260206_101010_1a2b3c.json"]
    assert problems == []  # the code tree itself is not a transcript folder


def test_the_many_call_comes_once_as_soon_as_that_many_files_are_found(tmp_path: Path) -> None:
    # An import starts its reader process from this call, while the search goes on.
    for n in range(5):
        (tmp_path / f"s{n}.jsonl").write_text("{}\n")
    (tmp_path / "link.jsonl").symlink_to(tmp_path / "s0.jsonl")  # one file under two names counts once
    seen: list[int] = []
    files, _ = discover([tmp_path, tmp_path / "s1.jsonl"], (3, lambda: seen.append(len(seen))))
    assert seen == [0] and len(files) == 5
    discover([tmp_path], (6, lambda: seen.append(len(seen))))  # never reached: five files
    assert seen == [0]


def test_links_that_loop_are_skipped_and_the_rest_found(tmp_path: Path) -> None:
    # Asking a looping link whether it is a folder raised, and stopped the whole import.
    (tmp_path / "20260301_100000_aaaa0001.jsonl").write_text("{}\n")
    (tmp_path / "self.jsonl").symlink_to("self.jsonl")
    (tmp_path / "a.jsonl").symlink_to("b.jsonl")
    (tmp_path / "b.jsonl").symlink_to("a.jsonl")
    files, problems = discover([tmp_path])
    assert [f.name for f in files] == ["20260301_100000_aaaa0001.jsonl"]
    assert sorted((Path(p.file).name, p.kind, p.failure) for p in problems) == [
        ("a.jsonl", "skipped_file", False), ("b.jsonl", "skipped_file", False), ("self.jsonl", "skipped_file", False)]


def _profile_home(root: Path) -> Path:
    home = root / "home"
    for folder in ("sessions", "profiles/work/sessions", "profiles/play/sessions"):
        (home / folder).mkdir(parents=True)
    (home / "sessions" / "20260301_100000_aaaa0001.jsonl").write_text("{}\n")
    for name in ("work", "play"):  # the same session id in both profiles: they must never be merged
        (home / "profiles" / name / "sessions" / "20260301_100000_bbbb0001.jsonl").write_text("{}\n")
    return home


@pytest.mark.parametrize("named, files, skipped", [
    (["home"], ["aaaa0001"], ["play", "work"]),
    (["home/profiles"], [], ["play", "work"]),                        # each profile inside is one home
    (["home/profiles/work"], ["bbbb0001"], []),                       # one profile alone: read
    (["home/profiles/work", "home/profiles/play"], [], ["play", "work"]),  # two named together: neither
    (["home", "home/profiles/work"], ["aaaa0001"], ["play", "work"]),  # a profile beside its home: not mixed in
    (["home/profiles/work", "home/sessions"], ["bbbb0001", "aaaa0001"], []),  # a plain folder beside one: read
])
def test_profiles_are_never_read_together(tmp_path: Path, named: list[str], files: list[str],
                                          skipped: list[str]) -> None:
    _profile_home(tmp_path)
    found, problems = discover([tmp_path / n for n in named])
    assert [f.stem.rsplit("_", 1)[1] for f in found] == files
    assert sorted(Path(p.file).name for p in problems if p.kind == "profile_skipped") == skipped
    assert all("import-jsonl" in p.detail for p in problems if p.kind == "profile_skipped")



def test_profiles_named_by_relative_paths_are_never_read_together(tmp_path: Path, monkeypatch) -> None:
    home = _profile_home(tmp_path)
    monkeypatch.chdir(home / "profiles")
    for named in (["work", "play"], ["."]):
        found, problems = discover([Path(n) for n in named])
        assert found == [] and sorted(Path(p.file).resolve().name for p in problems
                                      if p.kind == "profile_skipped") == ["play", "work"], named


@pytest.mark.parametrize("named", [".", "sessions", "./sessions", "sessions/", "sessions/../sessions", "{abs}"])
def test_found_names_are_spelled_as_path_joins_spell_them(tmp_path: Path, monkeypatch, named: str) -> None:
    # Files are found as text (no Path per file); each must read as the Path of the folder joined
    # with its name reads, so reports and the files' order are what they always were.
    folder = tmp_path / "sessions"
    (folder / "nested").mkdir(parents=True)
    for name in ("20260301_100000_aaaa0001.jsonl", "sessions.json", "notes.txt", "nested/20260301_100000_bb.jsonl"):
        (folder / name).write_text("{}\n")
    monkeypatch.chdir(folder if named == "." else tmp_path)
    root = Path(named.format(abs=folder))
    names, problems = discover_names([root])
    expected = [root / "sessions.json", root / "20260301_100000_aaaa0001.jsonl",
                root / "nested" / "20260301_100000_bb.jsonl"]
    assert names == [str(p) for p in expected]
    assert discover([root]) == (expected, problems)
    assert [p.file for p in problems] == [str(root / "notes.txt")]


def test_a_link_to_a_transcript_that_is_gone_says_so(tmp_path: Path) -> None:
    (tmp_path / "20260301_100000_aaaa0001.jsonl").symlink_to(tmp_path / "moved" / "20260301_100000_aaaa0001.jsonl")
    files, problems = discover([tmp_path])
    assert files == [] and [(p.kind, p.failure) for p in problems] == [("skipped_file", False)]
    assert "does not exist" in problems[0].detail and "moved" in problems[0].detail


def test_kept_copies_of_profiles_are_profiles_and_a_homes_own_index_comes_first(tmp_path: Path) -> None:
    home = _profile_home(tmp_path)
    for copy in ("profiles.bak/work/sessions", "backup/profiles/work/sessions"):
        (home / copy).mkdir(parents=True)
        (home / copy / "20260301_100000_bbbb0001.jsonl").write_text("{}\n")
    (home / "sessions.bak").mkdir()
    for folder in ("sessions", "sessions.bak"):  # 'sessions.bak/' sorts before 'sessions/' by name
        (home / folder / "sessions.json").write_text("{}")
    found, problems = discover([home])
    assert [f.relative_to(home).as_posix() for f in found] == [
        "sessions/sessions.json", "sessions.bak/sessions.json", "sessions/20260301_100000_aaaa0001.jsonl"]
    skipped = sorted(Path(p.file).relative_to(home).as_posix() for p in problems if p.kind == "profile_skipped")
    assert skipped == ["backup/profiles/work", "profiles.bak/work", "profiles/play", "profiles/work"]
