"""Snakemake adapter: draw one synthetic trace of a seed preset."""

import logging

from gridtrace._atomic import write_parquet
from gridtrace.models import generate_preset_trace

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, force=True)
logging.captureWarnings(True)

trace = generate_preset_trace(
    snakemake.wildcards.preset, rng=int(snakemake.wildcards.seed), size=snakemake.params.size
)
write_parquet(trace, snakemake.output.trace)
