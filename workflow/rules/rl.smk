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
        spec=rl_spec,
        settings=RL_SETTINGS,
        vo_shares=workload_vo_shares,
        preset=rl_is_preset,
        warmup_jobs=config["warmup_jobs"],
        drain_jobs=config["drain_jobs"],
    message:
        "Running the RL experiment on {wildcards.workload}"
    script:
        "../scripts/rl.py"
