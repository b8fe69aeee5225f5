"""``select_segment``: the most representative segment by the research's criteria."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from gridtrace.errors import ConfigError
from gridtrace.schema import validate

__all__ = ["SegmentChoice", "SelectionCriteria", "select_segment"]


@dataclass(frozen=True, slots=True)
class SelectionCriteria:
    """What makes a segment a good benchmark workload.

    Attributes
    ----------
    min_jobs : int, default 10,000
        Enough jobs.
    utilisation : (float, float) or None, default None
        Band [low, high] the utilisation factor U must lie in; None accepts any U.
    require_stable_pool : bool, default True
        The pool did not change inside the segment (and was checked).
    runtime_ks_scale, vo_jsd_scale : float, default 0.1 and 0.05
        Units of the distance to the whole log: distance = KS / runtime_ks_scale +
        JSD / vo_jsd_scale (the merge thresholds, so 1 is "just material").
    max_distance : float or None, default None
        Reject segments farther than this from the whole log.
    """

    min_jobs: int = 10_000
    utilisation: tuple[float, float] | None = None
    require_stable_pool: bool = True
    runtime_ks_scale: float = 0.1
    vo_jsd_scale: float = 0.05
    max_distance: float | None = None

    def __post_init__(self) -> None:
        if self.utilisation is not None and not self.utilisation[0] <= self.utilisation[1]:
            msg = f"utilisation band must have low <= high, not {self.utilisation}"
            raise ConfigError(msg)
        if not (self.runtime_ks_scale > 0 and self.vo_jsd_scale > 0):
            msg = "runtime_ks_scale and vo_jsd_scale must be positive"
            raise ConfigError(msg)


@dataclass(frozen=True)
class SegmentChoice:
    """The chosen segment, the ranking of all segments, and why.

    Attributes
    ----------
    segment_id : int
        The best segment.
    eligible : bool
        Whether it meets every criterion (if none does, the one with the fewest failures).
    explanation : str
        A human-readable account of the choice.
    ranking : tuple of dict
        Every segment, best first: ``segment_id``, ``eligible``, ``failed`` (criteria not met),
        ``distance`` to the whole log, ``jobs``, ``utilisation``.
    """

    segment_id: int
    eligible: bool
    explanation: str
    ranking: tuple[dict[str, Any], ...]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON types."""
        return {
            "segment_id": self.segment_id,
            "eligible": self.eligible,
            "explanation": self.explanation,
            "ranking": list(self.ranking),
        }


def _finite(value: Any) -> float:
    return float(value) if value is not None and math.isfinite(float(value)) else math.inf


def select_segment(segments: pa.Table, criteria: SelectionCriteria | None = None) -> SegmentChoice:
    """Pick the most representative segment.

    Segments that meet every criterion (enough jobs, stable pool, U in the band, close enough
    to the whole log) come first, closest to the whole log's runtime distribution and VO mix
    first; ties go to more jobs, then the earlier segment. If no segment meets every criterion,
    the one with the fewest failed criteria is returned with ``eligible = False``.

    Parameters
    ----------
    segments : pyarrow.Table
        A ``segments`` table.
    criteria : SelectionCriteria, optional

    Returns
    -------
    SegmentChoice

    Raises
    ------
    ConfigError
        If the table has no rows.
    """
    rules = criteria or SelectionCriteria()
    validate(segments, "segments")
    if segments.num_rows == 0:
        msg = "no segment to select from"
        raise ConfigError(msg)
    ranking: list[dict[str, Any]] = []
    for row in segments.to_pylist():
        ks, jsd = _finite(row["runtime_ks_to_log"]), _finite(row["vo_jsd_to_log"])
        distance = ks / rules.runtime_ks_scale + jsd / rules.vo_jsd_scale
        u = row["utilisation"]
        failed: list[str] = []
        if row["jobs"] < rules.min_jobs:
            failed.append(f"{row['jobs']} jobs < {rules.min_jobs}")
        if rules.require_stable_pool and not row["pool_stable"]:
            failed.append("pool not stable (or not checked)")
        if rules.utilisation is not None:
            low, high = rules.utilisation
            if u is None or not low <= u <= high:
                failed.append(f"U = {u} outside [{low}, {high}]")
        if rules.max_distance is not None and distance > rules.max_distance:
            failed.append(f"distance {distance:.2f} > {rules.max_distance}")
        ranking.append(
            {
                "segment_id": int(row["segment_id"]),
                "eligible": not failed,
                "failed": failed,
                "distance": distance,
                "runtime_ks_to_log": ks,
                "vo_jsd_to_log": jsd,
                "jobs": int(row["jobs"]),
                "utilisation": u,
                "interactive_fraction": row["interactive_fraction"],
                "vo_shares": json.loads(row["vo_shares"]),
            }
        )
    ranking.sort(key=lambda r: (len(r["failed"]), r["distance"], -r["jobs"], r["segment_id"]))
    best = ranking[0]
    eligible = sum(r["eligible"] for r in ranking)
    u_text = "undefined" if best["utilisation"] is None else f"{best['utilisation']:.3f}"
    top_vos = ", ".join(f"{k} {v:.0%}" for k, v in list(best["vo_shares"].items())[:4])
    lines = [
        f"segment {best['segment_id']} of {len(ranking)} "
        f"({eligible} meet every criterion): {best['jobs']} jobs, U = {u_text}, "
        f"interactive {best['interactive_fraction']:.1%}, VOs {top_vos}.",
        f"Closest to the whole log: runtime KS {best['runtime_ks_to_log']:.3f}, "
        f"VO JSD {best['vo_jsd_to_log']:.4f} (distance {best['distance']:.2f}).",
    ]
    if best["failed"]:
        lines.append(
            "No segment meets every criterion; this one fails: " + "; ".join(best["failed"])
        )
    if len(ranking) > 1:
        runner = ranking[1]
        lines.append(
            f"Runner-up: segment {runner['segment_id']} (distance {runner['distance']:.2f}"
            + (f"; fails {'; '.join(runner['failed'])}" if runner["failed"] else "")
            + ")."
        )
    return SegmentChoice(
        segment_id=best["segment_id"],
        eligible=not best["failed"],
        explanation=" ".join(lines),
        ranking=tuple(ranking),
    )
