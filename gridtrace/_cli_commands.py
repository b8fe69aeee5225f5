"""The commands of ``gridtrace`` other than ``parse``: their options and what they run.

Kept apart from :mod:`gridtrace.cli` so that ``gridtrace parse`` of one day's file, the command
run most often, neither compiles nor loads them (a first call compiles every module it imports).
:mod:`gridtrace.cli` imports this module when one of these commands runs, or for ``--help``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from gridtrace.cli import _read_json, _say
from gridtrace.errors import ConfigError

__all__ = [
    "add_anonymize",
    "add_export",
    "add_fit",
    "add_index",
    "add_ppo",
    "add_report",
    "add_rl",
    "add_segment",
    "add_simulate",
    "add_synth",
    "add_trace",
]


def _cmd_anonymize(args: argparse.Namespace) -> int:
    import pyarrow.parquet as pq

    from gridtrace._atomic import write_parquet
    from gridtrace.logs._anonymize import (
        ALL_KINDS,
        DEFAULT_KINDS,
        anonymize_table,
        key_from_env,
        read_key_file,
    )

    if (args.key_file is None) == (args.key_env is None):
        msg = "give the key with exactly one of --key-file and --key-env"
        raise ConfigError(msg)
    key = read_key_file(args.key_file) if args.key_file else key_from_env(args.key_env)
    kinds = set(args.kinds.split(",")) if args.kinds else set(DEFAULT_KINDS)
    if args.pseudonymise_vo:
        kinds.add("vo")
    unknown = kinds - set(ALL_KINDS)
    if unknown:
        msg = f"unknown --kinds {', '.join(sorted(unknown))}; kinds are {', '.join(ALL_KINDS)}"
        raise ConfigError(msg)
    out = Path(args.out)
    names = [Path(path).name for path in args.tables]
    if len(set(names)) != len(names):
        msg = "two input tables have the same file name; anonymise them into separate folders"
        raise ConfigError(msg)
    out.mkdir(parents=True, exist_ok=True)
    for path, name in zip(args.tables, names, strict=True):
        if (out / name).resolve() == Path(path).resolve():
            msg = f"{path}: the output would overwrite the input; choose another -o folder"
            raise ConfigError(msg)
        table = anonymize_table(pq.read_table(path), key, kinds=kinds, src_file=args.src_file)
        write_parquet(table, out / name)
        _say(f"{path}: {table.num_rows} rows anonymised -> {out / name}")
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    import pyarrow.parquet as pq

    from gridtrace.logs import write_batsim, write_gwf, write_swf

    table = pq.read_table(args.table)
    is_jobs = "job_key" in table.column_names
    if args.to in {"swf", "gwf"} and not is_jobs:
        msg = (
            f"{args.table}: {args.to.upper()} export takes a jobs table (from 'gridtrace parse'); "
            "this looks like a trace"
        )
        raise ConfigError(msg)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if args.to == "swf":
        result = write_swf(table, out, max_procs=args.cores)
    elif args.to == "gwf":
        result = write_gwf(table, out, max_procs=args.cores)
    else:
        result = write_batsim(table, out, nb_res=args.cores)
    _say(f"{args.table}: {result.describe()}")
    return 0


def _cmd_trace(args: argparse.Namespace) -> int:
    import pyarrow.parquet as pq

    from gridtrace._atomic import write_parquet
    from gridtrace.logs import build_trace
    from gridtrace.schema import trace_metadata

    jobs = pq.read_table(args.jobs)
    records_path = Path(args.jobs).with_name("records.parquet")
    records = pq.read_table(records_path, columns=["attrs"]) if records_path.exists() else None
    trace = build_trace(
        jobs,
        tau_s=args.tau,
        cores=args.cores,
        exclude_monitoring=not args.keep_monitoring,
        records=records,
        provenance={"jobs_table": str(args.jobs)},
        tz=args.tz,
    )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    name = args.name or str(trace_metadata(trace)["site"])
    path = out / f"{name}.parquet"
    write_parquet(trace, path)
    meta = trace_metadata(trace)
    interactive = trace.column("interactive").to_numpy(zero_copy_only=False).mean()
    _say(
        f"{trace.num_rows} jobs, P = {meta['cores']} cores "
        f"({meta['provenance']['cores_estimate']}), interactive share {interactive:.3f}; "
        f"written to {path}"
    )
    return 0


def _cmd_segment(args: argparse.Namespace) -> int:
    import pyarrow.parquet as pq

    from gridtrace._atomic import write_parquet, write_text
    from gridtrace.logs import build_trace
    from gridtrace.schema import read_table, trace_metadata
    from gridtrace.segment import (
        SegmentParams,
        SelectionCriteria,
        segment,
        segment_trace,
        select_segment,
    )

    source = Path(args.data)
    table = pq.read_table(source)
    jobs = None
    if "job_key" in table.column_names:
        jobs = read_table(source, "jobs")
        records_path = source.with_name("records.parquet")
        records = pq.read_table(records_path, columns=["attrs"]) if records_path.exists() else None
        trace = build_trace(
            jobs,
            tau_s=args.tau or 900.0,
            cores=args.cores,
            records=records,
            provenance={"jobs_table": str(source)},
        )
    else:
        trace = table
        if args.jobs:
            jobs = read_table(args.jobs, "jobs")
    params = SegmentParams(min_jobs=args.min_jobs, block_jobs=args.block_jobs, tau_s=args.tau)
    result = segment(trace, jobs=jobs, cores=args.cores, params=params)
    band = tuple(args.utilisation) if args.utilisation else None
    criteria = SelectionCriteria(min_jobs=args.min_jobs, utilisation=band)
    choice = select_segment(result.segments, criteria)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    summary_path = out / "segmentation.json"
    summary_path.unlink(missing_ok=True)  # written last: present means the rest is complete
    write_parquet(result.segments, out / "segments.parquet")
    name = args.name or str(trace_metadata(trace)["site"])
    chosen = [r["segment_id"] for r in choice.ranking if r["eligible"]][: args.top]
    if not chosen:
        chosen = [choice.segment_id]
    written = []
    for segment_id in chosen:
        path = out / f"{name}-seg{segment_id}.parquet"
        write_parquet(segment_trace(trace, result.segments, segment_id), path)
        written.append(str(path))
    summary = {**result.info(), "choice": choice.to_dict(), "traces": written}
    write_text(summary_path, json.dumps(summary, indent=2) + "\n")
    for row in result.segments.to_pylist():
        _say(
            f"segment {row['segment_id']}: {row['jobs']} jobs, U = {row['utilisation']:.3f}, "
            f"interactive {row['interactive_fraction']:.3f}, pool stable {row['pool_stable']}, "
            f"boundary: {row['reason']}"
        )
    for note in result.notes:
        _say(f"note: {note}")
    _say(choice.explanation)
    _say(f"segments.parquet and {len(written)} segment trace(s) written to {out}/")
    return 0


def _cmd_synth(args: argparse.Namespace) -> int:
    import dataclasses

    from gridtrace._atomic import atomic_path, write_parquet
    from gridtrace.models import (
        DEEPRM_PRESETS,
        generate_preset_trace,
        get_preset,
        write_trace_swf,
    )

    if args.model:
        from gridtrace.models import WorkloadModel

        if (args.size is None) == (args.horizon is None):
            msg = "with --model give exactly one of --jobs N and --horizon S"
            raise ConfigError(msg)
        model = WorkloadModel.from_dict(_read_json(args.model))
        trace = model.sample(
            args.size,
            horizon_s=args.horizon,
            rng=args.seed,
            provenance={"model_file": str(args.model)},
        )
        stem = args.name or f"{model.name_}-synth-seed{args.seed}"
        what = f"model {model.name_} ({args.model})"
    else:
        if args.horizon is not None:
            msg = "--horizon needs --model (presets draw a number of jobs)"
            raise ConfigError(msg)
        if args.preset in DEEPRM_PRESETS:
            workload = DEEPRM_PRESETS[args.preset]
            if args.time_unit is not None:
                workload = dataclasses.replace(workload, time_unit_s=args.time_unit)
            trace = generate_preset_trace(workload, rng=args.seed, size=args.size)
            stem = args.name or f"{workload.name}-synth-seed{args.seed}"
            what = (
                f"DeepRM preset {workload.name} (P = {workload.res_slot}, load "
                f"{workload.load:.4g}, Bernoulli p = {workload.arrival_probability:.5g} per "
                f"{workload.time_unit_s:g}-s step)"
            )
        else:
            if args.time_unit is not None:
                msg = "--time-unit applies to the DeepRM presets only"
                raise ConfigError(msg)
            preset = get_preset(args.preset)
            trace = generate_preset_trace(preset, rng=args.seed, size=args.size)
            stem = args.name or f"{preset.name}-synth-seed{args.seed}"
            what = (
                f"preset {preset.name} (P = {preset.cores}, mu = {preset.service_rate:.5g}/s, "
                f"lambda = {preset.arrival_rate:.5g}/s, rho = {preset.rho:.4g})"
            )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{stem}.parquet"
    write_parquet(trace, path)
    written = str(path)
    if args.swf:
        swf = out / f"{stem}.swf"
        with atomic_path(swf) as temporary:
            write_trace_swf(trace, temporary)
        written += f" and {swf}"
    _say(f"{trace.num_rows} jobs of {what}, seed {args.seed}; written to {written}")
    return 0


def _cmd_fit(args: argparse.Namespace) -> int:
    from gridtrace.models._fitcli import fit_command

    for line in fit_command(
        args.trace,
        args.out,
        arrivals=args.arrivals,
        k_max=args.k_max,
        seed=args.seed,
        streams=args.streams,
        per_vo=args.per_vo,
        name=args.name,
        replicas=args.replicas,
    ):
        _say(line)
    return 0


def _cmd_simulate(args: argparse.Namespace) -> int:
    import pyarrow.parquet as pq

    from gridtrace.errors import SchemaError
    from gridtrace.schema import trace_metadata
    from gridtrace.sim import simulate

    vo_shares = _read_json(args.vo_shares) if args.vo_shares else None
    trace = pq.read_table(args.trace)
    if args.cores is not None:
        _say(f"P = {args.cores} cores (--cores)")
    else:
        try:
            meta = trace_metadata(trace)
        except SchemaError:
            pass  # simulate() says what is missing
        else:
            how = meta["provenance"].get("cores_estimate", "no provenance stored")
            _say(f"P = {meta['cores']} cores, the trace's ({how}); --cores sets another")
    result = simulate(
        trace,
        cores=args.cores,
        policy=args.policy,
        estimator=args.estimator,
        vo_shares=vo_shares,
        rng=args.seed,
        warmup_jobs=args.warmup,
        drain_jobs=args.drain,
    )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"seed{args.seed}"
    result.write(f"{stem}.parquet", f"{stem}.summary.json")
    summary = result.summary
    for name in ("interactive", "batch", "all"):
        row = summary["classes"][name]
        if row["n"]:
            _say(
                f"{name:>11}: {row['n']} jobs, mean wait {row['wait_mean_s']:.1f} s, "
                f"mean W {row['responsiveness_mean']:.3f}"
            )
    _say(f"utilisation {summary['utilisation']:.3f}; written to {stem}.parquet")
    return 0


def _cmd_rl(args: argparse.Namespace) -> int:
    import pyarrow.parquet as pq

    from gridtrace.sim.rl import ExperimentConfig, run_experiment

    config = ExperimentConfig(
        experiment=args.experiment,
        root_seed=args.seed,
        train_draws=args.train_draws,
        eval_seeds=args.eval_seeds,
        train_fraction=args.train_fraction,
        size=args.size,
        published=args.published,
        rewards=tuple(args.rewards.split(",")),
    )
    vo_shares = _read_json(args.vo_shares) if args.vo_shares else None
    if args.preset:
        result = run_experiment(
            args.preset, config, name=args.name, vo_shares=vo_shares, targets=args.targets
        )
    else:
        result = run_experiment(
            pq.read_table(args.trace),
            config,
            name=args.name,
            cores=args.cores,
            vo_shares=vo_shares,
            targets=args.targets,
        )
    runs, summary = result.write(args.out)
    _say(result.summary["verdict"])
    _say(f"{result.runs.num_rows} runs written to {runs} and {summary}")
    return 0


def _cmd_ppo_rlscheduler(args: argparse.Namespace) -> int:
    """``gridtrace ppo train|evaluate --setup rlscheduler`` (RLScheduler's PPO setup)."""
    from gridtrace._atomic import write_text
    from gridtrace.sim import read_rlscheduler_swf
    from gridtrace.sim.rl import _rlsched_ppo as rp

    if args.ppo_command == "train":
        if not args.trace or len(args.trace) != 1:
            raise ConfigError("--setup rlscheduler trains on one --trace PATH.swf[.gz]")
        trace = args.trace[0]
        defaults = rp.RLSchedPPOConfig()
        config = rp.RLSchedPPOConfig(
            trajectories=args.trajectories,
            sequence=args.sequence,
            n_epochs=args.epochs if args.epochs is not None else defaults.n_epochs,
            batch_size=args.batch_size,
            total_timesteps=args.timesteps or defaults.total_timesteps,
            backfill=bool(args.backfill),
            device=args.device,
        )
        run = rp.train_rlsched_ppo(
            read_rlscheduler_swf(trace), config, seed=args.seed, trace=rp.trace_stem(trace)
        )
        out = rp.save_rlsched_ppo(run, args.out)
        last = run.learning_curve[-1] if run.learning_curve else {}
        _say(
            f"trained {run.model.num_timesteps} steps on {run.trace} "
            f"(backfill {config.backfill}) in {run.train_seconds:.1f} s; last update's mean "
            f"bounded slowdown {last.get('mean_slowdown', float('nan')):.4g}; saved to {out}"
        )
        return 0
    run = rp.load_rlsched_ppo(args.policy, device=args.device)
    if not args.trace:
        raise ConfigError("--setup rlscheduler evaluates on --trace PATH (repeatable)")
    evaluations = []
    for trace in args.trace:
        ev = rp.evaluate_rlsched_ppo(
            run,
            read_rlscheduler_swf(trace),
            trace=rp.trace_stem(trace),
            backfill=args.backfill,
            seed=args.seed,
            windows=args.windows,
            window=args.window,
            job_slice=args.job_slice,
        )
        evaluations.append(ev)
        published = ev["published_rl"]
        _say(
            f"{ev['trace']} (agent trained on {ev['trained_on']}, backfill {ev['backfill']}; "
            f"published RL {'n/a' if published is None else published}):"
        )
        for p in ev["policies"]:
            _say(f"  {p['label']:>8} {p['mean']:10.2f} [{p['low']:.2f}, {p['high']:.2f}]")
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    record = {"setup": "rlscheduler", "evaluations": evaluations}
    write_text(out_dir / "evaluation.json", json.dumps(record, indent=2) + "\n")
    _say(f"written to {out_dir / 'evaluation.json'}")
    return 0


def _cmd_ppo_report(args: argparse.Namespace) -> int:
    """``gridtrace ppo report --setup rlscheduler DIR... -o HTML``: the setup's report page."""
    from gridtrace._atomic import write_text
    from gridtrace.report._ppo import render_rlsched_ppo_report

    configs, evaluations = [], []
    for folder in args.agents:
        configs.append(json.loads((Path(folder) / "config.json").read_text(encoding="utf-8")))
        ev = Path(folder) / "evaluation.json"
        if not ev.is_file():
            raise ConfigError(f"{folder} has no evaluation.json: run 'gridtrace ppo evaluate'")
        evaluations.append(json.loads(ev.read_text(encoding="utf-8")))
    entry = render_rlsched_ppo_report(configs, evaluations, args.out)
    if args.entry:
        write_text(Path(args.entry), json.dumps(entry, indent=2) + "\n")
    _say(f"written to {args.out}")
    return 0


def _cmd_ppo(args: argparse.Namespace) -> int:
    from gridtrace.sim.rl import _ppo
    from gridtrace.sim.rl._multires import MultiResourceConfig

    if args.ppo_command == "report":
        return _cmd_ppo_report(args)
    setup = args.setup
    if setup is None:  # evaluate: the saved policy's setup
        setup = _ppo.read_record(args.policy)["setup"] if args.ppo_command == "evaluate" else ""
    if setup == "rlscheduler":
        return _cmd_ppo_rlscheduler(args)
    if args.ppo_command == "train":
        base = MultiResourceConfig(visible_slots=args.slots, episode_steps=args.episode_steps)
        ppo_config = _ppo.PPOConfig(
            total_timesteps=args.timesteps or _ppo.PPOConfig().total_timesteps,
            n_envs=args.envs,
            vec_env=args.vec_env,
            device=args.device,
        )
        load = base.workload.max_load if args.load == "max" else float(args.load)
        run = _ppo.train_ppo(base.with_load(load), ppo_config, seed=args.seed)
        out = _ppo.save_ppo(run, args.out)
        last = run.learning_curve[-1] if run.learning_curve else {}
        _say(
            f"trained {run.model.num_timesteps} steps at load {load:.4g} in "
            f"{run.train_seconds:.1f} s; last update's mean slowdown "
            f"{last.get('mean_slowdown', float('nan')):.3g}; saved to {out}"
        )
        return 0
    run = _ppo.load_ppo(args.policy, device=args.device)
    max_load = run.env_config.workload.max_load
    loads = (
        [max_load if x == "max" else float(x) for x in args.loads.split(",")]
        if args.loads
        else None
    )
    rows, summary = _ppo.evaluate_ppo(run, loads=loads, sequences=args.sequences, seed=args.seed)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    from gridtrace._atomic import write_text

    write_text(out_dir / "evaluation.json", _ppo.summary_json(rows, summary))
    _say("published PPO vs SJF: -45 % at 100 % load, -54 % at 190 %")
    _say("  load  policy  mean slowdown [95 % interval]   vs SJF")

    def num(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.3f}"

    for r in summary:
        rel = r["slowdown_vs_sjf"]
        _say(
            f"{100 * r['load']:5.1f} % {r['policy']:>7} {num(r['mean_slowdown']):>8} "
            f"[{num(r['mean_slowdown_low'])}, {num(r['mean_slowdown_high'])}] "
            + ("n/a" if rel is None else f"{100 * rel:+7.1f} %")
        )
    _say(f"written to {out_dir / 'evaluation.json'}")
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    import pyarrow.parquet as pq

    from gridtrace._atomic import write_text
    from gridtrace.report import render_workload_report
    from gridtrace.sim import read_result

    results: dict[str, list[Any]] = {}
    for run in args.runs:
        summary = run.removesuffix(".parquet") + ".summary.json"
        results.setdefault(Path(run).parent.name, []).append(read_result(run, summary))
    segments = segmentation = None
    if args.segments:
        folder = Path(args.segments)
        segments = pq.read_table(folder / "segments.parquet")
        info = folder / "segmentation.json"
        segmentation = json.loads(info.read_text()) if info.exists() else None
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    figures = render_workload_report(
        args.workload,
        trace=pq.read_table(args.trace),
        results=results,
        out_path=out,
        tz=args.tz,
        segments=segments,
        segmentation=segmentation,
    )
    write_text(out / "key-figures.json", json.dumps(figures, indent=2, default=str) + "\n")
    _say(f"report of {args.workload} written to {out / 'index.html'}")
    return 0


def _cmd_index(args: argparse.Namespace) -> int:
    from gridtrace.report import render_index, write_manifest

    entries = [_read_json(path) for path in args.figures]
    out = Path(args.out)
    render_index(entries, out / "index.html")
    write_manifest(
        [Path(path).parent.relative_to(out.parent) / "index.html" for path in args.figures],
        out / "all",
    )
    _say(f"index of {len(entries)} report(s) written to {out / 'index.html'}")
    return 0


def add_anonymize(commands: Any) -> None:
    anonymize = commands.add_parser(
        "anonymize", help="tables -> the same tables with names replaced by keyed pseudonyms"
    )
    anonymize.add_argument(
        "tables", nargs="+", help="jobs, trace, records or quarantine .parquet files"
    )
    anonymize.add_argument("-o", "--out", required=True, help="output folder (same file names)")
    anonymize.add_argument("--key-file", metavar="FILE", help="file holding the secret key")
    anonymize.add_argument("--key-env", metavar="VAR", help="environment variable holding it")
    anonymize.add_argument(
        "--kinds",
        help="comma-separated kinds to replace (default user,group,account,job_name,host)",
    )
    anonymize.add_argument(
        "--pseudonymise-vo", action="store_true", help="replace VO names too (public by default)"
    )
    anonymize.add_argument(
        "--src-file",
        choices=("name", "pseudonym"),
        default="name",
        help="what src_file keeps of each path: the file's name (default; folders are dropped) "
        "or a keyed pseudonym of it",
    )
    anonymize.set_defaults(run=_cmd_anonymize)


def add_export(commands: Any) -> None:
    export = commands.add_parser(
        "export", help="jobs table -> SWF or GWF file; jobs or trace table -> Batsim workload"
    )
    export.add_argument("table", help="a jobs.parquet (SWF, GWF, Batsim) or a trace (Batsim)")
    export.add_argument("-o", "--out", required=True, help="the file to write")
    export.add_argument("--to", required=True, choices=["swf", "gwf", "batsim"])
    export.add_argument(
        "--cores",
        type=int,
        help="the machine's processors: Batsim nb_res (default: the trace's P, else the log "
        "header's), SWF/GWF MaxProcs (default: the log header's, if any)",
    )
    export.set_defaults(run=_cmd_export)


def add_trace(commands: Any) -> None:
    trace = commands.add_parser("trace", help="jobs table -> trace table for models/simulation")
    trace.add_argument("jobs", help="a jobs.parquet written by 'gridtrace parse'")
    trace.add_argument("-o", "--out", required=True, help="output folder")
    trace.add_argument("--name", help="workload name (default: the site)")
    trace.add_argument(
        "--cores",
        type=int,
        help="the site's cores P (default: an SWF/GWF log's header MaxProcs, else MaxNodes; "
        "else the execution slots seen in records.parquet beside the jobs table, else the "
        "peak cores in use per host)",
    )
    trace.add_argument("--tau", type=float, default=900.0, help="interactive threshold, s")
    trace.add_argument("--keep-monitoring", action="store_true", help="keep dteam/ops probes")
    trace.add_argument(
        "--tz", help="the site's IANA time zone, kept in the trace for local-time profiles"
    )
    trace.set_defaults(run=_cmd_trace)


def add_segment(commands: Any) -> None:
    seg = commands.add_parser("segment", help="trace or jobs table -> stable segments")
    seg.add_argument("data", help="a trace .parquet, or a jobs.parquet from 'gridtrace parse'")
    seg.add_argument("-o", "--out", required=True, help="output folder")
    seg.add_argument("--jobs", help="with a trace: its jobs.parquet, for the pool's hosts")
    seg.add_argument("--cores", type=int, help="cores P for U and rho (default: per segment)")
    seg.add_argument("--tau", type=float, help="interactive threshold, s (default: the trace's)")
    seg.add_argument("--min-jobs", type=int, default=10_000, help="smallest segment, jobs")
    seg.add_argument("--block-jobs", type=int, default=500, help="jobs per feature block")
    seg.add_argument(
        "--utilisation", type=float, nargs=2, metavar=("LOW", "HIGH"), help="band for U"
    )
    seg.add_argument("--top", type=int, default=1, help="segment traces to write, best first")
    seg.add_argument("--name", help="file name prefix (default: the site)")
    seg.set_defaults(run=_cmd_segment)


def add_fit(commands: Any) -> None:
    fit = commands.add_parser("fit", help="trace -> workload model (JSON)")
    fit.add_argument("trace", help="a trace .parquet")
    fit.add_argument("-o", "--out", required=True, help="output folder (writes <name>.json)")
    fit.add_argument("--arrivals", choices=("auto", "poisson", "mmpp"), default="auto")
    fit.add_argument("--k-max", type=int, default=3, help="most MMPP phases tried (default 3)")
    fit.add_argument("--seed", type=int, default=0, help="seed of the randomised EM starts")
    fit.add_argument("--streams", choices=("site", "class", "vo"), default="site")
    fit.add_argument("--per-vo", action="store_true", help="runtime models per VO too")
    fit.add_argument("--name", help="model name (default: the trace file's stem)")
    fit.add_argument(
        "--replicas",
        type=int,
        default=20,
        help="model draws for the IDC/ACF band of the fit summary (default 20; 0: none)",
    )
    fit.set_defaults(run=_cmd_fit)


def add_synth(commands: Any) -> None:
    synth = commands.add_parser("synth", help="seed preset or fitted model -> synthetic trace")
    source = synth.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--preset", help="PE-1 ... PE-4, MMPP-1/2, MM50-20/40/50, DeepRM-10 ... DeepRM-180"
    )
    source.add_argument("--model", help="a model .json written by 'gridtrace fit'")
    synth.add_argument("--seed", type=int, required=True, help="root seed of the draw")
    synth.add_argument(
        "--jobs", "--size", dest="size", type=int, help="jobs to draw (presets: default their own)"
    )
    synth.add_argument("--horizon", type=float, help="with --model: draw jobs up to S seconds")
    synth.add_argument(
        "--time-unit", type=float, help="DeepRM presets: seconds per time step (default 1)"
    )
    synth.add_argument("--swf", action="store_true", help="also write an SWF file")
    synth.add_argument("--name", help="file name without .parquet")
    synth.add_argument("-o", "--out", required=True, help="output folder")
    synth.set_defaults(run=_cmd_synth)


