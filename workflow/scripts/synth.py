"""Snakemake adapter: draw one synthetic trace of a seed preset."""

import logging

import pyarrow.parquet as pq

from gridtrace.models import generate_preset_trace

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, force=True)
logging.captureWarnings(True)

trace = generate_preset_trace(
    snakemake.wildcards.preset, rng=int(snakemake.wildcards.seed), size=snakemake.params.size
)
pq.write_table(trace, snakemake.output.trace)
