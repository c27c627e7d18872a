"""The legacy-format cases of issue 9 (files as Hermes' own writer code wrote them), end to end
through the CLI: first run, re-run adds nothing, reports and SQL checked (tests/legacy_cases.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import hermes_state
from tests.legacy_case_runner import run_case
from tests.legacy_cases import build_all

CASES = [
    "bad_file_names", "cleaned_snapshot_text", "code_pages", "compression_child_under_parent_name",
    "doubled_replies_mirror_era", "dry_run_names", "empty_model", "enrichment_messages_enriched",
    "export_round_trip_of_doubled_rows",
    "flattened_images", "hermes_agent_logs", "hermes_sessions_export", "inflated_snapshots", "integer_overflow",
    "merge_other_db", "mirror_tagged_in_gateway_snapshot", "nested_folders", "report_grouping",
    "save_without_session_start", "session_meta_rows_foreign_role", "sharegpt_compression_child_under_parent_name",
    "sharegpt_log_beside_jsonl", "trailing_space_rewrite_era", "unpaired_surrogates",
    "western_windows_transcript",
]


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("legacy-cases")
    assert build_all(root) == CASES
    return root


@pytest.mark.parametrize("name", CASES)
def test_case(cases: Path, name: str) -> None:
    result = run_case(cases / name, hermes_state, verbose=False)
    errors = [f"[{step['step']}] {error}" for step in result["steps"] for error in step["errors"]]
    assert not errors, "\n".join(errors)