def add_simulate(commands: Any) -> None:
    simulate = commands.add_parser("simulate", help="trace -> simulated schedule and metrics")
    simulate.add_argument("trace", help="a trace .parquet")
    simulate.add_argument("-o", "--out", required=True, help="output folder")
    simulate.add_argument("--policy", default="fifo", help="scheduling policy (default fifo)")
    simulate.add_argument(
        "--estimator",
        default="oracle",
        help="runtime estimator: oracle, median (class median) or walltime (default oracle)",
    )
    simulate.add_argument(
        "--seed", type=int, default=0, help="seed of the random policy, named in the output"
    )
    simulate.add_argument("--cores", type=int, help="cores P (default: the trace's)")
    simulate.add_argument("--vo-shares", help="JSON file of target VO shares (fairness)")
    simulate.add_argument("--warmup", type=int, default=500, help="jobs left out at the start")
    simulate.add_argument("--drain", type=int, default=500, help="jobs left out at the end")
    simulate.set_defaults(run=_cmd_simulate)


def add_rl(commands: Any) -> None:
    rl = commands.add_parser("rl", help="preset or trace -> RL experiment (runs + summary)")
    rl_source = rl.add_mutually_exclusive_group(required=True)
    rl_source.add_argument("--preset", help="a seed preset: fresh training and evaluation draws")
    rl_source.add_argument("--trace", help="a trace .parquet: split by time into train / evaluate")
    rl.add_argument("-o", "--out", required=True, help="output folder (runs.parquet, summary.json)")
    rl.add_argument("--experiment", choices=("scheduling", "egee"), default="scheduling")
    rl.add_argument("--seed", type=int, default=0, help="root seed of every stream (default 0)")
    rl.add_argument("--train-draws", type=int, default=2, help="training draws or episodes")
    rl.add_argument("--eval-seeds", type=int, default=10, help="evaluation seeds (default 10)")
    rl.add_argument(
        "--train-fraction", type=float, default=0.5, help="traces: share of time that trains"
    )
    rl.add_argument("--size", type=int, help="presets: jobs per draw (default the preset's)")
    rl.add_argument("--cores", type=int, help="traces: P (default the trace's)")
    rl.add_argument(
        "--vo-shares",
        help="JSON file of target VO shares (default: a preset's own, a trace's training part's)",
    )
    rl.add_argument("--targets", help="label of the VO-target setting, e.g. infeasible")
    rl.add_argument(
        "--rewards",
        default="w-f,slowdown",
        help="scheduler rewards of the RL variants, comma-separated: w-f (the research's) and "
        "slowdown (DeepRM's per-time penalty) (default: both)",
    )
    rl.add_argument("--published", help="key of the published numbers the setup matches")
    rl.add_argument("--name", help="workload name in outputs")
    rl.set_defaults(run=_cmd_rl)


