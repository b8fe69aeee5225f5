# A site's trace -> traces/<site>/segments.parquet + segmentation.json (stable periods, the chosen one)


rule segment:
    input:
        trace="traces/{site}.parquet",
        jobs="traces/{site}/jobs.parquet",
    output:
        segments="traces/{site}/segments.parquet",
        summary="traces/{site}/segmentation.json",
    log:
        "logs/segment/{site}.log",
    priority: 1
    conda:
        "../envs/gridtrace.yaml"
    params:
        min_jobs=lookup(dpath="segment/min_jobs", within=config),
        block_jobs=lookup(dpath="segment/block_jobs", within=config),
        utilisation=lookup(dpath="segment/utilisation", within=config),
        cores=site_cores,
    message:
        "Segmenting the trace of {wildcards.site} into stable periods"
    script:
        "../scripts/segment.py"


rule segment_workload:
    input:
        trace="traces/{site}.parquet",
        segments="traces/{site}/segments.parquet",
        summary="traces/{site}/segmentation.json",
    output:
        trace="traces/{site}-segment.parquet",
    log:
        "logs/segment/{site}-workload.log",
    priority: 1
    conda:
        "../envs/gridtrace.yaml"
    message:
        "Cutting the selected segment of {wildcards.site} into a workload"
    script:
        "../scripts/segment_workload.py"
