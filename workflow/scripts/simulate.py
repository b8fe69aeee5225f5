"""Snakemake adapter: replay one trace through the simulator under one policy."""

import logging

import pyarrow.parquet as pq

from gridtrace.sim import simulate

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, force=True)
logging.captureWarnings(True)

result = simulate(
    pq.read_table(snakemake.input.trace),
    policy=snakemake.wildcards.policy,
    estimator=snakemake.params.estimator,
    rng=int(snakemake.wildcards.seed),
    vo_shares=snakemake.params.vo_shares,
    warmup_jobs=int(snakemake.params.warmup_jobs),
    drain_jobs=int(snakemake.params.drain_jobs),
)
result.write(snakemake.output.jobs, snakemake.output.summary)
