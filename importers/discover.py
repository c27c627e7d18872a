"""Find the legacy files under the paths a user names: HERMES_HOMEs, sessions folders or single files."""

from __future__ import annotations

import errno
import os
import re
import shlex
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from hermes_state_tools.core.records import Problem

# Files Hermes left next to transcripts that are not transcripts: (prefix, suffix, what it is).
NOISE = (
    (".sessions_", ".tmp", "a temporary copy of the index"),
    ("request_dump_", ".json", "a dump of one API request"),
    ("payload_", ".jsonl", "a log of API payloads"),
)


INDEX_NAME = "sessions.json"


def file_shape(path: Path) -> str | None:
    """Return "index", "save", "snapshot" (ShareGPT logs included) or "jsonl" for a file name, else None."""
    return name_shape(path.name)


def name_shape(name: str) -> str | None:
    """file_shape of a file's name. (No cache: an install has more names than one would hold, and
    the checks cost less than a missed look-up.)"""
    for prefix, suffix, _ in NOISE:  # a loop, not any(): this runs for every file of an install
        if name.endswith(suffix) and name.startswith(prefix):
            return None
    if name == INDEX_NAME:
        return "index"
    if name.startswith("hermes_conversation_") and name.endswith(".json"):
        return "save"
    if name.startswith("session_") and name.endswith(".json"):
        return "snapshot"
    return "jsonl" if name.endswith(".jsonl") else None


def discover(paths: Iterable[Path],
             many: tuple[int, Callable[[], None]] | None = None) -> tuple[list[Path], list[Problem]]:
    """Return the transcript files under `paths` (each once; index files first, then by path) and notices.
    `many`: (count, call) calls `call` once, as soon as that many files are found."""
    names, problems = discover_names(paths, many)
    return [Path(name) for name in names], problems


def discover_names(paths: Iterable[Path],
                   many: tuple[int, Callable[[], None]] | None = None) -> tuple[list[str], list[Problem]]:
    """`discover`, each file's path as text: a folder of ten thousand transcripts is found without
    making a Path for each (what the import hands its reader process is text anyway)."""
    files: dict[str, str] = {}  # real path -> the path as named
    problems: dict[tuple[str, str], Problem] = {}
    wanted = [Path(path) for path in paths]
    # One profile may be imported (into its own database); two or more named together would mix
    # homes that each have their own database: each is skipped with the command to import it alone.
    # A profile named beside another home (its own, whose database the import writes) is one of two.
    profiles = {_real(str(path)) for path in wanted if path.is_dir() and is_profile(path)}
    homes = {_real(str(path)) for path in wanted if path.is_dir() and is_home(path)}
    for path in wanted:
        if len(homes) > 1 and _real(str(path)) in profiles:
            problem = _profile_skipped(path)
            problems.setdefault((_real(problem.file), problem.kind), problem)
            continue
        if (rest := _rest_of_home(path, wanted)) is not None:
            problems.setdefault((_real(rest.file), rest.kind), rest)
        for found in _walk(path):
            if isinstance(found, Problem):
                problems.setdefault((_real(found.file), found.kind), found)
            else:
                files.setdefault(*found)
                if many is not None and len(files) >= many[0]:
                    call = many[1]
                    many = None
                    call()
    # Index files first, in the order found (a home's own sessions/ before the copies kept beside it: the
    # first index that names a session gives its fields), then the transcripts by path.
    names = list(files.values())
    ordered = [n for n in names if os.path.basename(n) == INDEX_NAME]
    ordered += sorted(n for n in names if os.path.basename(n) != INDEX_NAME)
    return ordered, list(problems.values())


# A file found: its real path (which tells two names of one file apart) and the path as named, as
# text (also the sort key).
Found = tuple[str, str]


def _walk(path: Path) -> Iterator[Found | Problem]:
    """Yield the candidate files and notices for one named path."""
    if not path.exists():
        yield Problem(str(path), None, "missing_path", "no such file or folder", True)
    elif not path.is_dir():
        yield from _file(str(path), path.is_file())
    else:
        yield from _any_folder(path, set(), nested=False)


