# RL experiments (gridtrace.sim.rl.run_experiment): a preset (fresh training and evaluation draws)
# or a site workload (split by time) -> sim/<workload>/rl/{summary.json,runs.parquet} on the
# workload's own VO targets, and sim/<workload>/rl-<label>/ for each setting under `targets:`


rule rl_experiment:
    input:
        unpack(rl_input),
    output:
        summary="sim/{workload}/{rl_dir}/summary.json",
        runs="sim/{workload}/{rl_dir}/runs.parquet",
    log:
        "logs/rl/{workload}/{rl_dir}.log",
    wildcard_constraints:
        workload=_alternatives(RL_WORKLOADS),
        rl_dir=_alternatives(sorted({d for dirs in RL_DIRS.values() for d in dirs})),
    conda:
        "../envs/gridtrace.yaml"
    params:
        spec=rl_spec,
        settings=RL_SETTINGS,
        setting=rl_run,
        preset=rl_is_preset,
        warmup_jobs=config["warmup_jobs"],
        drain_jobs=config["drain_jobs"],
    message:
        "Running the RL experiment on {wildcards.workload} ({wildcards.rl_dir})"
    script:
        "../scripts/rl.py"
