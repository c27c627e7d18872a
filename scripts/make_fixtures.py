"""Build the schema fixtures: one database per schema version v1..v6 plus the real-world traps.

Deterministic: the same script always writes the same SQL text, so `--check` can prove the
committed files in fixtures/schema/ are what this script makes. Each fixture is a plain-SQL
dump (small, diffable); tests load them with `hermes_state_tools.store.sqldump.load_sql`.

    python scripts/make_fixtures.py            # (re)write fixtures/schema/
    python scripts/make_fixtures.py --check    # exit 1 if the committed files differ
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path

from hermes_state_tools.core.schema import columns_at, schema_statements
from hermes_state_tools.store.sqldump import content_digest, dump_sql

OUT = Path(__file__).resolve().parent.parent / "fixtures" / "schema"
BASE_TIME = 1_767_225_600.0  # 2026-01-01T00:00:00Z: every timestamp is an offset from here

_TEXTS = [
    "Can you check disk usage on the box?",
    "Root is at 91% (43G free). Most of the rest is snap loop devices.",
    "昨天和其他Agent的聊天记录，记忆断裂问题复现了",
    "今天讨论A2A通信协议的实现 🚀",
    "こんにちは世界 — ログを確認してください",
    "안녕하세요 반갑습니다, 배포 상태는?",
    "Run chat-send after editing my-app.config.ts (50% done, see TODO: fix)",
    "Plan the Lisbon café crawl for Sunday ☕️☕️",
    "deploy to staging with --force? user@host:~/app has a/b tests",
    "It's fine — the \"unterminated quote and (parens are part of the text",
]
_TOOL_OUTPUT = '{"output": "Filesystem Size Used Avail Use%\\n/dev/nvme0n1p2 457G 391G 43G 91% /", "exit_code": 0}'


class Builder:
    """Writes realistic rows into a database of one schema version."""

    def __init__(self, conn: sqlite3.Connection, version: int, seed: int) -> None:
        self.conn, self.version, self.rng = conn, version, random.Random(seed)
        self.session_cols = {c.name for c in columns_at("sessions", version)}
        self.message_cols = {c.name for c in columns_at("messages", version)}
        self.clock = BASE_TIME

    def tick(self, seconds: float = 7.0) -> float:
        self.clock += seconds + round(self.rng.random(), 6)
        return round(self.clock, 6)

    def session(self, sid: str, source: str, parent: str | None = None, title: str | None = None,
                end_reason: str | None = "user_exit", **extra: object) -> None:
        row: dict[str, object] = {
            "id": sid, "source": source, "user_id": f"u{self.rng.randint(1000, 9999)}",
            "model": self.rng.choice(["anthropic/claude-opus-4.6", "openai/gpt-5.4", "nous/hermes-4-405b"]),
            "model_config": json.dumps({"temperature": 0.7, "max_tokens": 4096}),
            "system_prompt": f"You are Hermes Agent. Session {sid} on {source}.",
            "parent_session_id": parent, "started_at": self.tick(60),
            "input_tokens": self.rng.randint(100, 90_000), "output_tokens": self.rng.randint(10, 9_000),
            "title": title,
        }
        if self.version >= 5:
            row.update(cache_read_tokens=self.rng.randint(0, 5000), cache_write_tokens=self.rng.randint(0, 500),
                       reasoning_tokens=self.rng.randint(0, 800), billing_provider="openrouter",
                       billing_base_url="https://openrouter.ai/api/v1", billing_mode="metered",
                       estimated_cost_usd=round(self.rng.random(), 4), actual_cost_usd=None,
                       cost_status="estimated", cost_source="pricing_table", pricing_version="2026-03")
        row.update(extra)
        self._insert("sessions", {k: v for k, v in row.items() if k in self.session_cols})
        self._turns(sid, self.rng.randint(2, 4))
        if end_reason:
            self.conn.execute("UPDATE sessions SET ended_at = ?, end_reason = ? WHERE id = ?",
                              (self.tick(5), end_reason, sid))

    def _turns(self, sid: str, turns: int) -> None:
        for turn in range(turns):
            self.message(sid, "user", self.rng.choice(_TEXTS))
            if turn % 2:
                call_id = f"call_{sid[-4:]}_{turn}"
                calls = [{"id": call_id, "type": "function",
                          "function": {"name": "terminal", "arguments": '{"command": "df -h"}'}}]
                self.message(sid, "assistant", "", tool_calls=json.dumps(calls), finish_reason="tool_calls",
                             reasoning="User wants disk usage; run df.",
                             reasoning_details=json.dumps([{"type": "reasoning.text", "text": "run df"}]))
                self.message(sid, "tool", _TOOL_OUTPUT, tool_call_id=call_id, tool_name="terminal")
            self.message(sid, "assistant", self.rng.choice(_TEXTS), finish_reason="stop",
                         codex_reasoning_items=json.dumps([{"id": f"rs_{turn}", "encrypted_content": "enc"}]))

    def message(self, sid: str, role: str, content: str, **fields: object) -> None:
        row = {"session_id": sid, "role": role, "content": content, "timestamp": self.tick(3), **fields}
        self._insert("messages", {k: v for k, v in row.items() if k in self.message_cols})
        calls = json.loads(str(fields["tool_calls"])) if fields.get("tool_calls") else []
        self.conn.execute(
            "UPDATE sessions SET message_count = message_count + 1, tool_call_count = tool_call_count + ? "
            "WHERE id = ?", (len(calls) if role != "tool" else 0, sid))

    def _insert(self, table: str, row: dict[str, object]) -> None:
        names = ", ".join(row)
        self.conn.execute(f"INSERT INTO {table} ({names}) VALUES ({', '.join('?' * len(row))})", list(row.values()))


def populate(conn: sqlite3.Connection, version: int) -> None:
    """Several sources, a 4-deep compression chain with a delegate, titles and numbered titles."""
    b = Builder(conn, version, seed=version)
    titled = version >= 3
    b.session("20260105_091500_a1b2c3", "cli", title="Fix Docker Build" if titled else None,
              end_reason="compression")
    b.session("20260105_093000_d4e5f6", "cli", parent="20260105_091500_a1b2c3", end_reason="delegate_done")
    b.session("20260105_101500_0a0b0c", "cli", parent="20260105_091500_a1b2c3",
              title="Fix Docker Build #2" if titled else None, end_reason="compression")
    b.session("20260105_111500_1d2e3f", "cli", parent="20260105_101500_0a0b0c",
              title="Fix Docker Build #3" if titled else None, end_reason="compression")
    b.session("20260105_121500_4a5b6c", "cli", parent="20260105_111500_1d2e3f", end_reason=None)
    b.session("20260110_184211_a1c4e9b2", "telegram", title="周末计划 🏔️" if titled else None)
    b.session("20260112_081530_5be07d11", "discord", title="100% done_ok" if titled else None)
    b.session("cron_backup_20260113_020000", "cron", end_reason="cron_complete")
    b.session("20260114_140233_c0ffee12", "whatsapp", title=None, end_reason=None)
    b.session("20260115_090000_deadbe", "cli", title="Lisbon café crawl" if titled else None)


def create(version: int) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    for statement in schema_statements(version):
        conn.execute(statement)
    conn.execute("INSERT INTO schema_version (version) VALUES (?)", (version,))
    populate(conn, version)
    conn.commit()
    return conn


def trap_no_version_table() -> sqlite3.Connection:
    conn = create(4)
    conn.execute("DROP TABLE schema_version")
    return conn


def trap_empty_version() -> sqlite3.Connection:
    conn = create(5)
    conn.execute("DELETE FROM schema_version")
    return conn


def trap_duplicate_titles() -> sqlite3.Connection:
    conn = create(3)
    conn.execute("UPDATE sessions SET title = 'Fix Docker Build' WHERE id = '20260115_090000_deadbe'")
    conn.execute("UPDATE sessions SET title = 'Fix Docker Build' WHERE id = '20260112_081530_5be07d11'")
    conn.execute("UPDATE sessions SET title = '周末计划 🏔️' WHERE id = '20260114_140233_c0ffee12'")
    return conn


def trap_no_fts() -> sqlite3.Connection:
    conn = create(2)
    for name in ("messages_fts_insert", "messages_fts_delete", "messages_fts_update"):
        conn.execute(f"DROP TRIGGER {name}")
    conn.execute("DROP TABLE messages_fts")
    return conn


def trap_no_triggers() -> sqlite3.Connection:
    conn = create(6)
    for name in ("messages_fts_insert", "messages_fts_update"):
        conn.execute(f"DROP TRIGGER {name}")
    return conn


def trap_no_indexes() -> sqlite3.Connection:
    conn = create(6)
    for name in ("idx_messages_session", "idx_sessions_title_unique", "idx_sessions_source"):
        conn.execute(f"DROP INDEX {name}")
    return conn


def trap_version_31() -> sqlite3.Connection:
    conn = create(6)
    conn.execute("ALTER TABLE messages ADD COLUMN reasoning_content TEXT")
    conn.execute("UPDATE schema_version SET version = 31")
    return conn


def trap_interrupted_upgrade() -> sqlite3.Connection:
    """A v3 file whose upgrade died inside step 5: the version row still says 3."""
    conn = create(3)
    conn.execute("ALTER TABLE sessions ADD COLUMN cache_read_tokens INTEGER DEFAULT 0")
    conn.execute("ALTER TABLE sessions ADD COLUMN cache_write_tokens INTEGER DEFAULT 0")
    return conn


FIXTURES: dict[str, Callable[[], sqlite3.Connection]] = {
    **{f"v{v}": (lambda v=v: create(v)) for v in range(1, 7)},
    "trap_no_version_table": trap_no_version_table,
    "trap_empty_version": trap_empty_version,
    "trap_duplicate_titles": trap_duplicate_titles,
    "trap_no_fts": trap_no_fts,
    "trap_no_triggers": trap_no_triggers,
    "trap_no_indexes": trap_no_indexes,
    "trap_version_31": trap_version_31,
    "trap_interrupted_upgrade": trap_interrupted_upgrade,
}


def render() -> dict[str, str]:
    """file name -> text, the dumps plus manifest.json (row counts and content hashes)."""
    files: dict[str, str] = {}
    manifest: dict[str, dict[str, object]] = {}
    for name, build in FIXTURES.items():
        conn = build()
        conn.commit()
        files[f"{name}.sql"] = dump_sql(conn)
        manifest[name] = {
            "sessions": conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0],
            "messages": conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0],
            "content_sha256": content_digest(conn),
        }
        conn.close()
    files["manifest.json"] = json.dumps(manifest, indent=2, sort_keys=True) + "\n"
    return files


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed files instead")
    args = parser.parse_args()
    files = render()
    if args.check:
        stale = [n for n, text in files.items() if not (OUT / n).exists() or (OUT / n).read_text("utf-8") != text]
        for name in stale:
            print(f"stale fixture: fixtures/schema/{name}", file=sys.stderr)
        return 1 if stale else 0
    OUT.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (OUT / name).write_text(text, encoding="utf-8")
    print(f"wrote {len(files)} files to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
