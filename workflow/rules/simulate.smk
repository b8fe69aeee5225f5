# Traces -> sim/<workload>/<policy>/seed<n>.parquet (+ .summary.json)


rule simulate:
    input:
        trace=workload_trace,
    output:
        jobs="sim/{workload}/{policy}/seed{seed}.parquet",
        summary="sim/{workload}/{policy}/seed{seed}.summary.json",
    log:
        "logs/simulate/{workload}/{policy}/seed{seed}.log",
    conda:
        "../envs/gridtrace.yaml"
    params:
        vo_shares=workload_vo_shares,
        estimator=config["estimator"],
        warmup_jobs=config["warmup_jobs"],
        drain_jobs=config["drain_jobs"],
    message:
        "Simulating {wildcards.workload} under {wildcards.policy}, seed {wildcards.seed}"
    script:
        "../scripts/simulate.py"
