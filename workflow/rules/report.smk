# Simulations -> reports/<workload>/index.html -> reports/index.html -> reports/all


rule report_workload:
    input:
        unpack(report_segments),
        unpack(report_model),
        unpack(report_rl),
        unpack(report_contention),
        trace=report_trace,
        runs=workload_runs,
    output:
        html=report("reports/{workload}/index.html", caption="../report/workload.rst"),
        figures="reports/{workload}/key-figures.json",
    log:
        "logs/report/{workload}.log",
    conda:
        "../envs/gridtrace.yaml"
    params:
        tz=report_tz,
        preset=report_preset,
    message:
        "Rendering the report of {wildcards.workload}"
    script:
        "../scripts/report.py"


rule report_index:
    input:
        figures=expand("reports/{workload}/key-figures.json", workload=WORKLOADS),
        html=expand("reports/{workload}/index.html", workload=WORKLOADS),
        contention=CONTENTION_SUMMARIES,
        pages=[p.replace("index.html", "entry.json") for p in PPO_REPORTS],
    output:
        index="reports/index.html",
        manifest="reports/all",
    log:
        "logs/report/index.log",
    conda:
        "../envs/gridtrace.yaml"
    message:
        "Rendering the index of every workload's report"
    script:
        "../scripts/report_index.py"
