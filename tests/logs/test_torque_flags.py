"""Every flag the TORQUE reader can set is explained in its FLAGS, and nothing silent is left."""

from __future__ import annotations

from gridtrace.logs import describe_flag, flag_meanings
from gridtrace.logs._torque import FLAGS
from gridtrace.logs._torque_jobs import JOB_FLAGS
from gridtrace.logs._torque_lines import tokenize_torque_reference

# the flags the tokeniser can set on a line, and those the assembler adds to records
LINE_FLAGS = (
    "CRLF",
    "NUL_STRIPPED",
    "NUL_INSIDE",
    "CUT_FRAGMENT",
    "NON_UTF8",
    "CONTROL_CHARS",
    "FILE_PREFIX",
    "BARE_TOKEN",
    "REPEATED_KEY",
    "NO_NEWLINE",
    "TRUNCATED",
)
ASSEMBLY_RECORD_FLAGS = ("DUPLICATE", "DST_AMBIGUOUS", "DST_GAP", "STAMP_UNREADABLE")


def test_every_flag_has_a_one_line_meaning() -> None:
    for flag in (*JOB_FLAGS, *LINE_FLAGS, *ASSEMBLY_RECORD_FLAGS):
        meaning = describe_flag(f"{flag}:some.key" if flag == "VALUE_UNREADABLE" else flag, FLAGS)
        assert meaning, flag
    for flag, meaning in FLAGS.items():
        assert meaning, flag
        assert "\n" not in meaning, flag
        assert flag.isupper() or flag.endswith("*"), flag
    # nothing explained that the reader cannot set
    known = {*JOB_FLAGS, *LINE_FLAGS, *ASSEMBLY_RECORD_FLAGS}
    assert {f.removesuffix(":*") for f in FLAGS} <= known


def test_the_catalog_carries_the_torque_flags() -> None:
    meanings = flag_meanings()
    assert {"TRUNCATED", "END_FROM_STAMP", "CORES_CONFLICT", "NUL_STRIPPED"} <= set(meanings)


def test_every_line_flag_is_reachable() -> None:
    stamp = b"05/03/2024 12:00:00"
    lines = [
        stamp + b";S;1.p;user=a queue=q\r",
        b"frag\x00\x00" + stamp + b";Q;2.p;queue=q",
        stamp + b";Q;6.p;queue=q\x00 more=1",
        stamp + b";Q;3.p;queue=q\xe9\x07 bare tasks=a tasks=b",
        b"20240503:" + stamp + b";Q;4.p;queue=q",
    ]
    data = b"\n".join(lines) + b"\n" + stamp + b";E;5.p;user=a"
    seen = set()
    for flags in tokenize_torque_reference(data, src_file="f", site="s").records["flags"]:
        seen.update(flags.as_py())
    assert seen == set(LINE_FLAGS)
