"""Snakemake adapter: build the trace of a parsed site."""

import logging

import pyarrow.parquet as pq

from gridtrace._atomic import write_parquet
from gridtrace.logs import build_trace

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, force=True)
logging.captureWarnings(True)

trace = build_trace(
    pq.read_table(snakemake.input.jobs),
    tau_s=float(snakemake.params.tau_s),
    cores=snakemake.params.cores,
    records=pq.read_table(snakemake.input.records, columns=["attrs"]),
    provenance={"jobs_table": snakemake.input.jobs},
    tz=snakemake.params.tz,
)
write_parquet(trace, snakemake.output.trace)
