# Accounting logs -> traces/<site>/{records,jobs,quarantine}.parquet -> traces/<site>.parquet


rule demo_log:
    output:
        directory("traces/{site}/log"),
    log:
        "logs/demo_log/{site}.log",
    priority: 1
    conda:
        "../envs/gridtrace.yaml"
    params:
        n_jobs=lookup(dpath="demo/n_jobs", within=config),
        cores=lookup(dpath="demo/cores", within=config),
        seed=lookup(dpath="demo/seed", within=config),
        tz=site_tz,
    message:
        "Writing the demo site's TORQUE log"
    script:
        "../scripts/demo_log.py"


rule parse:
    input:
        site_log,
    output:
        records="traces/{site}/records.parquet",
        jobs="traces/{site}/jobs.parquet",
        quarantine="traces/{site}/quarantine.parquet",
        summary="traces/{site}/parse-summary.json",
    log:
        "logs/parse/{site}.log",
    # the demo site's chain feeds the demo segment's RL experiment, one of the longest jobs:
    # run it first so that experiment does not start at the end of the run
    priority: 1
    conda:
        "../envs/gridtrace.yaml"
    threads: site_threads
    params:
        spec=site_spec,
    message:
        "Parsing the accounting logs of {wildcards.site}"
    script:
        "../scripts/parse.py"


rule trace:
    input:
        jobs="traces/{site}/jobs.parquet",
        records="traces/{site}/records.parquet",
    output:
        trace="traces/{site}.parquet",
    log:
        "logs/trace/{site}.log",
    priority: 1
    conda:
        "../envs/gridtrace.yaml"
    params:
        cores=site_cores,
        tau_s=config["tau_s"],
        tz=site_tz,
    message:
        "Building the trace of {wildcards.site}"
    script:
        "../scripts/trace.py"