def _rest_of_home(path: Path, wanted: list[Path]) -> Problem | None:
    """One transcript folder of a HERMES_HOME named without its home (`~/.hermes/sessions`): the
    transcripts the home holds beside it (logs/, the copies kept beside them) are not read; say which,
    and how to read them too."""
    home = path.parent.parent if path.parent.name == "hermes-agent" else path.parent
    if not (path.is_dir() and os.path.relpath(path, home) in HOME_FOLDERS and is_home(home)):
        return None
    named = [_real(str(w)) for w in wanted]

    def covered(folder: Path) -> bool:
        real = _real(str(folder))
        return any(real == n or real.startswith(n.rstrip(os.sep) + os.sep) for n in named)

    rest = [os.path.relpath(p, home) + "/" for p in [*(home / sub for sub in HOME_FOLDERS), *_kept_copies(home)]
            if p.is_dir() and not covered(p)]
    if covered(home) or not rest:
        return None
    return Problem(str(home), None, "more_in_home", f"this Hermes home also holds {', '.join(rest)}, which were "
                   f"not read; to import them too (nothing twice): hermes-state import-jsonl {shlex.quote(str(home))}")


def is_home(path: Path) -> bool:
    """A HERMES_HOME: it has sessions/ or logs/, or the February 2026 installer's hermes-agent/logs/."""
    try:
        return any((path / sub).is_dir() for sub in HOME_FOLDERS)
    except OSError:  # a folder this user may not look into: read as a folder, which says so
        return False


def _real(name: str) -> str:
    """The real path of a name, or the name made absolute where it cannot be resolved (a link loop)."""
    try:
        return str(Path(name).resolve())
    except (OSError, RuntimeError):
        return os.path.abspath(name)


# Where a HERMES_HOME keeps transcripts: in February 2026 the installer put the code in
# hermes-agent/ and the agent wrote its logs beside it, in hermes-agent/logs/.
HOME_FOLDERS = ("sessions", "logs", "hermes-agent/logs")


def _any_folder(folder: Path, seen: set[Path], nested: bool) -> Iterator[Found | Problem]:
    if nested and is_profile(folder):  # found inside a folder the user named (`<home>/profiles`)
        yield _profile_skipped(folder)
    else:
        yield from (_home(folder, seen, nested) if is_home(folder) else _folder(folder, seen))


def _home(home: Path, seen: set[Path], nested: bool) -> Iterator[Found | Problem]:
    """Yield a HERMES_HOME's transcript folders (walked whole); name each profile it skips."""
    for sub in HOME_FOLDERS:
        if (home / sub).is_dir():
            yield from _folder(home / sub, seen)
    for kept in _kept_copies(home):
        yield from _folder(kept, seen)
    if nested and (home / "state.db").is_file():
        # A home found inside a folder the user named (a copy of another machine's ~/.hermes).
        db = shlex.quote(str(home / "state.db"))
        detail = ("a state.db of another Hermes home, not read by import-jsonl; "
                  f"bring it in with: hermes-state merge {db}")
        yield Problem(str(home / "state.db"), None, "skipped_file", detail)
    profiles = home / "profiles"
    if not profiles.is_dir():
        return
    try:
        names = sorted(p for p in profiles.iterdir() if p.is_dir())
    except OSError as exc:
        yield _unreadable(profiles, exc)
        return
    for profile in names:
        # Each profile has its own state.db: mixing its sessions into this one would be wrong.
        yield _profile_skipped(profile)


# A copy a person kept beside a home's own folders: sessions.bak/, old_sessions/, backup/2026-03/...
# (its transcripts merge with the originals, nothing twice). The home's other folders (skills,
# memories, caches, the hermes-agent/ code with its test data) are not transcripts.
_KEPT_COPY = re.compile(r"(?<![a-z])(?:sess|(?:bak|backups?|old|cop(?:y|ies)|archived?|archives)(?![a-z]))",
                        re.IGNORECASE)


