"""The demo site: a grid site whose TORQUE accounting log gridtrace writes itself.

The log is made the way a real one comes about: a synthetic grid workload (several VOs with pool
accounts, multi-core pilots, the ``dteam``/``ops`` monitoring probes, jobs deleted while queued,
failures and walltime kills) is scheduled by the strict-FIFO simulator on the site's cores,
placed on worker nodes, and written with the TORQUE writer in the site's local time. A few
damaged lines are planted, as real logs have them: two unreadable lines; a crash's leftovers (the
cut-off start of a record, a run of NULs, then an intact record on the same line); a queue name in
Latin-1 and one with a terminal control character (both on queue records of jobs that never got
further, which parse as PENDING); and the last line of the log, the end record of a real job, cut
by a crash before its ``end=`` and without its line end. Parsing the log back is then the pipeline's
first stage, so parse → trace → simulate → report runs with no outside data.
"""

from __future__ import annotations

import datetime as dt
import heapq
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from gridtrace._atomic import write_bytes
from gridtrace._log import library_logger
from gridtrace.errors import ConfigError
from gridtrace.logs._io import StrPath
from gridtrace.logs._torque_writer import write_torque
from gridtrace.random import spawn_generators
from gridtrace.schema import conform, with_trace_metadata

__all__ = ["DEMO_VOS", "DemoSite", "VOProfile", "write_demo_site"]

logger = library_logger(__name__)


@dataclass(frozen=True)
class VOProfile:
    """How one VO of the demo site behaves.

    Attributes
    ----------
    name, group, user_prefix, queue : str
        The VO, its unix group, its pool-account prefix and its queue.
    share : float
        Fraction of the site's (non-monitoring) jobs.
    interactive_fraction : float
        Fraction of its jobs that run under τ = 900 s.
    short_mean_s, long_median_s : float
        Mean runtime of short jobs (exponential) and median of long ones (lognormal, σ = 0.8).
    multicore_fraction : float
        Fraction of its jobs that are 8-core pilots.
    n_users : int
        Pool accounts the VO's jobs are spread over.
    """

    name: str
    group: str
    user_prefix: str
    queue: str
    share: float
    interactive_fraction: float
    short_mean_s: float
    long_median_s: float
    multicore_fraction: float
    n_users: int


DEMO_VOS = (
    VOProfile("atlas", "prdatl", "patl", "atlas", 0.40, 0.25, 240.0, 7200.0, 0.10, 12),
    VOProfile("cms", "cmsprd", "pcms", "cms", 0.30, 0.35, 300.0, 5400.0, 0.05, 8),
    VOProfile("lhcb", "lhcbprd", "plhcb", "lhcb", 0.20, 0.30, 180.0, 9000.0, 0.0, 6),
    VOProfile("biomed", "biomed", "biome", "short", 0.10, 0.70, 120.0, 3600.0, 0.0, 20),
)
_PROBES = (("dteam", "dteam", "dteam"), ("ops", "ops", "ops"))
_CORES_PER_NODE = 8
_WALLTIME_S = 48 * 3600
_ORIGIN = dt.datetime(2024, 3, 25, tzinfo=dt.UTC)  # a Monday, a week before the DST change


@dataclass(frozen=True)
class DemoSite:
    """What :func:`write_demo_site` wrote.

    Attributes
    ----------
    files : list of Path
        The daily accounting files.
    jobs : pyarrow.Table
        The ``jobs`` table the files were written from (the truth a parse is checked against).
    planted_bad_lines : int
        Lines planted that a reader must quarantine.
    truncated_job : str
        ``job_id_raw`` of the job whose end record, the log's last line, was cut before its
        ``end=`` (its truth in ``jobs`` is the job as it ran).
    planted_pending : tuple of str
        ``job_id_raw`` of the planted queue records of jobs that never got further.
    """

    files: list[Path]
    jobs: pa.Table
    planted_bad_lines: int
    truncated_job: str
    planted_pending: tuple[str, ...]


