"""Snakemake adapter: the index page of every report, then the manifest reports/all."""

import json
import logging
from pathlib import Path

from gridtrace.report import render_index, write_manifest

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, force=True)
logging.captureWarnings(True)

entries = [json.loads(Path(path).read_text()) for path in snakemake.input.figures]
contention = [json.loads(Path(path).read_text()) for path in snakemake.input.contention]
render_index(entries, snakemake.output.index, contention)
write_manifest(snakemake.input.html, snakemake.output.manifest)
