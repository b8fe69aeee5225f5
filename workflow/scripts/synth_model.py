"""Snakemake adapter: draw a synthetic trace (Parquet and SWF) from a fitted workload model."""

import json
import logging
from pathlib import Path

from gridtrace._atomic import atomic_path, write_parquet
from gridtrace.models import WorkloadModel, write_trace_swf

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, force=True)
logging.captureWarnings(True)
logger = logging.getLogger("gridtrace.workflow")

data = json.loads(Path(snakemake.input.model).read_text())
model = WorkloadModel.from_dict(data)
size = int(data["fitted"]["n_fit_jobs"])  # as many jobs as the fitted trace
seed = int(snakemake.params.seed)
trace = model.sample(size=size, rng=seed, provenance={"model_file": str(snakemake.input.model)})
write_parquet(trace, snakemake.output.trace)
with atomic_path(snakemake.output.swf) as temporary:
    write_trace_swf(trace, temporary)
logger.info("drew %d jobs from %s with seed %d", trace.num_rows, snakemake.input.model, seed)
