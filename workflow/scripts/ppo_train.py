"""Snakemake adapter: train PPO at one load (gridtrace.sim.rl.train_ppo) and save it."""

import logging
from pathlib import Path

from gridtrace.sim.rl import MultiResourceConfig, PPOConfig, save_ppo, train_ppo

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, force=True)
logging.captureWarnings(True)

settings = snakemake.params.settings
base = MultiResourceConfig(
    visible_slots=settings["visible_slots"], episode_steps=settings["episode_steps"]
)
load = base.workload.max_load if settings["load"] == "max" else float(settings["load"])
ppo_config = PPOConfig(
    n_envs=settings["envs"], n_steps=settings["steps"], total_timesteps=settings["timesteps"]
)
run = train_ppo(base.with_load(load), ppo_config, seed=settings["seed"])
save_ppo(run, Path(snakemake.output.policy).parent)
logging.getLogger("ppo").info(
    "load %.4g: %d steps in %.1f s", load, run.model.num_timesteps, run.train_seconds
)
