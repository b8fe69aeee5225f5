# Configuration, workload lists and input functions shared by every rule.
import os
import re
import zoneinfo

from snakemake.utils import validate

from gridtrace.errors import ConfigError, UnknownFormatError
from gridtrace.logs import VOMapping, get_format
from gridtrace.models import get_preset


def check_site(name, spec):
    """Check what the schema cannot about one site, naming the key: a job must not be the
    first to find a missing path, an unknown format, a bad zone or VO rule."""
    where = f"config sites.{name}"
    if not isinstance(spec, dict):
        raise ValueError(
            f"{where}: a site is a mapping of path, format, tz, ... not {spec!r}"
        )
    if not spec.get("demo") and not spec.get("path"):
        raise ValueError(
            f"{where}.path: missing; give the log file or folder of daily files "
            "(or demo: true for the generated demo log)"
        )
    if spec.get("format") is not None:
        try:
            get_format(str(spec["format"]))
        except UnknownFormatError as exc:
            raise ValueError(
                f"{where}.format: {exc} (or leave it out: recognised per file)"
            )
    if spec.get("tz") is not None:
        try:
            zoneinfo.ZoneInfo(str(spec["tz"]))
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise ValueError(
                f"{where}.tz: {spec['tz']!r} is not an IANA time zone (e.g. Europe/Paris, UTC)"
            )
    try:
        VOMapping.from_dict(spec.get("vo_map") or {})
    except ConfigError as exc:
        raise ValueError(f"{where}.vo_map: {exc}")


for _name, _spec in (
    config.get("sites") if isinstance(config.get("sites"), dict) else {}
).items():
    check_site(_name, _spec)
validate(config, schema="../schemas/config.schema.yaml")

PRESETS = list(config["presets"])
SITES = dict(config["sites"])
SEEDS = list(config["seeds"])
POLICIES = list(config["policies"])
# each site's selected segment, as a workload of its own: <site>-segment -> site
SEGMENT_WORKLOADS = (
    {f"{site}-segment": site for site in SITES}
    if config["segment"].get("workload", True)
    else {}
)
WORKLOADS = PRESETS + list(SITES) + list(SEGMENT_WORKLOADS)
# workloads with a fitted model (sites and their segments; presets' parameters are given)
FITTED_WORKLOADS = list(SITES) + list(SEGMENT_WORKLOADS)
# policies whose schedule depends on nothing but the trace (every gridtrace.sim.POLICIES name
# but "random", the only one that draws); the schema's enum lists the same names
DETERMINISTIC_POLICIES = {
    "fifo",
    "sjf",
    "sjf-strict",
    "ljf",
    "ljf-strict",
    "smallest-first",
    "largest-first",
    "hrrn",
    "wfp3",
    "unicep",
    "f1",
    "edf",
    "fairshare",
    "easy",
    "conservative",
    "greedy-first-fit",
    "packer",
    "tetris",
    "native",
}

# RL experiments (rl.smk): the configured workloads that exist in this run
RL_SETTINGS = {k: v for k, v in config["rl"].items() if k != "workloads"}
RL_WORKLOADS = {
    w: dict(spec or {})
    for w, spec in config["rl"].get("workloads", {}).items()
    if w in WORKLOADS
}
# an RL workload's output folders: rl/ (its own VO targets) and rl-<label>/ per extra setting
RL_DIRS = {
    w: ["rl"] + [f"rl-{label}" for label in sorted(spec.get("targets", {}))]
    for w, spec in RL_WORKLOADS.items()
}

if len(set(WORKLOADS)) != len(WORKLOADS):
    raise ValueError(
        f"workload names must be unique across presets and sites: {WORKLOADS}"
    )


def _alternatives(names):
    return "|".join(re.escape(n) for n in names) or "(?!)"


wildcard_constraints:
    workload="(?!all$)[A-Za-z0-9_.-]+",
    seed=r"\d+",
    policy="[a-z0-9_-]+",
    site=_alternatives(SITES),
    preset=_alternatives(PRESETS),


