"""Snakemake adapter: cut a site's trace into stable segments and pick the representative one."""

import json
import logging
from pathlib import Path

from gridtrace._atomic import write_parquet, write_text
from gridtrace.schema import read_table
from gridtrace.segment import SegmentParams, SelectionCriteria, segment, select_segment

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, force=True)
logging.captureWarnings(True)

min_jobs = int(snakemake.params.min_jobs)
band = snakemake.params.utilisation
result = segment(
    read_table(snakemake.input.trace, "trace"),
    jobs=read_table(snakemake.input.jobs, "jobs"),
    cores=snakemake.params.cores,
    params=SegmentParams(min_jobs=min_jobs, block_jobs=int(snakemake.params.block_jobs)),
)
choice = select_segment(
    result.segments,
    SelectionCriteria(min_jobs=min_jobs, utilisation=tuple(band) if band else None),
)
Path(snakemake.output.summary).unlink(missing_ok=True)  # the summary comes last
write_parquet(result.segments, snakemake.output.segments)
summary = {**result.info(), "choice": choice.to_dict()}
write_text(snakemake.output.summary, json.dumps(summary, indent=2) + "\n")
logging.getLogger(__name__).info("%s", choice.explanation)
