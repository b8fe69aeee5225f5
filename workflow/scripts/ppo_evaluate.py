"""Snakemake adapter: evaluate a saved PPO agent and the baselines at its training load."""

import logging
from pathlib import Path

from gridtrace._atomic import write_text
from gridtrace.sim.rl import evaluate_ppo, load_ppo
from gridtrace.sim.rl._ppo import summary_json

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, force=True)
logging.captureWarnings(True)

settings = snakemake.params.settings
run = load_ppo(Path(snakemake.input.policy).parent, device="cpu")
rows, summary = evaluate_ppo(run, sequences=settings["sequences"], seed=settings["eval_seed"])
write_text(Path(snakemake.output.evaluation), summary_json(rows, summary))
