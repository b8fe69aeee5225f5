from __future__ import annotations

from gridtrace.logs import describe_flag, flag_meanings, registered_formats


def test_prefix_entries_explain_every_flag_with_that_prefix() -> None:
    catalog = {"VO_FROM_*": "copied", "STATE_WAS_*": "was", "STATE_WAS_X*": "was x"}
    assert describe_flag("VO_FROM_GROUP", catalog) == "copied"
    assert describe_flag("STATE_WAS_XY", catalog) == "was x"  # the longest prefix wins
    assert describe_flag("NOT_A_FLAG", catalog) is None


def test_the_catalog_holds_every_registered_format_and_the_common_flags() -> None:
    meanings = flag_meanings()
    assert "NON_UTF8" in meanings
    for log_format in registered_formats():
        assert set(log_format.flags) <= set(meanings)
    assert all(isinstance(text, str) and text for text in meanings.values())