def add_ppo(commands: Any) -> None:
    ppo = commands.add_parser(
        "ppo",
        help="PPO (stable-baselines3) on the multi-resource (DeepRM) or RLScheduler setup: "
        "train | evaluate",
    )
    ppo_commands = ppo.add_subparsers(dest="ppo_command", required=True)
    ppo_train = ppo_commands.add_parser("train", help="train MaskablePPO; save policy + config")
    ppo_train.add_argument("-o", "--out", required=True, help="folder for policy.zip, config.json")
    ppo_train.add_argument(
        "--setup",
        choices=("deeprm", "rlscheduler"),
        default="deeprm",
        help="deeprm: the multi-resource setup (default); rlscheduler: RLScheduler's PPO on "
        "an SWF trace (--trace)",
    )
    ppo_train.add_argument("--trace", action="append", help="rlscheduler: the SWF trace")
    ppo_train.add_argument("--backfill", action="store_true", help="rlscheduler: with backfilling")
    ppo_train.add_argument(
        "--trajectories", type=int, default=100, help="rlscheduler: episodes per update (100)"
    )
    ppo_train.add_argument(
        "--sequence", type=int, default=256, help="rlscheduler: jobs per episode (256)"
    )
    ppo_train.add_argument("--epochs", type=int, help="rlscheduler: passes per update (default 80)")
    ppo_train.add_argument(
        "--batch-size", type=int, help="rlscheduler: minibatch (default the whole rollout)"
    )
    ppo_train.add_argument(
        "--load", default="1.0", help="offered load (1.0 = 100 %%), or 'max' (184.5 %%)"
    )
    ppo_train.add_argument(
        "--timesteps",
        type=int,
        help="training budget in actions (deeprm 307200, rlscheduler 25600: one RLScheduler epoch)",
    )
    ppo_train.add_argument("--envs", type=int, default=24, help="actors (default 24)")
    ppo_train.add_argument("--vec-env", choices=("dummy", "subproc"), default="dummy")
    ppo_train.add_argument("--slots", type=int, default=5, help="visible queue slots")
    ppo_train.add_argument("--episode-steps", type=int, default=50, help="arrival steps")
    ppo_train.add_argument("--seed", type=int, default=0, help="sb3 seed (default 0)")
    ppo_train.add_argument("--device", default="auto", help="torch device (default auto)")
    ppo_eval = ppo_commands.add_parser(
        "evaluate", help="a trained policy vs SJF, Packer, Tetris, EASY, FIFO, random"
    )
    ppo_eval.add_argument("policy", help="a 'gridtrace ppo train' output folder")
    ppo_eval.add_argument("-o", "--out", required=True, help="folder for evaluation.json")
    ppo_eval.add_argument(
        "--setup",
        choices=("deeprm", "rlscheduler"),
        help="the policy's setup (default: read from its config.json)",
    )
    ppo_eval.add_argument(
        "--trace",
        action="append",
        help="rlscheduler: an SWF trace to evaluate on (repeat for generalisation)",
    )
    bf = ppo_eval.add_mutually_exclusive_group()
    bf.add_argument("--backfill", action="store_true", default=None, help="rlscheduler")
    bf.add_argument("--no-backfill", dest="backfill", action="store_false", help="rlscheduler")
    ppo_eval.add_argument(
        "--windows", type=int, default=10, help="rlscheduler: evaluation windows (10)"
    )
    ppo_eval.add_argument(
        "--window", type=int, default=1024, help="rlscheduler: jobs per window (1024)"
    )
    ppo_eval.add_argument(
        "--job-slice", type=int, default=0, help="rlscheduler: RLScheduler's batch_job_slice"
    )
    ppo_eval.add_argument(
        "--loads", help="comma-separated loads, 'max' allowed (default the training load)"
    )
    ppo_eval.add_argument("--sequences", type=int, default=10, help="job sequences per load")
    ppo_eval.add_argument(
        "--seed",
        type=int,
        default=1,
        help="seed of the evaluation sequences (rlscheduler: the windows' legacy gym seed)",
    )
    ppo_eval.add_argument("--device", default="auto", help="torch device (default auto)")
    ppo_report = ppo_commands.add_parser(
        "report", help="the report page of the rlscheduler setup from trained agents' folders"
    )
    ppo_report.add_argument(
        "agents", nargs="+", help="folders with config.json and evaluation.json"
    )
    ppo_report.add_argument("--setup", choices=("rlscheduler",), default="rlscheduler")
    ppo_report.add_argument("-o", "--out", required=True, help="the HTML page to write")
    ppo_report.add_argument("--entry", help="also write the index entry (JSON) here")
    ppo.set_defaults(run=_cmd_ppo)


def add_report(commands: Any) -> None:
    report = commands.add_parser("report", help="trace + simulation runs -> HTML report")
    report.add_argument("runs", nargs="+", help="sim/<workload>/<policy>/seed<n>.parquet files")
    report.add_argument("--trace", required=True, help="the workload's trace .parquet")
    report.add_argument("--workload", required=True, help="workload name")
    report.add_argument("-o", "--out", required=True, help="output folder (reports/<workload>)")
    report.add_argument(
        "--segments", help="a 'gridtrace segment' output folder (segments.parquet + .json)"
    )
    report.add_argument("--tz", help="IANA zone of the arrival profiles (default: the trace's)")
    report.set_defaults(run=_cmd_report)


def add_index(commands: Any) -> None:
    index = commands.add_parser("index", help="reports -> reports/index.html and reports/all")
    index.add_argument("figures", nargs="+", help="reports/<workload>/key-figures.json files")
    index.add_argument("-o", "--out", required=True, help="the reports folder")
    index.set_defaults(run=_cmd_index)