def site_log(wildcards):
    """The accounting logs of a site: written by the pipeline for the demo, else configured."""
    spec = SITES[wildcards.site]
    if spec.get("demo"):
        return f"traces/{wildcards.site}/log"
    return spec["path"]


def workload_trace(wildcards):
    """The trace a simulation replays: one synthetic draw per seed for presets."""
    if wildcards.workload in PRESETS:
        return f"traces/{wildcards.workload}-synth-seed{wildcards.seed}.parquet"
    return f"traces/{wildcards.workload}.parquet"


def report_trace(wildcards):
    """The trace shown in a report's Workload section (for presets, the first seed's draw)."""
    if wildcards.workload in PRESETS:
        return f"traces/{wildcards.workload}-synth-seed{SEEDS[0]}.parquet"
    return f"traces/{wildcards.workload}.parquet"


def _site_of(workload):
    """The site whose log a workload comes from (a site, or a site's segment), else None."""
    if workload in SITES:
        return workload
    return SEGMENT_WORKLOADS.get(workload)


def workload_vo_shares(wildcards):
    """Target VO shares for the fairness metric: the site's from config, a preset's own."""
    site = _site_of(wildcards.workload)
    if site is not None:
        return SITES[site].get("vo_shares")
    return dict(get_preset(wildcards.workload).vo_shares)


def report_segments(wildcards):
    """A site's segments and the segmentation summary (none for presets)."""
    if wildcards.workload in SITES:
        return {
            "segments": f"traces/{wildcards.workload}/segments.parquet",
            "segmentation": f"traces/{wildcards.workload}/segmentation.json",
        }
    return {}


def report_model(wildcards):
    """A fitted workload's model, fit summary and synthetic draw (none for presets)."""
    if wildcards.workload in FITTED_WORKLOADS:
        return {
            "model": f"models/{wildcards.workload}.json",
            "fit_summary": f"models/{wildcards.workload}.fit-summary.json",
            "synthetic": f"traces/{wildcards.workload}-synth.parquet",
            "synthetic_swf": f"traces/{wildcards.workload}-synth.swf",
        }
    return {}


def report_preset(wildcards):
    """The preset whose given parameters fill a report's Model section (None for sites)."""
    return wildcards.workload if wildcards.workload in PRESETS else None


def report_tz(wildcards):
    """The local zone of a site's daily and weekly profiles (None: from the trace)."""
    site = _site_of(wildcards.workload)
    return SITES[site].get("tz") if site is not None else None


def pipeline_inputs(*paths):
    """The paths the pipeline may write itself (relative, inside the working directory): rule
    inputs, so they are built first. Outside data (absolute, or ``../shared/data/...``) is read
    as given, without asking Snakemake to find a rule for it."""
    return [p for p in paths if not (os.path.isabs(p) or p.split(os.sep)[0] == os.pardir)]


def site_spec(wildcards):
    return SITES[wildcards.site]


def site_threads(wildcards):
    """Parse workers: one for the demo site (a small log parsed in one process), else two."""
    return 1 if SITES[wildcards.site].get("demo") else 2


def site_tz(wildcards):
    return SITES[wildcards.site].get("tz")


def site_cores(wildcards):
    return SITES[wildcards.site].get("cores")


def workload_runs(wildcards):
    """Every simulation run of a workload: one per policy and seed.

    A site's trace (or segment) is fixed, so a policy without randomness gives the same schedule
    for every seed: it runs once, with the first seed. A preset is drawn anew for every seed, and
    has no logged schedule, so ``native`` (as-logged replay) runs on sites only, and only on
    those whose log holds the start times (``logged_schedule``, default true).
    """
    runs = []
    site = _site_of(wildcards.workload)
    fixed = site is not None
    logged = fixed and SITES[site].get("logged_schedule", True)
    for policy in POLICIES:
        if policy == "native" and not logged:
            continue  # a synthetic draw, or a log without start times, has no schedule to replay
        seeds = SEEDS
        if fixed and policy in DETERMINISTIC_POLICIES:
            seeds = SEEDS[:1]
        runs += expand(
            "sim/{workload}/{policy}/seed{seed}.parquet",
            workload=wildcards.workload,
            policy=policy,
            seed=seeds,
        )
    return runs


