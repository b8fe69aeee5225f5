# PPO on DeepRM's multi-resource setup (gridtrace.sim.rl: train_ppo, evaluate_ppo; issue 15):
# one agent per configured load -> sim/ppo-deeprm/load-<pct>/{policy.zip,config.json}, evaluated
# with the baselines on fresh sequences -> evaluation.json; every load on one page,
# reports/ppo-deeprm/index.html. Settings under `ppo: deeprm:` (config/ppo-full.yaml: the
# paper's loads and a full budget). Target: `snakemake ppo`.


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
