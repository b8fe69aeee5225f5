"""Snakemake adapter: the selected segment of a site's trace, as a workload of its own."""

import json
import logging
from pathlib import Path

from gridtrace._atomic import write_parquet
from gridtrace.schema import read_table, trace_metadata
from gridtrace.segment import segment_trace

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, force=True)
logging.captureWarnings(True)

trace = read_table(snakemake.input.trace, "trace")
choice = json.loads(Path(snakemake.input.summary).read_text())["choice"]
# replayed on the site's cores P, as the whole trace is; the segment's pool estimate stays in
# the provenance
workload = segment_trace(
    trace,
    read_table(snakemake.input.segments, "segments"),
    int(choice["segment_id"]),
    cores=int(trace_metadata(trace)["cores"]),
)
write_parquet(workload, snakemake.output.trace)
