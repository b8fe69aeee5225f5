# A site's trace (or its segment) -> models/<w>.json + fit summary -> traces/<w>-synth.parquet (+ .swf)
# Presets are not fitted: their parameters are given (the report shows them instead).


rule fit:
    input:
        trace="traces/{workload}.parquet",
    output:
        model="models/{workload}.json",
        summary="models/{workload}.fit-summary.json",
    log:
        "logs/fit/{workload}.log",
    wildcard_constraints:
        workload=_alternatives(FITTED_WORKLOADS),
    conda:
        "../envs/gridtrace.yaml"
    params:
        arrivals=lookup(dpath="model/arrivals", within=config),
        k_max=lookup(dpath="model/k_max", within=config),
        seed=lookup(dpath="model/seed", within=config),
    message:
        "Fitting a workload model to {wildcards.workload}"
    script:
        "../scripts/fit.py"


rule synth_model:
    input:
        model="models/{workload}.json",
    output:
        trace="traces/{workload}-synth.parquet",
        swf="traces/{workload}-synth.swf",
    log:
        "logs/synth/{workload}-model.log",
    wildcard_constraints:
        workload=_alternatives(FITTED_WORKLOADS),
    conda:
        "../envs/gridtrace.yaml"
    params:
        seed=SEEDS[0],
    message:
        "Drawing a synthetic trace of {wildcards.workload} from its fitted model"
    script:
        "../scripts/synth_model.py"
