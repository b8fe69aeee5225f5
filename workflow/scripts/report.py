"""Snakemake adapter: render one workload's report from its trace and simulation runs."""

import json
import logging
from pathlib import Path

import pyarrow.parquet as pq

from gridtrace._atomic import write_text
from gridtrace.report import (
    fitted_model_section,
    preset_model_section,
    render_workload_report,
    rl_section,
)
from gridtrace.report._contention import RUN_COLUMNS
from gridtrace.sim import read_result

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, force=True)
logging.captureWarnings(True)

results = {}
for run in snakemake.input.runs:
    policy = Path(run).parent.name
    summary = str(run).removesuffix(".parquet") + ".summary.json"
    results.setdefault(policy, []).append(read_result(run, summary))
segments = segmentation = None
# snakemake.input is a list with names: `in` alone would test the file paths, not the names
if "segments" in snakemake.input.keys():  # noqa: SIM118
    segments = pq.read_table(snakemake.input.segments)
    segmentation = json.loads(Path(snakemake.input.segmentation).read_text())
trace = pq.read_table(snakemake.input.trace)
model = None
if "fit_summary" in snakemake.input.keys():  # noqa: SIM118
    model = fitted_model_section(
        json.loads(Path(snakemake.input.fit_summary).read_text()),
        trace=trace,
        synthetic=pq.read_table(snakemake.input.synthetic),
    )
elif snakemake.params.preset is not None:
    model = preset_model_section(snakemake.params.preset)
rl = None
if "rl" in snakemake.input.keys():  # noqa: SIM118
    rl = rl_section(json.loads(Path(snakemake.input.rl).read_text()))
rl_targets = []
if "rl_targets" in snakemake.input.keys():  # noqa: SIM118
    paths = snakemake.input.rl_targets
    for path in [paths] if isinstance(paths, str) else paths:
        rl_targets.append(rl_section(json.loads(Path(path).read_text())))
contention = []
if "contention" in snakemake.input.keys():  # noqa: SIM118
    paths = snakemake.input.contention
    runs_paths = snakemake.input.contention_runs
    paths = [paths] if isinstance(paths, str) else list(paths)
    runs_paths = [runs_paths] if isinstance(runs_paths, str) else list(runs_paths)
    for path, runs_path in zip(paths, runs_paths, strict=True):
        summary = json.loads(Path(path).read_text())
        # the per-run rows only, and only the columns the section shows (the files are large)
        present = set(pq.read_schema(runs_path).names)
        columns = [c for c in RUN_COLUMNS if c in present]
        summary["runs"] = pq.read_table(runs_path, columns=columns).to_pylist()
        contention.append(summary)
figures = render_workload_report(
    snakemake.wildcards.workload,
    trace=trace,
    results=results,
    out_path=snakemake.output.html,
    tz=snakemake.params.tz,
    segments=segments,
    segmentation=segmentation,
    model=model,
    rl=rl,
    rl_targets=rl_targets,
    contention=contention,
)
write_text(snakemake.output.figures, json.dumps(figures, indent=2, default=str) + "\n")
