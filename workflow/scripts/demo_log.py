"""Snakemake adapter: write the demo site's TORQUE accounting log."""

import logging

from gridtrace.demo import write_demo_site

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, force=True)
logging.captureWarnings(True)

write_demo_site(
    snakemake.output[0],
    n_jobs=int(snakemake.params.n_jobs),
    cores=int(snakemake.params.cores),
    seed=int(snakemake.params.seed),
    tz=snakemake.params.tz,
)
