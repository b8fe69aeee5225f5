# RL experiments (gridtrace.sim.rl.run_experiment): a preset (fresh training and evaluation draws)
# or a site workload (split by time) -> sim/<workload>/rl/{summary.json,runs.parquet}


rule rl_experiment:
    input:
        unpack(rl_input),
    output:
        summary="sim/{workload}/rl/summary.json",
        runs="sim/{workload}/rl/runs.parquet",
    log:
        "logs/rl/{workload}.log",
    wildcard_constraints:
        workload=_alternatives(RL_WORKLOADS),
    conda:
        "../envs/gridtrace.yaml"
    params:
        spec=lambda wildcards: RL_WORKLOADS[wildcards.workload],
        settings=RL_SETTINGS,
        vo_shares=workload_vo_shares,
        preset=lambda wildcards: wildcards.workload in PRESETS,
        warmup_jobs=config["warmup_jobs"],
        drain_jobs=config["drain_jobs"],
    message:
        "Running the RL experiment on {wildcards.workload}"
    script:
        "../scripts/rl.py"
