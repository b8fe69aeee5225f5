"""What every flag on a ``records`` or ``jobs`` row means.

A reader never changes a value silently: every fallback, repair, guess or resolved conflict sets a
flag on the row. Each reader module declares the flags it can set in a module-level ``FLAGS``
mapping (flag → one line saying what was decided and what the row holds); a registered
:class:`~gridtrace.logs.LogFormat` carries its mapping in ``flags``. :func:`flag_meanings` gathers
them all, so that ``gridtrace parse`` can print each count with its meaning and a test can check
that no reader sets a flag nobody has explained. A name ending in ``*`` stands for every flag with
that prefix (``VO_FROM_*``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from gridtrace.logs._text import NON_UTF8

TYPE_CHECKING = False  # typing's constant without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from typing import Any

    import pyarrow as pa

__all__ = [
    "COMMON_FLAGS",
    "describe_flag",
    "flag_counts",
    "flag_meanings",
    "merged_meanings",
]

COMMON_FLAGS: Mapping[str, str] = {
    NON_UTF8: (
        "bytes that are not UTF-8 were decoded as Windows-1252 (Latin-1 where it has no "
        "character); the original bytes are kept in the row's raw column"
    ),
    "VO_FROM_*": (
        "no VO rule matched; the VO is copied from the column the suffix names (the "
        "mapping's fallback field)"
    ),
    "VO_UNMAPPED": "no VO rule matched and the fallback column is empty: vo is null",
    "MONITORING": "the job belongs to a monitoring VO (test jobs a grid site runs on itself)",
}


def flag_meanings(log_format: str | None = None) -> dict[str, str]:
    """Every flag a reader (or the VO mapping) can set, with what it means.

    Parameters
    ----------
    log_format : str, optional
        The format whose rows the flags are on (a name or alias, as in a row's
        ``source_format``). Readers use some names in their own sense (``TRUNCATED`` is a
        record that made no job in TORQUE, a recovered job in Slurm), so a row's flag is
        explained by its own format's catalog. Without it, the catalogs of all registered
        formats are merged, the first registered format's words kept for a shared name.

    Returns
    -------
    dict
        Flag (or ``PREFIX_*``) → meaning, sorted by flag.
    """
    from gridtrace.logs._registry import get_format, registered_formats

    formats = registered_formats() if log_format is None else [get_format(log_format)]
    return merged_meanings(entry.flags for entry in formats)


def merged_meanings(catalogs: Iterable[Mapping[str, str]]) -> dict[str, str]:
    """Merge readers' flag catalogs after :data:`COMMON_FLAGS`; the first words of a name win.

    Returns
    -------
    dict
        Flag (or ``PREFIX_*``) → meaning, sorted by flag.
    """
    meanings = dict(COMMON_FLAGS)
    for catalog in catalogs:
        for flag, meaning in catalog.items():
            meanings.setdefault(flag, meaning)
    return dict(sorted(meanings.items()))


def describe_flag(flag: str, meanings: Mapping[str, str] | None = None) -> str | None:
    """Return what ``flag`` means, or None when no reader explains it.

    Parameters
    ----------
    flag : str
        A flag as found on a row.
    meanings : mapping, optional
        The catalog to look in; :func:`flag_meanings` by default.
    """
    catalog = flag_meanings() if meanings is None else meanings
    if flag in catalog:
        return catalog[flag]
    # a flag may carry a detail after a colon (VALUE_UNREADABLE:Resource_List.mem)
    name = flag.partition(":")[0]
    if name in catalog:
        return catalog[name]
    prefixes = [key for key in catalog if key.endswith("*") and flag.startswith(key[:-1])]
    return catalog[max(prefixes, key=len)] if prefixes else None


def flag_counts(table: pa.Table) -> dict[str, dict[str, int]]:
    """Count each flag of a ``records`` or ``jobs`` table per ``source_format``.

    Parameters
    ----------
    table : pyarrow.Table
        A table with a ``flags`` list column and a ``source_format`` column (never null).

    Returns
    -------
    dict
        ``{source_format: {flag: rows}}``, formats in name order, each format's flags from the
        most set (ties by name); formats with no flag set are left out.
    """
    # value counts per format, not a group-by: a group-by loads pyarrow's Acero engine, a
    # tenth of the start-up of `gridtrace parse` on one day's file
    from typing import Any, cast  # here: the small parse path imports no typing

    import pyarrow as pa
    import pyarrow.compute as pc

    flags = table.column("flags").combine_chunks()
    flat = pc.list_flatten(flags)
    if not len(flat):
        return {}
    owners: Any = pc.take(table.column("source_format"), pc.list_parent_indices(flags))
    if isinstance(owners, pa.ChunkedArray):
        owners = owners.combine_chunks()
    out: dict[str, dict[str, int]] = {}
    names: list[str] = pc.unique(owners).to_pylist()
    for source_format in sorted(names):
        mine = pc.filter(flat, pc.equal(owners, pa.scalar(source_format)))
        counted: list[dict[str, Any]] = cast(Any, pc.value_counts(mine)).to_pylist()
        ranked = sorted(counted, key=lambda c: (-c["counts"], c["values"]))
        out[source_format] = {c["values"]: int(c["counts"]) for c in ranked}
    return out
