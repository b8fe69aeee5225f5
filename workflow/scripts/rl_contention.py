"""Snakemake adapter: one contention experiment (gridtrace.sim.rl.run_contention) on one regime."""

import logging
import time
from pathlib import Path

from gridtrace.errors import ConfigError
from gridtrace.schema import read_table, trace_metadata
from gridtrace.segment import select_partition, trace_pool
from gridtrace.sim.rl import ContentionConfig, contention_regime, run_contention

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, force=True)
logging.captureWarnings(True)
logger = logging.getLogger("gridtrace.workflow")

settings = dict(snakemake.params.settings)
trace = read_table(snakemake.input.trace, "trace")
jobs = read_table(snakemake.input.jobs, "jobs")
partition = settings.pop("partition", None)
if partition is not None:  # one site of a grid log, on its own pool
    jobs, trace = select_partition(jobs, trace, str(partition))
try:
    pool = trace_pool(jobs, trace, use_header=partition is None)
    cores, source, note = pool.cores, pool.source, pool.note
except ConfigError as exc:
    cores = int(trace_metadata(trace)["cores"])
    source, note = "trace metadata", f"no pool estimate for the span ({exc}); the trace's P"
regime_label = snakemake.wildcards.regime
if regime_label == "as-logged":
    load, how = None, "compress"
else:
    how, _, value = regime_label.partition("-")
    load = float(value)
regime = contention_regime(
    trace,
    load=load,
    how=how,
    pool_cores=cores,
    pool_source=source,
    pool_note=note,
    tolerance=float(settings.pop("tolerance", 0.02)),
)
tuples = {"fractions", "q_kinds", "rewards", "lambdas", "baselines"}
config = ContentionConfig(
    warmup_jobs=snakemake.params.warmup_jobs,
    drain_jobs=snakemake.params.drain_jobs,
    **{k: tuple(v) if k in tuples else v for k, v in settings.items()},
)
start = time.perf_counter()
result = run_contention(
    regime, config, name=snakemake.wildcards.workload, vo_shares=snakemake.params.vo_shares
)
result.write(Path(snakemake.output.summary).parent)
logger.info(
    "%s %s: %.1f s; %s",
    snakemake.wildcards.workload,
    regime_label,
    time.perf_counter() - start,
    result.summary["verdict"],
)