def rl_input(wildcards):
    """The trace an RL experiment splits by time (none for presets: they draw their own)."""
    if wildcards.workload in PRESETS:
        return {}
    return {"trace": f"traces/{wildcards.workload}.parquet"}


def rl_spec(wildcards):
    """A workload's RL experiment settings from `rl: workloads:`."""
    return RL_WORKLOADS[wildcards.workload]


def rl_run(wildcards):
    """One RL run's VO-target label and shares, and the rewards of its RL variants.

    rl/ uses the workload's own targets (a preset's arrival mix, a site's configured shares) and
    every configured reward; rl-<label>/ uses the shares configured under `targets: <label>` and
    the research's reward only (the slowdown reward has no fairness term: its schedules would be
    those of rl/).
    """
    label = wildcards.rl_dir.removeprefix("rl").removeprefix("-") or None
    if label is None:
        own = None if wildcards.workload in PRESETS else workload_vo_shares(wildcards)
        return {"targets": None, "vo_shares": own, "rewards": RL_SETTINGS["rewards"]}
    shares = RL_WORKLOADS[wildcards.workload]["targets"][label]
    return {"targets": label, "vo_shares": dict(shares), "rewards": ["w-f"]}


def rl_is_preset(wildcards):
    """True if the workload is a seed preset (fresh draws), False for a site (time split)."""
    return wildcards.workload in PRESETS


def report_rl(wildcards):
    """A workload's RL experiment summaries, if it has any: its own targets', then the others'."""
    if wildcards.workload not in RL_WORKLOADS:
        return {}
    first, *others = RL_DIRS[wildcards.workload]
    out = {"rl": f"sim/{wildcards.workload}/{first}/summary.json"}
    if others:
        out["rl_targets"] = [
            f"sim/{wildcards.workload}/{d}/summary.json" for d in others
        ]
    return out


# --- contention experiments (rules in rl.smk) ---

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


def report_contention(wildcards):
    """A workload's contention experiments for its report: each regime's summary and runs."""
    if wildcards.workload not in CONTENTION_WORKLOADS:
        return {}
    base = f"sim/{wildcards.workload}/contention"
    regimes = contention_regimes(wildcards.workload)
    return {
        "contention": [f"{base}/{r}/summary.json" for r in regimes],
        "contention_runs": [f"{base}/{r}/runs.parquet" for r in regimes],
    }


# --- PPO on DeepRM's multi-resource setup (issue 15; workflow/rules/ppo.smk) ---------------------

PPO_DEEPRM = dict((config.get("ppo") or {}).get("deeprm") or {})
if not PPO_DEEPRM.pop("enabled", True):
    PPO_DEEPRM = {}


def ppo_load_label(load):
    """The folder label of a configured load: `max`, else the load in percent (1.0 -> 100)."""
    if load == "max":
        return "max"
    return f"{round(float(load) * 100, 6):g}"


PPO_LOADS = {ppo_load_label(x): x for x in PPO_DEEPRM.get("loads", [1.0, "max"])}
PPO_EVALUATIONS = (
    [f"sim/ppo-deeprm/load-{label}/evaluation.json" for label in PPO_LOADS]
    if PPO_DEEPRM
    else []
)
PPO_REPORTS = ["reports/ppo-deeprm/index.html"] if PPO_DEEPRM else []


def ppo_settings(wildcards):
    """The PPO settings with their defaults, and this folder's load (a number or `max`)."""
    settings = {
        "timesteps": 15360,
        "envs": 24,
        "steps": 64,
        "visible_slots": 5,
        "episode_steps": 50,
        "sequences": 10,
        "seed": 0,
        "eval_seed": 1,
    }
    settings.update({k: v for k, v in PPO_DEEPRM.items() if k != "loads"})
    settings["load"] = PPO_LOADS[wildcards.ppo_load]
    return settings


def ppo_report_input(wildcards):
    """Every load's saved config (its learning curve) and evaluation, for the PPO page."""
    return {
        "configs": [f"sim/ppo-deeprm/load-{label}/config.json" for label in PPO_LOADS],
        "evaluations": PPO_EVALUATIONS,
    }
