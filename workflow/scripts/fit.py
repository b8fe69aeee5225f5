"""Snakemake adapter: fit a workload model to a trace (the work of ``gridtrace fit``)."""

import logging
from pathlib import Path

from gridtrace.models._fitcli import fit_command

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, force=True)
logging.captureWarnings(True)
logger = logging.getLogger("gridtrace.workflow")

out = Path(snakemake.output.model).parent
name = snakemake.wildcards.workload
lines = fit_command(
    snakemake.input.trace,
    out,
    arrivals=snakemake.params.arrivals,
    k_max=int(snakemake.params.k_max),
    seed=int(snakemake.params.seed),
    name=name,
)
for line in lines:
    logger.info("%s", line)
for written, wanted in (
    (out / f"{name}.json", snakemake.output.model),
    (out / f"{name}.fit-summary.json", snakemake.output.summary),
):
    if Path(written).resolve() != Path(wanted).resolve():
        raise RuntimeError(f"fit wrote {written}, the rule expects {wanted}")
