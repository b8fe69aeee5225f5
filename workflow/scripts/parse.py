"""Snakemake adapter: parse a site's accounting logs and map its VOs.

The tables are written first and the summary last, each through a temporary file (so a kill
leaves no half file, and a summary present means its tables are complete). A file that gives
no record (a wrong `format:`, a file that is not a log) fails the job, naming the file.
"""

import json
import logging
from pathlib import Path

from gridtrace._atomic import write_parquet, write_text
from gridtrace.errors import ConfigError
from gridtrace.logs import VOMapping, parse_logs

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, force=True)
logging.captureWarnings(True)
logger = logging.getLogger("gridtrace.workflow")

spec = snakemake.params.spec
result = parse_logs(
    snakemake.input[0],
    format=spec.get("format"),
    site=snakemake.wildcards.site,
    tz=spec.get("tz"),
    errors="warn",
    workers=1 if spec.get("demo") else max(1, snakemake.threads),
)
summary = result.summary()
for entry in summary["skipped"]:
    logger.info("skipped %s: %s", entry["path"], entry["why"])
if summary["files_failed"]:
    failed = "; ".join(f"{e['file']}: {e['why']}" for e in summary["files_failed"])
    raise ConfigError(f"site {snakemake.wildcards.site}: file(s) gave no record: {failed}")
jobs = VOMapping.from_dict(spec.get("vo_map") or {}).apply(result.jobs)
Path(snakemake.output.summary).unlink(missing_ok=True)
write_parquet(result.records, snakemake.output.records)
write_parquet(jobs, snakemake.output.jobs)
write_parquet(result.quarantine, snakemake.output.quarantine)
write_text(snakemake.output.summary, json.dumps(summary, indent=2) + "\n")
