"""The reports' glossary: every abbreviation and piece of jargon, and policy names explained.

:data:`GLOSSARY` is shown at the end of every page; :func:`abbr` wraps a term in
``<abbr title="...">`` (a hover explanation) and :func:`policy_title` explains a policy or RL
variant name such as ``rig-est-0.5 (frozen)``, built from its parts.
"""

from __future__ import annotations

import re

from markupsafe import Markup, escape

__all__ = ["GLOSSARY", "NAMES", "POLICIES", "abbr", "gloss_policy", "policy_title"]

GLOSSARY: dict[str, str] = {
    "P": "the site's cores: the pool the jobs are replayed on",
    "τ": "the interactive threshold: a job with runtime ≤ τ is interactive, else batch",
    "λ": "the arrival rate (jobs per hour or per second)",
    "U": "utilisation factor: mean runtime / mean inter-arrival time / P (offered load of "
    "single-core jobs); a simulated U is the busy share of the P cores",
    "ρ": "core-weighted load: E[run · cores] / mean inter-arrival time / P",
    "W": "responsiveness of a job: run / (run + wait), 1 when it did not wait, near 0 when it "
    "waited much longer than it ran",
    "F": "fairness: how close each VO's share of the service is to its target share (1: exact)",
    "E[S]": "mean service (run) time of the jobs",
    "VO": "virtual organisation: the community a grid job is run for (atlas, cms, ...)",
    "CDF": "cumulative distribution function: the share of values at or below x",
    "Q-Q": "quantile-quantile plot: quantiles of one sample against those of another",
    "IDC": "index of dispersion for counts: Var N(t) / E N(t) of the arrivals in windows of "
    "length t; 1 for Poisson arrivals, above 1 for bursty ones",
    "ACF": "autocorrelation function of the inter-arrival times at lag k",
    "MMPP": "Markov-modulated Poisson process: Poisson arrivals whose rate switches between k "
    "states",
    "BIC": "Bayesian information criterion: −2 log-likelihood + parameters · log n (lower is "
    "better)",
    "KS": "Kolmogorov-Smirnov distance D: the largest gap between two CDFs",
    "A²": "Anderson-Darling statistic: a distance between CDFs that weighs the tails",
    "bsld": "bounded slowdown: (wait + run) / max(run, 10 s), at least 1",
    "warm-up / drain": "the first and last jobs of a run, left out of the statistics because "
    "the queue is still filling or emptying",
    "frozen": "an RL agent evaluated with learning off and no exploration (ε 0)",
    "continuing": "an RL agent evaluated while it keeps learning (ε 0.05)",
    "n": "the number of values behind a mean or interval (seeds, windows or jobs, as said)",
    "[low, high]": "95 % interval of a mean: an expanded percentile bootstrap over the seeds "
    "(or test windows), inside the values' range and so inside the metric's (W and F in "
    "[0, 1]); with 2–4 values it is their range",
    "RL margin": "the RL agent's mean minus the best baseline's on the same seeds or windows "
    "(paired); positive: RL better; 'within noise' when its interval holds 0",
    "reproduced": "a published number that lies inside our 95 % interval of the same quantity",
    "seed set": "the runs a number comes from: the Scheduling section's seeds, or the RL "
    "experiment's evaluation seeds (its baselines run again on those); the same policy "
    "differs between the two",
}

