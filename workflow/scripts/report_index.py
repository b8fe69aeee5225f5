"""Snakemake adapter: the index page of every report, then the manifest reports/all."""

import json
import logging
from pathlib import Path

from gridtrace.report import render_index, write_manifest

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, force=True)
logging.captureWarnings(True)

entries = [json.loads(Path(path).read_text()) for path in snakemake.input.figures]
contention = [json.loads(Path(path).read_text()) for path in snakemake.input.contention]
pages = [json.loads(Path(path).read_text()) for path in snakemake.input.pages]
render_index(entries, snakemake.output.index, contention, pages)
html = [
    *snakemake.input.html,
    *(p.replace("entry.json", "index.html") for p in snakemake.input.pages),
]
write_manifest(html, snakemake.output.manifest)
