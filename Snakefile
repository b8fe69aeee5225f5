# gridtrace pipeline: accounting logs and seed presets -> traces -> simulations -> one report per
# workload. `snakemake reports/all --cores 2` runs it on config/config.yaml.
from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/parse.smk"
include: "workflow/rules/segment.smk"
include: "workflow/rules/synth.smk"
include: "workflow/rules/model.smk"
include: "workflow/rules/simulate.smk"
include: "workflow/rules/rl.smk"
include: "workflow/rules/ppo.smk"
include: "workflow/rules/report.smk"


# aggregate targets: on a cluster (workflow/profiles/slurm) they run on the submit host
localrules:
    all,
    contention,
    ppo,


rule all:
    default_target: True
    input:
        "reports/all",