def write_demo_site(
    out_dir: StrPath,
    *,
    n_jobs: int = 4000,
    cores: int = 80,
    seed: int = 7,
    tz: str = "Europe/Paris",
    load: float = 0.85,
) -> DemoSite:
    """Write the demo site's TORQUE accounting log, one file per local day.

    Parameters
    ----------
    out_dir : path
        Folder for the daily files.
    n_jobs : int, default 4000
        Jobs submitted by the VOs (monitoring probes and deleted jobs come on top).
    cores : int, default 80
        The site's cores, on worker nodes of 8 cores.
    seed : int, default 7
        Root seed; the same seed writes the same files.
    tz : str, default "Europe/Paris"
        The site's zone: record stamps are local time.
    load : float, default 0.85
        Offered load ρ of the VO jobs on the site's cores.

    Returns
    -------
    DemoSite
    """
    if cores % _CORES_PER_NODE:
        msg = f"the demo site has nodes of {_CORES_PER_NODE} cores: cores must be a multiple of it"
        raise ConfigError(msg)
    if not 0 < load < 1:
        msg = f"load must be in (0, 1), not {load}"
        raise ConfigError(msg)
    rng_vo, rng_run, rng_arrival, rng_fate, rng_probe = spawn_generators(seed, 5)
    shares = np.array([vo.share for vo in DEMO_VOS])
    vo_index = rng_vo.choice(len(DEMO_VOS), size=n_jobs, p=shares / shares.sum())
    users = np.array(
        [
            f"{DEMO_VOS[v].user_prefix}{rng_vo.integers(1, DEMO_VOS[v].n_users + 1):03d}"
            for v in vo_index
        ]
    )
    run_s, job_cores = _runtimes_and_cores(vo_index, rng_run)
    # fates of the VO jobs: a few are deleted while queued, some fail, some hit the walltime
    fate = rng_fate.choice(4, size=n_jobs, p=[0.93, 0.02, 0.04, 0.01])
    deleted = fate == 1
    exit_code = np.where(fate == 2, 1, 0)
    timeout = fate == 3
    run_s = np.where(timeout, _WALLTIME_S, run_s)
    mean_work = float(np.mean((run_s * job_cores)[~deleted]))
    arrival_rate = load * cores / mean_work
    submit_s = np.cumsum(rng_arrival.exponential(1.0 / arrival_rate, size=n_jobs))
    span = float(submit_s[-1])
    probe_s = np.arange(600.0, span, 1800.0)
    probe_vo = np.arange(len(probe_s)) % len(_PROBES)
    probe_run = rng_probe.uniform(20.0, 120.0, size=len(probe_s)).round()

    jobs = _schedule_and_place(
        submit_s=np.concatenate([submit_s[~deleted], probe_s]),
        run_s=np.concatenate([run_s[~deleted], probe_run]),
        cores=np.concatenate([job_cores[~deleted], np.ones(len(probe_s), dtype=np.int64)]),
        site_cores=cores,
    )
    n_run = int((~deleted).sum())
    rows = []
    exec_hosts: list[str | None] = []
    ran_index = np.flatnonzero(~deleted)
    for k, (start, slots) in enumerate(jobs):
        hosts = sorted({host for host, _ in slots})
        exec_hosts.append(_exec_host(slots))
        if k < n_run:
            i = int(ran_index[k])
            vo = DEMO_VOS[int(vo_index[i])]
            group, user, queue = vo.group, str(users[i]), vo.queue
            submitted, runtime, ncores = float(submit_s[i]), float(run_s[i]), int(job_cores[i])
            code = 271 if timeout[i] else int(exit_code[i])
        else:
            p = k - n_run
            group, user, queue = _PROBES[int(probe_vo[p])]
            user = f"{user}001"
            submitted, runtime, ncores, code = float(probe_s[p]), float(probe_run[p]), 1, 0
        rows.append(_job_row(k, submitted, start, runtime, ncores, hosts, group, user, queue, code))
    for k, gone in enumerate(np.flatnonzero(deleted).tolist()):
        submitted = float(submit_s[gone])
        vo = DEMO_VOS[int(vo_index[gone])]
        rows.append(_deleted_row(k, submitted, submitted + 300.0, vo, str(users[gone])))
        exec_hosts.append(None)
    table = conform(pa.Table.from_pylist(rows), "jobs")
    bad_lines = [
        b"this line is not an accounting record",
        b"13/45/2024 25:61:00;E;99999999.demo-ce;user=nobody",
    ]
    # readable but damaged, each flagged: a crash's cut record, NULs, then an intact record; a
    # queue name with a Latin-1 byte; one with a terminal bell
    fragment = _stamp_line(span, tz, b"E", b"99999991.demo-ce", b"user=patl001 group=prdatl ct")
    pending = ("99999990.demo-ce", "99999992.demo-ce", "99999993.demo-ce")
    damaged = [
        fragment
        + b"\x00" * 1024
        + _stamp_line(submit_s[0], tz, b"Q", pending[0].encode(), b"queue=atlas"),
        _stamp_line(submit_s[0], tz, b"Q", pending[1].encode(), b"queue=atl\xe9"),
        _stamp_line(submit_s[0], tz, b"Q", pending[2].encode(), b"queue=atlas\x07"),
    ]
    files = write_torque(table, out_dir, tz=tz, exec_host=exec_hosts)
    first, last = files[0], files[-1]
    write_bytes(first, first.read_bytes() + b"\n".join([*bad_lines, *damaged]) + b"\n")
    truncated_job = _cut_last_end_record(last)
    logger.info("demo site: %d job rows in %d files", table.num_rows, len(files))
    return DemoSite(
        files=files,
        jobs=table,
        planted_bad_lines=len(bad_lines),
        truncated_job=truncated_job,
        planted_pending=pending,
    )


