"""Snakemake adapter: run one RL experiment (gridtrace.sim.rl.run_experiment) and write it."""

import logging
import time
from pathlib import Path

import pyarrow.parquet as pq

from gridtrace.sim.rl import ExperimentConfig, run_experiment

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, force=True)
logging.captureWarnings(True)

spec = snakemake.params.spec
settings = snakemake.params.settings
setting = snakemake.params.setting
workload = snakemake.wildcards.workload
config = ExperimentConfig(
    experiment=spec.get("experiment", "scheduling"),
    root_seed=settings.get("root_seed", 0),
    train_draws=settings.get("train_draws", 2),
    eval_seeds=settings.get("eval_seeds", 10),
    train_fraction=settings.get("train_fraction", 0.5),
    size=settings.get("size"),
    every_jobs=settings.get("every_jobs"),
    rewards=tuple(setting["rewards"]),
    published=spec.get("published"),
    warmup_jobs=snakemake.params.warmup_jobs,
    drain_jobs=snakemake.params.drain_jobs,
)
start = time.perf_counter()
source = workload if snakemake.params.preset else pq.read_table(snakemake.input.trace)
result = run_experiment(
    source,
    config,
    name=workload,
    vo_shares=setting["vo_shares"],
    targets=setting["targets"],
)
result.write(Path(snakemake.output.summary).parent)
logging.getLogger("rl").info(
    "%s: %d runs in %.1f s; %s",
    workload,
    result.runs.num_rows,
    time.perf_counter() - start,
    result.summary["verdict"],
)
