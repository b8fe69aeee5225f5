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


# Contention experiments (gridtrace.sim.rl.run_contention; issue 14): each configured workload (a
# site or <site>-segment of this run) on its own pool (traces/<site>/jobs.parquet, trace_pool) at
# each offered load of its sweep -> sim/<workload>/contention/<how>-<load>/{summary.json,runs.parquet}
# (as-logged/ when `as_logged: true`). Without `rl: contention:` in the config, a quick one runs
# on demo-segment when that workload exists. Target: `snakemake contention`.
rule rl_contention:
    input:
        unpack(contention_input),
    output:
        summary="sim/{workload}/contention/{regime}/summary.json",
        runs="sim/{workload}/contention/{regime}/runs.parquet",
    log:
        "logs/rl/{workload}/contention-{regime}.log",
    wildcard_constraints:
        workload=_alternatives(CONTENTION_WORKLOADS),
        regime=r"as-logged|(compress|shrink)-[0-9.]+",
    conda:
        "../envs/gridtrace.yaml"
    params:
        settings=contention_settings,
        vo_shares=workload_vo_shares,
        warmup_jobs=config["warmup_jobs"],
        drain_jobs=config["drain_jobs"],
    message:
        "Running the contention experiment on {wildcards.workload} ({wildcards.regime})"
    script:
        "../scripts/rl_contention.py"


rule contention:
    input:
        CONTENTION_SUMMARIES,
