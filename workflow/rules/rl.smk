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
_CONTENTION_DEFAULT = {
    "workloads": {"demo-segment": {"loads": [0.9], "how": ["compress"]}},
    "seeds": 2,
    "tune_seeds": 1,
    "train_episodes": 1,
    "pretrain": "sjf",
    "vo_features": "none",
    "rewards": ["w-f", "slowdown"],
    "lambdas": [0.5],
    "windows": 8,
}
CONTENTION = dict(config["rl"].get("contention") or _CONTENTION_DEFAULT)
CONTENTION_WORKLOADS = {
    w: dict(spec or {})
    for w, spec in CONTENTION.get("workloads", {}).items()
    if w in WORKLOADS and _site_of(w) is not None
}


def contention_regimes(workload):
    """The regime labels of a contention workload: <how>-<load> per sweep point, as-logged."""
    spec = CONTENTION_WORKLOADS[workload]
    labels = [
        f"{how}-{float(load):g}"
        for how in spec.get("how", ["compress"])
        for load in spec.get("loads", [0.5, 0.7, 0.85, 0.95])
    ]
    if spec.get("as_logged", False):
        labels.append("as-logged")
    return labels


def contention_input(wildcards):
    """The workload's trace and its site's jobs (for the segment's own pool)."""
    return {
        "trace": f"traces/{wildcards.workload}.parquet",
        "jobs": f"traces/{_site_of(wildcards.workload)}/jobs.parquet",
    }


def contention_settings(wildcards):
    """The experiment settings (everything under rl.contention but the workloads), and the site's
    configured VO targets."""
    settings = {k: v for k, v in CONTENTION.items() if k != "workloads"}
    settings.update(CONTENTION_WORKLOADS[wildcards.workload].get("settings", {}))
    return settings


CONTENTION_SUMMARIES = [
    f"sim/{w}/contention/{r}/summary.json"
    for w in CONTENTION_WORKLOADS
    for r in contention_regimes(w)
]


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
