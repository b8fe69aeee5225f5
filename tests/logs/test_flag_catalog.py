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


def test_a_flag_is_explained_in_its_own_formats_words() -> None:
    # TORQUE's TRUNCATED record makes no job of its own; Slurm's is a recovered job
    torque, slurm = flag_meanings("torque"), flag_meanings("slurm")
    assert torque["TRUNCATED"] != slurm["TRUNCATED"]
    assert flag_meanings("pbspro") == torque  # an alias, as in a row's source_format
    assert describe_flag("TRUNCATED", slurm) == slurm["TRUNCATED"]
    assert describe_flag("NON_UTF8", slurm) == torque["NON_UTF8"]  # the common words


def test_a_flag_with_a_detail_is_explained_by_its_name() -> None:
    assert describe_flag("CRLF:whatever", {"CRLF": "carriage return"}) == "carriage return"


def test_flag_counts_are_per_format_most_set_first() -> None:
    import pyarrow as pa

    from gridtrace.logs._flags import flag_counts

    table = pa.table(
        {
            "source_format": ["torque", "slurm", "torque", "torque", "slurm"],
            "flags": [["B", "A"], ["A"], ["A"], [], None],
        }
    )
    counted = flag_counts(table)
    assert counted == {"slurm": {"A": 1}, "torque": {"A": 2, "B": 1}}
    assert list(counted) == ["slurm", "torque"]  # formats by name
    chunked = pa.concat_tables([table.slice(0, 2), table.slice(2)])
    assert flag_counts(chunked) == counted  # the same across chunk boundaries
    ties = pa.table({"source_format": ["swf"] * 2, "flags": [["Z", "Y"], []]})
    assert list(flag_counts(ties)["swf"]) == ["Y", "Z"]  # equal counts by name
    assert flag_counts(table.slice(3, 2)) == {}  # no flag set anywhere