POLICIES: dict[str, str] = {
    "fifo": "strict first-in first-out",
    "sjf": "shortest job first, with the exact runtimes (an oracle)",
    "sjf-est": "shortest job first on estimated runtimes (the median of the job's VO and class)",
    "hrrn": "highest response ratio next: (wait + runtime) / runtime, exact runtimes",
    "hrrn-est": "highest response ratio next on estimated runtimes",
    "edf": "earliest deadline first",
    "easy": "EASY backfilling: FIFO, with later jobs started early when they end before the "
    "first job's reservation (exact runtimes)",
    "easy-est": "EASY backfilling on estimated runtimes",
    "fairshare": "fair share: the VO furthest below its target share goes first",
    "native": "the site's own scheduler, as logged",
    "threshold": "a threshold autoscaler of the elastic pool: it adds cores while utilisation is "
    "above its band and removes them below it, a step at a time with a cooldown",
    "static-best": "the best fixed pool size for the provisioning objective (weight λe), chosen "
    "in hindsight on the test period: an oracle, not a policy",
    "rl-elastic": "the RL scheduler with the RL provisioner sizing the pool",
    "rl": "the reinforcement-learning scheduler",
}
NAMES: dict[str, str] = {
    **POLICIES,
    "rl-mlp, rl-esn": "the RL scheduler (SARSA) with a multilayer-perceptron or echo-state-network "
    "Q-function, exact runtimes, rewarded λs W + (1 − λs) F",
    "rig-ora-<λs>, rig-est-<λs>": "the RL scheduler on the rigid pool of P cores; the number "
    "(0, 0.5, 1, ...) is the reward weight λs on W (1 − λs on F)",
    "ela-ora-<λe>, ela-est-<λe>": "the RL scheduler plus elastic provisioning (the pool grows and "
    "shrinks between a floor and a ceiling); the number is the provisioning weight λe",
    "-ora / -est": "the policy sees the exact runtimes (oracle) / estimated ones (the median of "
    "the job's VO and class)",
    "…-slowdown": "a variant paid the per-time slowdown penalty instead of the research's W/F "
    "reward",
    "(frozen) / (continuing)": "evaluated with learning off / while still learning",
}
_RL_Q = {"mlp": "a multilayer-perceptron Q-function", "esn": "an echo-state-network Q-function"}
_RUNTIMES = {"ora": "exact (oracle) runtimes", "est": "estimated runtimes"}
_RL_VARIANT = re.compile(r"^(rig|ela)-(ora|est)-(.+)$")
_RL_KIND = re.compile(r"^rl-(mlp|esn)(-slowdown)?$")
_MODE = re.compile(r"^(.*?)\s*\((frozen|continuing)\)$")


def _variant_title(name: str) -> str | None:
    if name in POLICIES:
        return POLICIES[name]
    found = _RL_KIND.match(name)
    if found:
        q, slowdown = found.groups()
        reward = (
            "paid the per-time slowdown penalty"
            if slowdown
            else "rewarded λs W + (1 − λs) F (the research's reward)"
        )
        return f"RL scheduler with {_RL_Q[q]}, exact runtimes, {reward}"
    found = _RL_VARIANT.match(name)
    if found:
        pool, runtimes, last = found.groups()
        if last == "slowdown":
            tail = "paid the per-time slowdown penalty"
        elif pool == "rig":
            tail = f"reward weight λs = {last} on W (1 − λs on F)"
        else:
            tail = f"pool weight λe = {last} (utilisation against responsiveness)"
        if pool == "rig":
            return f"RL scheduler on the rigid pool of P cores, {_RUNTIMES[runtimes]}, {tail}"
        return (
            f"RL scheduler plus elastic provisioning (the pool grows and shrinks), "
            f"{_RUNTIMES[runtimes]}, {tail}"
        )
    return None


def policy_title(label: str) -> str | None:
    """Explain a policy or RL variant label (``"rig-est-0.5 (frozen)"``), or None if unknown."""
    mode = None
    found = _MODE.match(label)
    if found:
        label, mode = found.groups()
    title = _variant_title(label)
    if title is None:
        return None
    return f"{title}; {GLOSSARY[mode]}" if mode else title


def abbr(term: str, text: str | None = None) -> Markup:
    """``<abbr title>`` around ``text`` (default ``term``) with the glossary's explanation."""
    shown = term if text is None else text
    title = GLOSSARY.get(term) or POLICIES.get(term)
    if title is None:
        return escape(shown)
    return Markup('<abbr title="{}">{}</abbr>').format(title, shown)


def gloss_policy(label: object) -> Markup:
    """Return a policy label, explained on hover when it is known (escaped either way)."""
    text = str(label)
    title = policy_title(text)
    if title is None:
        return escape(text)
    return Markup('<abbr title="{}">{}</abbr>').format(title, text)
