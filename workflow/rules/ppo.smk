# PPO on DeepRM's multi-resource setup (gridtrace.sim.rl: train_ppo, evaluate_ppo; issue 15):
# one agent per configured load -> sim/ppo-deeprm/load-<pct>/{policy.zip,config.json}, evaluated
# with the baselines on fresh sequences -> evaluation.json; every load on one page,
# reports/ppo-deeprm/index.html. Settings under `ppo: deeprm:` (config/ppo-full.yaml: the
# paper's loads and a full budget). Target: `snakemake ppo`.
#
# RLScheduler's PPO setup (gridtrace.sim.rl: train_rlsched_ppo, evaluate_rlsched_ppo; issue 15
# item 3), when `ppo: rlscheduler:` is configured (SWF traces: the default config trains a tiny
# budget on the demo site's synthetic trace, traces/demo-synth.swf, which the pipeline writes;
# config/ppo-full.yaml trains on Lublin-1 and Lublin-2 instead):
# one agent per (training trace, backfilling) -> sim/ppo-rlscheduler/<trace>-<bf|nobf>/
# {policy.zip,config.json}, evaluated on every configured trace (generalisation) on
# RLScheduler's windows -> evaluation.json beside it; the page is
# reports/ppo-rlscheduler/index.html. The rules call the CLI (`gridtrace ppo ...`) with the
# Python that runs snakemake.

import os
import sys

PPO_RLSCHED = dict((config.get("ppo") or {}).get("rlscheduler") or {})
PPO_RLSCHED_TRACES = {str(k): str(v) for k, v in (PPO_RLSCHED.get("traces") or {}).items()}
PPO_RLSCHED_AGENTS = [
    f"{trace}-{'bf' if backfill else 'nobf'}"
    for trace in PPO_RLSCHED.get("train", list(PPO_RLSCHED_TRACES))
    for backfill in PPO_RLSCHED.get("backfill", [False])
]
PPO_RLSCHED_TRAIN = " ".join(
    f"--{k.replace('_', '-')} {v}"
    for k, v in {
        "timesteps": PPO_RLSCHED.get("timesteps", 2560),
        "trajectories": PPO_RLSCHED.get("trajectories", 10),
        "sequence": PPO_RLSCHED.get("sequence", 256),
        "epochs": PPO_RLSCHED.get("epochs", 10),
        "batch_size": PPO_RLSCHED.get("batch_size", 256),
        "seed": PPO_RLSCHED.get("seed", 0),
    }.items()
    if v is not None
)
PPO_RLSCHED_EVAL = " ".join(
    [f"--trace {path}" for path in PPO_RLSCHED_TRACES.values()]
    + [f"--windows {PPO_RLSCHED.get('windows', 10)}", f"--window {PPO_RLSCHED.get('window', 1024)}"]
)
PPO_PYTHON = sys.executable
if PPO_RLSCHED_AGENTS:
    PPO_REPORTS.append("reports/ppo-rlscheduler/index.html")



rule ppo_train:
    output:
        policy="sim/ppo-deeprm/load-{ppo_load}/policy.zip",
        config="sim/ppo-deeprm/load-{ppo_load}/config.json",
    log:
        "logs/ppo/deeprm-{ppo_load}-train.log",
    wildcard_constraints:
        ppo_load=_alternatives(PPO_LOADS),
    conda:
        "../envs/gridtrace.yaml"
    params:
        settings=ppo_settings,
    message:
        "Training PPO on the multi-resource setup at load {wildcards.ppo_load}"
    script:
        "../scripts/ppo_train.py"


rule ppo_evaluate:
    input:
        policy="sim/ppo-deeprm/load-{ppo_load}/policy.zip",
        config="sim/ppo-deeprm/load-{ppo_load}/config.json",
    output:
        evaluation="sim/ppo-deeprm/load-{ppo_load}/evaluation.json",
    log:
        "logs/ppo/deeprm-{ppo_load}-evaluate.log",
    wildcard_constraints:
        ppo_load=_alternatives(PPO_LOADS),
    conda:
        "../envs/gridtrace.yaml"
    params:
        settings=ppo_settings,
    message:
        "Evaluating PPO and the baselines at load {wildcards.ppo_load}"
    script:
        "../scripts/ppo_evaluate.py"


