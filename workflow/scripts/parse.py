"""Snakemake adapter: parse a site's accounting logs and map its VOs."""

import json
import logging
from pathlib import Path

import pyarrow.parquet as pq

from gridtrace.logs import VOMapping, parse_logs

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, force=True)
logging.captureWarnings(True)

spec = snakemake.params.spec
result = parse_logs(
    snakemake.input[0],
    format=spec.get("format"),
    site=snakemake.wildcards.site,
    tz=spec.get("tz"),
    errors="warn",
    workers=1 if spec.get("demo") else max(1, snakemake.threads),
)
jobs = VOMapping.from_dict(spec.get("vo_map") or {}).apply(result.jobs)
pq.write_table(result.records, snakemake.output.records)
pq.write_table(jobs, snakemake.output.jobs)
pq.write_table(result.quarantine, snakemake.output.quarantine)
Path(snakemake.output.summary).write_text(json.dumps(result.summary(), indent=2) + "\n")
