"""Session titles: cleaning, uniqueness, and lineage numbering ("X", "X #2", ...)."""

from __future__ import annotations

import re
import sqlite3
import unicodedata

MAX_TITLE_LENGTH = 100
_NUMBERED = re.compile(r"^(?P<base>.*?) #(?P<n>\d+)$", re.DOTALL)
_DIGITS = re.compile(r"\d+")
# Format (Cf: zero-width, bidi marks, BOM, ...), control (Cc) and lone surrogates (Cs,
# which SQLite cannot store as UTF-8) are invisible or unprintable: a title drops them.
_DROPPED_CATEGORIES = {"Cc", "Cf", "Cs"}
_DROPPED_CHARS = {"\ufffc"}  # object replacement character: a placeholder, never text


def escape_like(text: str) -> str:
    """Escape LIKE wildcards so `%` and `_` in user text are ordinary characters (ESCAPE '\\')."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _visible(ch: str) -> bool:
    return unicodedata.category(ch) not in _DROPPED_CATEGORIES and ch not in _DROPPED_CHARS


def clean_title(title: str | None) -> str | None:
    """Remove control and invisible characters, fold whitespace, strip; empty becomes None.

    ValueError when the cleaned title is longer than MAX_TITLE_LENGTH: Hermes's public
    `SessionDB.sanitize_title` enforces the limit too, not only `set_session_title`.
    """
    if title is None:
        return None
    spaced = "".join(" " if ch.isspace() else ch for ch in str(title))
    kept = "".join(ch for ch in spaced if _visible(ch))
    folded = " ".join(kept.split())
    if len(folded) > MAX_TITLE_LENGTH:
        raise ValueError(
            f"Title too long ({len(folded)} chars, max {MAX_TITLE_LENGTH} after cleaning)"
        )
    return folded or None


def split_numbered(title: str) -> tuple[str, int | None]:
    """'X #3' -> ('X', 3); 'X' -> ('X', None)."""
    match = _NUMBERED.match(title)
    if match and match.group("base"):
        return match.group("base"), int(match.group("n"))
    return title, None


def lineage_titles(conn: sqlite3.Connection, base: str) -> list[sqlite3.Row]:
    """Sessions titled `base` or `base #N`, oldest start first."""
    return conn.execute(
        "SELECT id, title, started_at FROM sessions WHERE title = ? OR title LIKE ? ESCAPE '\\' "
        "ORDER BY started_at, id",
        (base, escape_like(base) + " #%"),
    ).fetchall()


def highest_number(base: str, titles: list[str]) -> int:
    """Highest N among `base` (counts as 1) and `base #N`; 0 when none is used."""
    highest = 0
    prefix = f"{base} #"
    for title in titles:
        if title == base:
            highest = max(highest, 1)
        elif title.startswith(prefix) and _DIGITS.fullmatch(title, len(prefix)):
            highest = max(highest, int(title[len(prefix):]))  # also for an empty base: " #2"
    return highest


def next_title_in_lineage(conn: sqlite3.Connection, title: str) -> str:
    """The base title when unused, else `"<base> #<highest N + 1>"`."""
    base, _ = split_numbered(title)
    titles = [row["title"] for row in lineage_titles(conn, base)]
    highest = highest_number(base, titles)
    return base if highest == 0 else f"{base} #{highest + 1}"


def resolve_by_title(conn: sqlite3.Connection, title: str) -> str | None:
    """The latest-started numbered continuation if any exists, else the exact match, else None."""
    numbered = [
        row for row in lineage_titles(conn, title)
        if row["title"] != title and split_numbered(row["title"])[0] == title
    ]
    if numbered:
        return str(numbered[-1]["id"])
    row = conn.execute("SELECT id FROM sessions WHERE title = ?", (title,)).fetchone()
    return row["id"] if row else None


def set_title(conn: sqlite3.Connection, session_id: str, title: str | None) -> bool:
    """Store a cleaned title; ValueError if it is too long or held by another session."""
    cleaned = clean_title(title)
    if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is None:
        return False
    if cleaned is not None:
        holder = conn.execute(
            "SELECT id FROM sessions WHERE title = ? AND id != ?", (cleaned, session_id)
        ).fetchone()
        if holder is not None:
            raise ValueError(f"Title '{cleaned}' is already in use by session {holder['id']}")
    conn.execute("UPDATE sessions SET title = ? WHERE id = ?", (cleaned, session_id))
    return True


def shared_titles(conn: sqlite3.Connection) -> list[tuple[str, list[str]]]:
    """Each non-NULL title held by more than one session, with its holders oldest first."""
    shared = conn.execute(
        "SELECT title FROM sessions WHERE title IS NOT NULL GROUP BY title HAVING COUNT(*) > 1 ORDER BY title"
    ).fetchall()
    return [
        (title, [row[0] for row in conn.execute(
            "SELECT id FROM sessions WHERE title = ? ORDER BY started_at, id", (title,))])
        for (title,) in shared
    ]


def dedupe_titles(conn: sqlite3.Connection) -> list[dict[str, str]]:
    """Give every session that shares a non-NULL title with an earlier one the next free number.

    The session that started first keeps the title exactly; each later one becomes
    `"<title> #N"`. Returns one `{"session_id", "old", "new"}` per rename.
    """
    renames: list[dict[str, str]] = []
    for title, holders in shared_titles(conn):
        text = _as_text(title)
        for session_id in holders[1:]:
            new = next_title_in_lineage_unchecked(conn, text)
            conn.execute("UPDATE sessions SET title = ? WHERE id = ?", (new, session_id))
            renames.append({"session_id": session_id, "old": text, "new": new})
    return renames


def _as_text(title: object) -> str:
    """A title as text: another program may have stored one as a BLOB or a number (the first holder keeps
    it as it is; the renamed ones get text)."""
    if isinstance(title, bytes):
        return title.decode("utf-8", "replace")
    return title if isinstance(title, str) else str(title)


def next_title_in_lineage_unchecked(conn: sqlite3.Connection, title: str) -> str:
    """Like next_title_in_lineage, but numbers from the exact title (which may itself end in #N)."""
    titles = [row["title"] for row in lineage_titles(conn, title)]
    return f"{title} #{max(highest_number(title, titles), 1) + 1}"