def _cut_last_end_record(path: Path) -> str:
    """Cut the file's last E record before ``end=`` (a crash), as the file's last line.

    The record is moved to the end of the file first if other records follow it (which changes
    nothing for their jobs); returns its job id.
    """
    lines = path.read_bytes().split(b"\n")[:-1]
    at = max(i for i, line in enumerate(lines) if line[19:22] == b";E;")
    record = lines.pop(at)
    write_bytes(path, b"".join(line + b"\n" for line in lines) + record.split(b" end=")[0])
    return record.split(b";")[2].decode()


def _runtimes_and_cores(
    vo_index: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    n = len(vo_index)
    short_mean = np.array([v.short_mean_s for v in DEMO_VOS])[vo_index]
    long_median = np.array([v.long_median_s for v in DEMO_VOS])[vo_index]
    interactive = rng.random(n) < np.array([v.interactive_fraction for v in DEMO_VOS])[vo_index]
    short = np.minimum(rng.exponential(short_mean), 899.0)
    long_ = np.clip(long_median * np.exp(0.8 * rng.standard_normal(n)), 901.0, _WALLTIME_S - 1)
    run = np.where(interactive, short, long_).round().clip(1, None)
    multicore = rng.random(n) < np.array([v.multicore_fraction for v in DEMO_VOS])[vo_index]
    return run, np.where(multicore, _CORES_PER_NODE, 1).astype(np.int64)


def _schedule_and_place(
    *, submit_s: np.ndarray, run_s: np.ndarray, cores: np.ndarray, site_cores: int
) -> list[tuple[float, list[tuple[str, int]]]]:
    """Strict FIFO on the site's cores, then each job placed on free slots of worker nodes."""
    from gridtrace.sim import simulate

    order = np.argsort(submit_s, kind="stable")
    n = len(order)
    trace = pa.table(
        {
            "job_id": pa.array(np.arange(n, dtype=np.int64)),
            "submit_s": pa.array(submit_s[order].astype(float)),
            "run_s": pa.array(run_s[order].astype(float)),
            "cores": pa.array(cores[order].astype(np.int32)),
            "interactive": pa.array(run_s[order] <= 900.0),
        }
    )
    trace = with_trace_metadata(
        conform(trace, "trace"),
        origin=_ORIGIN.isoformat(),
        site="demo",
        cores=site_cores,
        tau_s=900.0,
        provenance={"generator": "gridtrace.demo"},
    )
    result = simulate(trace, cores=site_cores, policy="fifo", warmup_jobs=0, drain_jobs=0)
    start_by_id = dict(
        zip(
            result.jobs.column("job_id").to_pylist(),
            result.jobs.column("start_s").to_pylist(),
            strict=True,
        )
    )
    starts = np.empty(n)
    starts[order] = [start_by_id[j] for j in range(n)]
    # place jobs on slots in start order; slots free up as jobs end (ends before starts)
    free = [
        (f"wn{node + 1:02d}", slot)
        for node in range(site_cores // _CORES_PER_NODE)
        for slot in range(_CORES_PER_NODE)
    ]
    free_set = set(free)
    ending: list[tuple[float, int, list[tuple[str, int]]]] = []
    placed: list[list[tuple[str, int]]] = [[] for _ in range(n)]
    for j in np.argsort(starts, kind="stable"):
        now = starts[j]
        while ending and ending[0][0] <= now:
            for slot in heapq.heappop(ending)[2]:
                free_set.add(slot)
        taken = _take_slots(free_set, int(cores[j]))
        placed[j] = taken
        heapq.heappush(ending, (now + float(run_s[j]), int(j), taken))
    return [(float(starts[j]), placed[j]) for j in range(n)]


def _exec_host(slots: list[tuple[str, int]]) -> str:
    """Slots as TORQUE >= 5 logs them: ``host/0-3,6+host2/1``."""
    by_host: dict[str, list[int]] = {}
    for host, slot in sorted(slots):
        by_host.setdefault(host, []).append(slot)
    parts = []
    for host, indices in by_host.items():
        runs: list[list[int]] = []
        for index in indices:
            if runs and index == runs[-1][-1] + 1:
                runs[-1].append(index)
            else:
                runs.append([index])
        text = ",".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else f"{r[0]}" for r in runs)
        parts.append(f"{host}/{text}")
    return "+".join(parts)


def _take_slots(free: set[tuple[str, int]], count: int) -> list[tuple[str, int]]:
    # multi-core pilots ask for whole nodes' worth on one node, as ppn=8 requests do
    by_host: dict[str, list[int]] = {}
    for host, slot in free:
        by_host.setdefault(host, []).append(slot)
    for host in sorted(by_host):
        if len(by_host[host]) >= count:
            chosen = [(host, s) for s in sorted(by_host[host])[:count]]
            free.difference_update(chosen)
            return chosen
    chosen = sorted(free)[:count]
    free.difference_update(chosen)
    return chosen


def _utc(seconds: float) -> dt.datetime:
    return _ORIGIN + dt.timedelta(seconds=round(seconds))


def _job_row(
    k: int,
    submit: float,
    start: float,
    run: float,
    cores: int,
    hosts: list[str],
    group: str,
    user: str,
    queue: str,
    exit_code: int,
) -> dict[str, object]:
    submitted, started = _utc(submit), _utc(start)
    ended = started + dt.timedelta(seconds=round(run))
    state = "COMPLETED" if exit_code == 0 else ("TIMEOUT" if exit_code == 271 else "FAILED")
    return {
        "site": "demo",
        "source_format": "torque",
        "job_key": f"demo:{1000 + k}",
        "job_id_raw": f"{1000 + k}.demo-ce",
        "attempt": 0,
        "n_attempts": 1,
        "user": user,
        "group": group,
        "queue": queue,
        "job_name": f"{queue}_{1000 + k}",
        "submit_time": submitted,
        "queue_time": submitted,
        "eligible_time": submitted,
        "start_time": started,
        "end_time": ended,
        "walltime_req_s": _WALLTIME_S,
        "walltime_used_s": round(run),
        "cpu_time_s": float(round(run * cores * 0.9)),
        # single-core jobs ask for one node; pilots ask for `procs`, cores anywhere
        "nodes_req": 1 if cores == 1 else None,
        "cores_req": cores,
        "nodes_alloc": len(hosts),
        "cores_alloc": cores,
        "exec_hosts": hosts,
        "mem_req_bytes": 2 * 1024**3 * cores,
        "mem_used_bytes": 512 * 1024**2 * cores,
        "exit_code": exit_code,
        "state": state,
        "end_record_type": "E",
        "src_file": "demo",
        "src_line": 0,
        "flags": [],
    }


def _deleted_row(
    k: int, submit: float, deleted_at: float, vo: VOProfile, user: str
) -> dict[str, object]:
    submitted = _utc(submit)
    return {
        "site": "demo",
        "source_format": "torque",
        "job_key": f"demo:{900000 + k}",
        "job_id_raw": f"{900000 + k}.demo-ce",
        "attempt": 0,
        "n_attempts": 1,
        "user": user,
        "group": vo.group,
        "queue": vo.queue,
        "job_name": f"{vo.queue}_{900000 + k}",
        "submit_time": submitted,
        "queue_time": submitted,
        "eligible_time": submitted,
        "end_time": _utc(deleted_at),
        "walltime_req_s": _WALLTIME_S,
        "cores_req": 1,
        "nodes_req": 1,
        "exit_code": 271,
        "state": "DELETED",
        "end_record_type": "E",
        "src_file": "demo",
        "src_line": 0,
        "flags": [],
    }


def _stamp_line(seconds: float, tz: str, record_type: bytes, job_id: bytes, msg: bytes) -> bytes:
    from zoneinfo import ZoneInfo

    local = _utc(seconds).astimezone(ZoneInfo(tz)).strftime("%m/%d/%Y %H:%M:%S").encode()
    return b";".join([local, record_type, job_id, msg])