def _kept_copies(home: Path) -> list[Path]:
    try:
        return sorted(entry for entry in home.iterdir() if entry.name not in HOME_FOLDERS
                      and _KEPT_COPY.search(entry.name) and entry.is_dir())
    except OSError:
        return []  # a home this user may not list: its own folders were read (or reported) already


def _profile_skipped(profile: Path) -> Problem:
    db, where = shlex.quote(str(profile / "state.db")), shlex.quote(str(profile))
    command = f"hermes-state --db {db} import-jsonl {where}"
    detail = f"profile {profile.name!r} has its own database, not read here; import it alone: {command}"
    return Problem(str(profile), None, "profile_skipped", detail)


_PROFILES = re.compile(r"profiles(?:[ ._~-].*)?", re.IGNORECASE)  # profiles/, and a copy of it: profiles.bak/


def is_profile(path: Path) -> bool:
    """A profile of a HERMES_HOME: `<home>/profiles/<name>/`, a home of its own, also in a copy of the
    profiles folder (`profiles.bak/<name>/`, `backup/profiles/<name>/`): `.` and relative names too,
    their parents judged by the real folder."""
    path = Path(_real(str(path)))
    return _PROFILES.fullmatch(path.parent.name) is not None and is_home(path)


def _unreadable(folder: Path, exc: OSError) -> Problem:
    return Problem(str(folder), None, "unreadable_path", f"cannot list the folder ({exc.strerror})", True)


def _folder(folder: Path, seen: set[Path]) -> Iterator[Found | Problem]:
    """Yield the files of a folder and of every folder below it (each real folder once: links can loop);
    a folder with no transcript anywhere below is reported once, not each file in it."""
    try:
        with os.scandir(folder) as listing:  # the entries know their type: no stat per file
            entries = sorted(listing, key=lambda entry: entry.name)
        real = folder.resolve()
    except OSError as exc:
        yield _unreadable(folder, exc)
        return
    if real in seen:
        return
    seen.add(real)
    here = str(folder) != "."  # Path(".") / name spells no "./"
    inside = os.path.join(str(real), "")
    for entry in entries:
        name = entry.name
        try:
            is_dir, is_file, is_link = entry.is_dir(), entry.is_file(), entry.is_symlink()
        except OSError as exc:  # a link that loops (it holds nothing), an entry this user may not look at
            text = entry.path if here else name
            if exc.errno == errno.ELOOP:
                yield Problem(text, None, "skipped_file", "a symbolic link that loops; not read")
            else:
                yield Problem(text, None, "unreadable_file", f"cannot tell what it is ({exc.strerror}); "
                              "not read", True)
            continue
        if is_dir:
            path = folder / name
            empty = True
            for item in _any_folder(path, seen, nested=True):
                empty = False
                yield item
            if empty:
                yield Problem(str(path), None, "skipped_file", "an empty folder (or one read already); not read")
        else:
            yield from _file(entry.path if here else name, is_file, None if is_link else inside + name, name)


def _file(path: str, is_file: bool, real: str | None = None, name: str | None = None) -> Iterator[Found | Problem]:
    """Yield the file when its name is a transcript shape, else a notice saying what was skipped
    (`real`: its real path, `name`: its name, when the caller knows them)."""
    name = name if name is not None else os.path.basename(path)
    if is_file and name_shape(name) is not None:
        yield (real or _real(path)), path
        return
    what = next((w for p, s, w in NOISE if name.startswith(p) and name.endswith(s)), None)
    if what is None and not is_file and name_shape(name) is not None and _dangling(path):
        what = f"a symbolic link to {os.readlink(path)!r}, which does not exist"
    yield Problem(path, None, "skipped_file", f"{what or 'not a transcript file'}; not read")


def _dangling(path: str) -> bool:
    return os.path.islink(path) and not os.path.exists(path)
