"""Virtual organisations: which VO each job belongs to.

Batch logs do not name the VO. Grid sites map each VO to unix groups (``prodatls``, ``atlas``),
pool accounts (``patls009``) or queues (``atlas``, ``cms_long``); a :class:`VOMapping` states those
rules. Monitoring VOs (``dteam``, ``ops``: the grid's own test jobs) are flagged so that a trace can
leave them out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from gridtrace.errors import ConfigError

TYPE_CHECKING = False  # typing's constant without importing typing (mypy knows the name)
if TYPE_CHECKING:  # pyarrow is imported where a table is built: the small parse path has none
    from typing import Any, Literal, TypeAlias

    import pyarrow as pa

    Field: TypeAlias = Literal["group", "account", "queue", "user"]

__all__ = ["DEFAULT_MONITORING_VOS", "VOMapping", "VORule"]

DEFAULT_MONITORING_VOS = ("dteam", "ops")
_FIELDS = ("group", "account", "queue", "user")  # the names Field allows


class _Frozen:
    """Frozen value objects as ``@dataclass(frozen=True)`` makes them, without dataclasses.

    dataclasses imports inspect (and ast, dis, tokenize): some 8 ms of start-up the small parse
    path need not pay. A subclass names its compared fields in ``_FIELDS_SHOWN``: they make its
    equality, hash, repr and pickle, in that order (the constructor's).
    """

    __slots__ = ()
    _FIELDS_SHOWN: tuple[str, ...] = ()

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self._FIELDS_SHOWN)

    def __setattr__(self, name: str, value: object) -> None:
        msg = f"cannot assign to field {name!r}"
        raise AttributeError(msg)

    def __delattr__(self, name: str) -> None:
        msg = f"cannot delete field {name!r}"
        raise AttributeError(msg)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Frozen) or other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._FIELDS_SHOWN)
        return f"{self.__class__.__qualname__}({shown})"

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return self.__class__, self._values()


class VORule(_Frozen):
    """Jobs whose ``field`` fully matches the regular expression ``pattern`` belong to ``vo``.

    Attributes
    ----------
    field : {"group", "account", "queue", "user"}
        The jobs column the rule looks at.
    pattern : str
        A regular expression that must match the whole value (e.g. ``"(prd)?atl.*"``).
    vo : str
        The VO of the jobs that match.
    """

    __slots__ = ("field", "pattern", "vo")
    _FIELDS_SHOWN = ("field", "pattern", "vo")
    field: Field
    pattern: str
    vo: str

    def __init__(self, field: Field, pattern: str, vo: str) -> None:
        if field not in _FIELDS:
            msg = f"VO rule field must be one of {', '.join(_FIELDS)}, not {field!r}"
            raise ConfigError(msg)
        try:
            re.compile(pattern)
        except re.error as exc:
            msg = f"VO rule pattern {pattern!r} is not a regular expression: {exc}"
            raise ConfigError(msg) from None
        object.__setattr__(self, "field", field)
        object.__setattr__(self, "pattern", pattern)
        object.__setattr__(self, "vo", vo)


class VOMapping(_Frozen):
    """Ordered rules from group / account / queue / user to VO; the first rule that matches wins.

    Attributes
    ----------
    rules : tuple of VORule
        Tried in order.
    fallback_field : {"group", "account", "queue", "user"} or None
        When no rule matches, take the VO from this column (flag ``VO_FROM_<FIELD>``); with
        ``None`` the VO stays null (flag ``VO_UNMAPPED``).
    monitoring : tuple of str
        VOs whose jobs are the grid's monitoring probes (flag ``MONITORING``).
    """

    __slots__ = ("_compiled", "fallback_field", "monitoring", "rules")
    _FIELDS_SHOWN = ("rules", "fallback_field", "monitoring")
    rules: tuple[VORule, ...]
    fallback_field: Field | None
    monitoring: tuple[str, ...]
    _compiled: tuple[re.Pattern[str], ...]

    def __init__(
        self,
        rules: tuple[VORule, ...] = (),
        fallback_field: Field | None = "group",
        monitoring: tuple[str, ...] = DEFAULT_MONITORING_VOS,
    ) -> None:
        if fallback_field is not None and fallback_field not in _FIELDS:
            msg = f"fallback_field must be one of {', '.join(_FIELDS)} or None"
            raise ConfigError(msg)
        object.__setattr__(self, "rules", rules)
        object.__setattr__(self, "fallback_field", fallback_field)
        object.__setattr__(self, "monitoring", monitoring)
        object.__setattr__(self, "_compiled", tuple(re.compile(r.pattern) for r in rules))

    @classmethod
    def from_dict(cls, spec: Mapping[str, Any]) -> VOMapping:
        """Build a mapping from plain data, as written in a config file.

        ``{"rules": [{"field": "group", "pattern": "prdatl.*", "vo": "atlas"}, ...],
        "fallback_field": "group", "monitoring": ["dteam", "ops"]}``; every key is optional.
        """
        from typing import cast  # here: the small parse path imports no typing

        if not isinstance(cast(object, spec), Mapping):  # plain data from a file: check
            msg = f"a VO mapping is a mapping of rules, fallback_field, monitoring, not {spec!r}"
            raise ConfigError(msg)
        unknown = set(spec) - {"rules", "fallback_field", "monitoring"}
        if unknown:
            msg = (
                f"unknown VO mapping key(s): {', '.join(sorted(map(str, unknown)))}; the keys are "
                "rules, fallback_field and monitoring"
            )
            raise ConfigError(msg)
        given_rules = spec.get("rules") or ()
        if not isinstance(given_rules, list | tuple):
            msg = f"VO rules are a list of {{field, pattern, vo}}, not {given_rules!r}"
            raise ConfigError(msg)
        monitoring = spec.get("monitoring", DEFAULT_MONITORING_VOS)
        if not isinstance(monitoring, list | tuple) or not all(
            isinstance(vo, str) for vo in monitoring
        ):
            msg = f"monitoring is a list of VO names, not {monitoring!r}"
            raise ConfigError(msg)
        rules: list[VORule] = []
        for index, rule in enumerate(given_rules):
            if not isinstance(rule, Mapping):
                msg = f"VO rule {index} is not a mapping of field, pattern and vo: {rule!r}"
                raise ConfigError(msg)
            missing = {"field", "pattern", "vo"} - set(rule)
            if missing:
                msg = f"VO rule {index} lacks {', '.join(sorted(missing))}"
                raise ConfigError(msg)
            extra = set(rule) - {"field", "pattern", "vo"}
            if extra:
                msg = f"VO rule {index} has unknown key(s) {', '.join(sorted(map(str, extra)))}"
                raise ConfigError(msg)
            rules.append(VORule(field=rule["field"], pattern=rule["pattern"], vo=rule["vo"]))
        return cls(
            rules=tuple(rules),
            fallback_field=spec.get("fallback_field", "group"),
            monitoring=tuple(monitoring),
        )

    def to_dict(self) -> dict[str, Any]:
        """Return the plain-data form read by :meth:`from_dict`."""
        return {
            "rules": [{"field": r.field, "pattern": r.pattern, "vo": r.vo} for r in self.rules],
            "fallback_field": self.fallback_field,
            "monitoring": list(self.monitoring),
        }

    def vo_of(self, job: Mapping[str, str | None]) -> tuple[str | None, str | None]:
        """Return ``(vo, flag)`` for one job given as a mapping of its columns."""
        for rule, compiled in zip(self.rules, self._compiled, strict=True):
            value = job.get(rule.field)
            if value is not None and compiled.fullmatch(value):
                return rule.vo, None
        if self.fallback_field is not None and job.get(self.fallback_field) is not None:
            return job[self.fallback_field], f"VO_FROM_{self.fallback_field.upper()}"
        return None, "VO_UNMAPPED"

    def apply(self, jobs: pa.Table) -> pa.Table:
        """Return ``jobs`` with the ``vo`` column set and the VO flags added.

        Each distinct combination of the columns the rules read is resolved once, so large
        tables cost little.
        """
        import pyarrow as pa

        from gridtrace.schema import conform

        fields = self.fields_read()
        columns = {f: jobs.column(f).to_pylist() for f in fields}
        vos, flags = self.vo_columns(columns, jobs.column("flags").to_pylist())
        index = jobs.schema.get_field_index
        table = jobs.set_column(index("vo"), "vo", pa.array(vos, pa.string()))
        table = table.set_column(index("flags"), "flags", pa.array(flags, pa.list_(pa.string())))
        return conform(table, "jobs")

    def fields_read(self) -> list[str]:
        """Return the jobs columns the rules and the fallback read, sorted."""
        return sorted({r.field for r in self.rules} | _fallback(self.fallback_field))

    def vo_columns(
        self,
        columns: Mapping[str, Sequence[str | None]],
        flags: Sequence[Sequence[str] | None],
    ) -> tuple[list[str | None], list[list[str]]]:
        """Return the ``vo`` and ``flags`` columns of jobs given as Python lists.

        Parameters
        ----------
        columns : mapping of str to sequence
            The columns named by :meth:`fields_read`, one value per job.
        flags : sequence
            Each job's flags (None for none); VO flags already there are replaced.

        Returns
        -------
        tuple of list
            The VO of each job and its new flags (VO flags, then ``MONITORING``, last).
        """
        fields = self.fields_read()
        cache: dict[tuple[str | None, ...], tuple[str | None, str | None]] = {}
        vos: list[str | None] = []
        new_flags_column: list[list[str]] = []
        monitoring = set(self.monitoring)
        for row, old_flags in enumerate(flags):
            key = tuple(columns[f][row] for f in fields)
            if key not in cache:
                cache[key] = self.vo_of(dict(zip(fields, key, strict=True)))
            vo, flag = cache[key]
            new_flags = [f for f in (old_flags or ()) if not _is_vo_flag(f)]
            if flag:
                new_flags.append(flag)
            if vo in monitoring:
                new_flags.append("MONITORING")
            vos.append(vo)
            new_flags_column.append(new_flags)
        return vos, new_flags_column


def _fallback(fallback_field: str | None) -> set[str]:
    return set() if fallback_field is None else {fallback_field}


def _is_vo_flag(flag: str) -> bool:
    return flag in ("VO_UNMAPPED", "MONITORING") or flag.startswith("VO_FROM_")


def mapping_from_pairs(pairs: Iterable[Sequence[str]]) -> VOMapping:
    """Build a mapping from ``(field, pattern, vo)`` triples (used by the CLI's ``--vo`` option)."""
    from typing import cast  # here: the small parse path imports no typing

    rules = []
    for triple in pairs:
        if len(triple) != 3:
            msg = f"a VO rule is FIELD:PATTERN=VO, got {':'.join(triple)!r}"
            raise ConfigError(msg)
        field_name, pattern, vo = triple
        if field_name not in _FIELDS:
            msg = f"VO rule field must be one of {', '.join(_FIELDS)}, not {field_name!r}"
            raise ConfigError(msg)
        rules.append(VORule(field=cast("Field", field_name), pattern=pattern, vo=vo))
    return VOMapping(rules=tuple(rules))
