"""Snakemake adapter: the PPO (multi-resource) page and its entry for the index."""

import json
import logging
from pathlib import Path

from gridtrace._atomic import write_text
from gridtrace.report import render_ppo_report

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, force=True)
logging.captureWarnings(True)

configs = [json.loads(Path(p).read_text()) for p in snakemake.input.configs]
evaluations = [json.loads(Path(p).read_text()) for p in snakemake.input.evaluations]
entry = render_ppo_report(configs, evaluations, snakemake.output.html)
write_text(Path(snakemake.output.entry), json.dumps(entry, indent=2) + "\n")
