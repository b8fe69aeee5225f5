# Seed presets -> one synthetic trace per seed: traces/<preset>-synth-seed<n>.parquet


rule synth_preset:
    output:
        trace="traces/{preset}-synth-seed{seed}.parquet",
    log:
        "logs/synth/{preset}-seed{seed}.log",
    conda:
        "../envs/gridtrace.yaml"
    params:
        size=config["synthetic_jobs"],
    message:
        "Drawing preset {wildcards.preset} with seed {wildcards.seed}"
    script:
        "../scripts/synth.py"
