"""Snakemake adapter: draw a synthetic trace (Parquet and SWF) from a fitted workload model."""

import json
import logging
from pathlib import Path

import pyarrow.parquet as pq

from gridtrace.models import WorkloadModel, write_trace_swf

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, force=True)
logging.captureWarnings(True)
logger = logging.getLogger("gridtrace.workflow")

data = json.loads(Path(snakemake.input.model).read_text())
model = WorkloadModel.from_dict(data)
size = int(data["fitted"]["n_fit_jobs"])  # as many jobs as the fitted trace
seed = int(snakemake.params.seed)
trace = model.sample(size=size, rng=seed, provenance={"model_file": str(snakemake.input.model)})
pq.write_table(trace, snakemake.output.trace)
write_trace_swf(trace, snakemake.output.swf)
logger.info("drew %d jobs from %s with seed %d", trace.num_rows, snakemake.input.model, seed)