rule ppo_report:
    input:
        unpack(ppo_report_input),
    output:
        html="reports/ppo-deeprm/index.html",
        entry="reports/ppo-deeprm/entry.json",
    log:
        "logs/report/ppo-deeprm.log",
    conda:
        "../envs/gridtrace.yaml"
    message:
        "Rendering the PPO (multi-resource) report"
    script:
        "../scripts/ppo_report.py"


rule ppo:
    input:
        PPO_REPORTS,


rule ppo_rlscheduler_train:
    input:
        # a trace the pipeline writes (traces/demo-synth.swf in the default run) is built first
        lambda w: pipeline_inputs(PPO_RLSCHED_TRACES[w.rl_trace]),
    output:
        policy="sim/ppo-rlscheduler/{rl_trace}-{rl_bf}/policy.zip",
        config="sim/ppo-rlscheduler/{rl_trace}-{rl_bf}/config.json",
    log:
        "logs/ppo/rlscheduler-{rl_trace}-{rl_bf}-train.log",
    wildcard_constraints:
        rl_trace=_alternatives(PPO_RLSCHED_TRACES),
        rl_bf="bf|nobf",
    conda:
        "../envs/gridtrace.yaml"
    params:
        python=PPO_PYTHON,
        trace=lambda w: PPO_RLSCHED_TRACES[w.rl_trace],
        backfill=lambda w: "--backfill" if w.rl_bf == "bf" else "",
        settings=PPO_RLSCHED_TRAIN,
    message:
        "Training PPO on RLScheduler's setup: {wildcards.rl_trace}, {wildcards.rl_bf}"
    shell:
        "{params.python} -m gridtrace ppo train --setup rlscheduler --trace {params.trace} "
        "{params.backfill} {params.settings} -o $(dirname {output.policy}) > {log} 2>&1"


rule ppo_rlscheduler_evaluate:
    input:
        traces=pipeline_inputs(*PPO_RLSCHED_TRACES.values()),
        policy="sim/ppo-rlscheduler/{rl_agent}/policy.zip",
        config="sim/ppo-rlscheduler/{rl_agent}/config.json",
    output:
        evaluation="sim/ppo-rlscheduler/{rl_agent}/evaluation.json",
    log:
        "logs/ppo/rlscheduler-{rl_agent}-evaluate.log",
    wildcard_constraints:
        rl_agent=_alternatives(PPO_RLSCHED_AGENTS),
    conda:
        "../envs/gridtrace.yaml"
    params:
        python=PPO_PYTHON,
        settings=PPO_RLSCHED_EVAL,
    message:
        "Evaluating PPO (RLScheduler's setup, {wildcards.rl_agent}) beside the heuristics"
    shell:
        "{params.python} -m gridtrace ppo evaluate $(dirname {input.policy}) --setup rlscheduler "
        "{params.settings} -o $(dirname {output.evaluation}) > {log} 2>&1"


rule ppo_rlscheduler_report:
    input:
        configs=expand("sim/ppo-rlscheduler/{agent}/config.json", agent=PPO_RLSCHED_AGENTS),
        evaluations=expand(
            "sim/ppo-rlscheduler/{agent}/evaluation.json", agent=PPO_RLSCHED_AGENTS
        ),
    output:
        html="reports/ppo-rlscheduler/index.html",
        entry="reports/ppo-rlscheduler/entry.json",
    log:
        "logs/report/ppo-rlscheduler.log",
    conda:
        "../envs/gridtrace.yaml"
    params:
        python=PPO_PYTHON,
        agents=lambda w, input: " ".join(os.path.dirname(p) for p in input.configs),
    message:
        "Rendering the PPO (RLScheduler setup) report"
    shell:
        "{params.python} -m gridtrace ppo report {params.agents} -o {output.html} "
        "--entry {output.entry} > {log} 2>&1"
