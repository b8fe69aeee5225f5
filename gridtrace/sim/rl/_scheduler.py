"""The RL scheduling supervisor: SARSA over a Q approximator, one job per decision.

At each decision (a free core and waiting jobs) the supervisor builds the state vector s and the
action vector of every candidate job (:class:`~gridtrace.sim.rl.SchedulingFeatures`), evaluates
Q(s, a) for all candidates in one batched call, and elects the best one (ε-greedy). The engine asks
again at the same instant (``one_per_decision``), so every decision sees the state the previous one
left. The reward of a decision is paid when its job completes (a per-interval reward such as
:class:`~gridtrace.sim.rl.QueueSlowdownReward`: at the next decision); every ``refit_every``
decisions the Q approximator is refitted on the SARSA targets of the last ``window`` transitions
(:func:`~gridtrace.sim.rl.sarsa_refit`).

Candidates. With a static estimator (oracle, walltime) every waiting job is a candidate. With the
class-median estimator over (VO, interactive) classes, jobs of one class have the same action
vector (the runtime entry is the class median, and the wait is not a feature), so Q is evaluated
once per class and the class's oldest job that fits is the candidate: a decision costs
O(#classes), not O(queue). Any other estimator falls back to every waiting job.

Behaviour. ``behaviour="edf"`` elects by earliest deadline first instead of by Q while still
recording and learning: the research's pre-training; ``behaviour="sjf"`` elects by shortest
estimated runtime (ties: oldest), the best information-matched heuristic, in the same way.
``learning=False`` freezes Q (no refit) and ``epsilon`` can be set to 0 for a greedy evaluation.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from gridtrace.errors import ConfigError, SimulationError
from gridtrace.sim._estimators import ClassMedianEstimator
from gridtrace.sim.rl._features import SchedulingFeatures
from gridtrace.sim.rl._fitted_q import FittedQResult, fitted_q_iteration
from gridtrace.sim.rl._qfunctions import QFunction
from gridtrace.sim.rl._rewards import IntervalReward, Reward
from gridtrace.sim.rl._sarsa import sarsa_refit
from gridtrace.sim.rl._transitions import TransitionStore

if TYPE_CHECKING:
    from gridtrace.sim._engine import ClusterState, EventRun, JobRows, QueueView
    from gridtrace.sim._estimators import RuntimeEstimator

__all__ = ["SarsaScheduler"]

FloatArray = NDArray[np.float64]
Discounting = Literal["decision", "time"]
Credit = Literal["job", "interval"]

_DRAW_BATCH = 64  # ε draws handed to the jitted episode loop at a time


class SarsaScheduler:
    """The RL scheduling supervisor (a :class:`~gridtrace.sim.Policy`).

    Parameters
    ----------
    qfunction : QFunction
        The Q approximator (:class:`~gridtrace.sim.rl.MLPQ` or :class:`~gridtrace.sim.rl.ESNQ`),
        built for ``features.n_state`` and ``features.n_action``.
    features : SchedulingFeatures
        The state and action encoder.
    reward : Reward
        Paid when an elected job completes, or per interval between decisions for a reward with
        ``paid = "interval"`` (:class:`~gridtrace.sim.rl.QueueSlowdownReward`), whose value for
        the interval after a decision is paid to that decision.
    rng : numpy.random.Generator
        The exploration stream (ε-greedy draws).
    epsilon : float, default 0.05
        Exploration probability.
    gamma : float, default 0.8
        Discount per decision, or per ``time_unit_s`` with ``discounting="time"``.
    eta : float, default 0.2
        SARSA learning rate: targets move Q by η of the TD error.
    refit_every : int, default 500
        Decisions between batch refits.
    window : int, default 5000
        Most recent transitions a refit uses.
    discounting : {"decision", "time"}, default "decision"
        γ per decision, or γ^(Δt / time_unit_s) between decisions (semi-MDP).
    time_unit_s : float, default 900
        Time unit of semi-MDP discounting.
    learning : bool, default True
        Refit during runs (continuing learning); False freezes Q.
    behaviour : {"edf", "sjf"} or None, default None
        Elect by this rule instead of by Q (pre-training); see the module docstring. ``"sjf"``
        elects the candidate with the shortest estimated runtime, ties by the oldest.
    target_w : float, default 0.9
        W* of the EDF behaviour (deadline s + r̂ (1 − W*) / W*).
    keep_candidates : bool, default False
        Keep every candidate's input row (needed by :meth:`fit_offline`).
    credit : {"job", "interval"}, default "job"
        Which decision a job's reward is credited to: the decision that elected it (the
        research's definition), or the decision in force when it completes (the rewards of the
        jobs completing between two decisions are summed into the earlier one's reward).
    name : str, default "rl"
        Written into results.

    Attributes
    ----------
    decisions_ : int
        Decisions taken over all runs.
    refits_ : int
        Batch refits done.
    store_ : TransitionStore
        Every decision, its input row and its reward.
    """

    one_per_decision = True
    needs_free_core = True  # with no free core select() elects nothing: the engine skips the call

    def __init__(
        self,
        qfunction: QFunction,
        features: SchedulingFeatures,
        reward: Reward,
        *,
        rng: np.random.Generator,
        epsilon: float = 0.05,
        gamma: float = 0.8,
        eta: float = 0.2,
        refit_every: int = 500,
        window: int = 5000,
        discounting: Discounting = "decision",
        time_unit_s: float = 900.0,
        learning: bool = True,
        behaviour: Literal["edf", "sjf"] | None = None,
        target_w: float = 0.9,
        keep_candidates: bool = False,
        credit: Credit = "job",
        name: str = "rl",
    ) -> None:
        if qfunction.n_state != features.n_state or qfunction.n_action != features.n_action:
            raise ConfigError(
                f"the Q function expects {qfunction.n_state} state / {qfunction.n_action} action "
                f"entries, the features give {features.n_state} / {features.n_action}"
            )
        if not 0.0 <= epsilon <= 1.0:
            raise ConfigError(f"epsilon must be in [0, 1], got {epsilon}")
        if not (0.0 <= gamma <= 1.0 and 0.0 < eta <= 1.0):
            raise ConfigError(f"need 0 <= gamma <= 1 and 0 < eta <= 1, got {gamma}, {eta}")
        if refit_every < 1 or window < 1:
            raise ConfigError("refit_every and window must be >= 1")
        if discounting not in ("decision", "time"):
            raise ConfigError(f"discounting must be 'decision' or 'time', got {discounting!r}")
        if credit not in ("job", "interval"):
            raise ConfigError(f"credit must be 'job' or 'interval', got {credit!r}")
        if reward.paid not in ("job", "interval"):
            raise ConfigError(f"reward.paid must be 'job' or 'interval', got {reward.paid!r}")
        if reward.paid == "interval" and credit != "job":
            raise ConfigError(
                f"the {reward.name} reward is paid per interval already; credit={credit!r} "
                "applies to per-job rewards only"
            )
        if behaviour not in (None, "edf", "sjf"):
            raise ConfigError(f"behaviour must be None, 'edf' or 'sjf', got {behaviour!r}")
        if not 0.0 < target_w < 1.0:
            raise ConfigError(f"target_w must be in (0, 1), got {target_w}")
        self.qfunction = qfunction
        # the approximator's one-call decision (MLPQ, ESNQ), if it has one
        self._elect: (
            Callable[[FloatArray, FloatArray, int, FloatArray], tuple[int, float]] | None
        ) = getattr(qfunction, "elect", None)
        self.features = features
        self.reward = reward
        self.rng = rng
        self.epsilon = float(epsilon)
        self.gamma = float(gamma)
        self.eta = float(eta)
        self.refit_every = int(refit_every)
        self.window = int(window)
        self.discounting: Discounting = discounting
        self.time_unit_s = float(time_unit_s)
        self.learning = learning
        self.behaviour = behaviour
        self.target_w = float(target_w)
        self.credit: Credit = credit
        self._interval: IntervalReward | None = (
            cast("IntervalReward", reward) if reward.paid == "interval" else None
        )
        self._flow = 0.0
        self._last_index = -1
        self.name = name
        self.decisions_ = 0
        self.refits_ = 0
        self.store_ = TransitionStore(qfunction.n_inputs, keep_candidates=keep_candidates)
        self._state_vec = np.zeros(features.n_state, dtype=np.float64)
        # one tuple per decision: (time_s, row, q, explored, queue_length, candidates)
        self._log: list[tuple[float, int, float, bool, int, int]] = []
        self._pending: list[tuple[float, int, int, float]] = []
        self._bound = False
        self._actions = np.zeros((0, features.n_action), dtype=np.float64)
        self._cores_arr = np.zeros(0, dtype=np.int64)
        self._max_cores = 0
        self._run: Sequence[float] = ()
        self._submit: Sequence[float] = ()
        self._class_of: list[tuple[int, bool, int]] = []
        self._classes: dict[tuple[int, bool, int], deque[int]] = {}
        self._seen = 0
        self._mode: Literal["jobs", "classes"] = "jobs"

    # --- discounting ------------------------------------------------------------------------

    @property
    def _unit(self) -> float | None:
        return self.time_unit_s if self.discounting == "time" else None

    def describe(self) -> dict[str, Any]:
        """Return the supervisor's settings (written into results)."""
        return {
            "name": self.name,
            "qfunction": type(self.qfunction).__name__,
            "reward": self.reward.describe(),
            "epsilon": self.epsilon,
            "gamma": self.gamma,
            "eta": self.eta,
            "refit_every": self.refit_every,
            "window": self.window,
            "discounting": (
                "per decision"
                if self.discounting == "decision"
                else f"semi-MDP, gamma per {self.time_unit_s:g} s"
            ),
            "learning": self.learning,
            "behaviour": self.behaviour,
            "credit": self.credit,
            "decisions": self.decisions_,
            "refits": self.refits_,
        }

    # --- engine hooks -----------------------------------------------------------------------

    def reset(self, jobs: JobRows) -> None:
        """Start a run (episode) on ``jobs``: pay what the last run left, bind to the new jobs."""
        self._pay_all()
        self.store_.new_episode()
        self.qfunction.reset_state()
        self.reward.reset(jobs)
        feats = self.features
        slots = feats.slots(jobs.vo)
        interactive = (
            jobs.interactive if jobs.interactive is not None else [False] * len(jobs.run_s)
        )
        self._actions = feats.static_actions(interactive, slots, jobs.cores)
        self._cores_arr = np.asarray(jobs.cores, dtype=np.int64)
        self._max_cores = int(self._cores_arr.max()) if self._cores_arr.size else 0
        self._run = jobs.run_s
        self._submit = jobs.submit_s
        # a class is the estimator's (VO, interactive) class and the cores, keyed by the VO
        # itself: VOs that share the "other" feature slot have different class medians
        vo_code: dict[str | None, int] = {}
        self._class_of = [
            (vo_code.setdefault(v, len(vo_code)), bool(i), int(c))
            for v, i, c in zip(jobs.vo, interactive, jobs.cores, strict=True)
        ]
        self._classes = {}
        self._seen = 0
        self._bound = False
        self._pending = []

    def _bind(self, state: ClusterState) -> None:
        """Choose the candidate mode from the run's estimator (known at the first decision)."""
        est = state.estimator
        col = self.features.runtime_column
        if est.static:
            n = len(self._run)
            guesses = np.fromiter((est.estimate(r, 0.0) for r in range(n)), np.float64, count=n)
            self._actions[:, col] = self.features.runtime_feature(guesses)
            self._mode = "jobs"
        elif isinstance(est, ClassMedianEstimator) and set(est.by) <= {"vo", "interactive"}:
            self._mode = "classes"
        else:
            self._mode = "jobs"
        self._bound = True

    def select(self, queue: QueueView, state: ClusterState, now: float) -> list[int]:
        """Elect one job (or none if nothing fits); see the module docstring."""
        if not self._bound:
            self._bind(state)
        if self._pending and self._pending[0][0] <= now:
            self._pay_until(now)
        free = state.free_cores
        if free <= 0:
            return []
        rows: Sequence[int] | NDArray[np.int64]
        if self._mode == "classes":
            rows, actions = self._class_candidates(queue, state, free)
        else:
            rows, actions = self._job_candidates(queue, state, free)
        k = len(rows)
        if k == 0:
            return []
        s = self.features.state(state, self._state_vec)
        qf = self.qfunction
        store = self.store_
        explored = False
        q_chosen = math.nan
        chosen = -1  # elect by Q
        if self.behaviour == "edf":
            chosen = self._edf_choice(rows, actions)
        elif self.behaviour == "sjf":
            chosen = self._sjf_choice(rows, actions)
        elif self.epsilon > 0.0 and self.rng.random() < self.epsilon:
            chosen = int(self.rng.integers(k))
            explored = True
        elect = self._elect
        if elect is not None and not store.keep_candidates:
            # one jitted call: Q of the candidates, the choice, its input row, the commit
            index = store.reserve(now)
            i, q_i = elect(s, actions, chosen, store.inputs[index])
            if chosen < 0:
                q_chosen = q_i
        else:
            if chosen >= 0:
                i = chosen
            else:
                q = qf.q_candidates(s, actions)
                i = int(np.argmax(q))
                q_chosen = float(q[i])
            if store.keep_candidates:
                cand = qf.candidate_inputs(s, actions)
                x = cand[i]
            else:
                cand = None
                x = qf.candidate_inputs(s, actions[i : i + 1])[0]
            qf.commit(s, actions[i])
            index = store.add(x, now, cand)
        row = int(rows[i])
        if self._interval is not None:
            # the penalty since the previous decision, taken before this election ends a wait
            value = self._interval.advance(queue.arrived, now)
            if self._last_index >= 0:
                self.store_.pay(self._last_index, value)
            self._last_index = index
        elif self.credit == "interval":
            if self._last_index >= 0:
                self.store_.pay(self._last_index, self._flow)
            self._flow = 0.0
            self._last_index = index
        note = self.reward.elect(row, now)
        if self._interval is None:
            heapq.heappush(self._pending, (now + self._run[row], index, row, note))
        if self._mode == "classes":
            self._classes[self._class_of[row]].remove(row)
        self._log.append((now, row, q_chosen, explored, len(queue), k))
        self.decisions_ += 1
        if self.learning and self.decisions_ % self.refit_every == 0:
            self.refit()
        return [row]

    # --- the jitted episode loop ----------------------------------------------------------------

    def run_episode(
        self, jobs: JobRows, total_cores: int, estimator: RuntimeEstimator
    ) -> EventRun | None:
        """Run a whole episode in the jitted loop, or return None where it does not apply.

        Called by :func:`~gridtrace.sim.run_events` after :meth:`reset`, for a fixed pool. The
        loop (:func:`gridtrace.sim.rl._jit.sarsa_episode`) covers an :class:`MLPQ` or
        :class:`ESNQ` agent with a static estimator or the class-median estimator over
        (VO, interactive) (class candidates; its source counts added), no deficit features,
        the :class:`~gridtrace.sim.rl.ResponsivenessFairnessReward` or
        :class:`~gridtrace.sim.rl.TimeUtilityReward` credited per job or the (interactive)
        slowdown penalty paid per interval, and no behaviour rule or ``"sjf"``; it takes the
        same decisions as :meth:`select` through the general event loop (the same ε draws
        from ``rng``, the same floats in the same order), writes the same transitions, rewards
        and decision log, and returns to Python only to draw an explored index and to refit.
        Anything else returns None (the caller runs the general loop).
        """
        from gridtrace.sim._engine import EventRun
        from gridtrace.sim.rl._qfunctions import ESNQ, MLPQ
        from gridtrace.sim.rl._rewards import (
            InteractiveSlowdownReward,
            QueueSlowdownReward,
            ResponsivenessFairnessReward,
            TimeUtilityReward,
        )

        reward = self.reward
        qf = self.qfunction
        feats = self.features
        rkinds = {
            ResponsivenessFairnessReward: 0,
            TimeUtilityReward: 1,
            QueueSlowdownReward: 2,
            InteractiveSlowdownReward: 2,
        }
        if not (
            type(qf) in (MLPQ, ESNQ)
            and type(reward) in rkinds
            and self.credit == "job"
            and self.behaviour in (None, "sjf")
            and feats.vo_targets is None
            and not self.store_.keep_candidates
        ):
            return None
        dynamic = not estimator.static
        if dynamic and not (
            type(estimator) is ClassMedianEstimator and set(estimator.by) <= {"vo", "interactive"}
        ):
            return None
        from gridtrace.sim.rl import _jit

        no_f = np.zeros(0, dtype=np.float64)
        no_f2 = np.zeros((0, 0), dtype=np.float64)
        no_i = np.zeros(0, dtype=np.int64)
        if type(qf) is MLPQ:
            qkind, theta, hidden, leak = _jit.Q_MLP, qf._theta, qf.hidden, 0.0
            esn: tuple[Any, ...] = (
                no_f, no_f2, no_f2, no_f2, no_f, np.zeros(0, dtype=np.intp), no_f, no_i, no_i,
                no_f, no_f2, no_f,
            )  # fmt: skip
        else:
            esn_q = cast("ESNQ", qf)
            qkind, theta, hidden, leak = _jit.Q_ESN, no_f, 0, esn_q.leak_rate
            esn = esn_q.elect_arrays()
        n = len(jobs.run_s)
        estimator.reset(jobs)
        if dynamic:
            # ClassMedianEstimator's windows in flat arrays: one per class of its `by` columns,
            # then the window of all classes; class candidates as _class_candidates keys them
            med = cast("ClassMedianEstimator", estimator)
            estimate = np.zeros(0, dtype=np.float64)
            by_cols = [
                getattr(jobs, name) if getattr(jobs, name) is not None else [None] * n
                for name in med.by
            ]
            keys: dict[Any, int] = {}
            est_class = np.fromiter(
                (keys.setdefault(key, len(keys)) for key in zip(*by_cols, strict=True)),
                np.int64,
                count=n,
            )
            sizes = np.bincount(est_class, minlength=len(keys)).astype(np.int64)
            est_off = np.zeros(len(keys) + 2, dtype=np.int64)
            est_off[1:-1] = np.cumsum(sizes)
            est_off[-1] = est_off[-2] + n
            est_p = np.asarray([med.window_s, med.prior_s], dtype=np.float64)
            est_i = np.zeros(3 * (len(keys) + 1), dtype=np.int64)
            win_end = np.zeros(2 * n, dtype=np.float64)
            win_run = np.zeros(2 * n, dtype=np.float64)
            win_sorted = np.zeros(2 * n, dtype=np.float64)
            sources = np.zeros(3, dtype=np.int64)
            cls: dict[tuple[int, bool, int], int] = {}
            sched_class = np.fromiter(
                (cls.setdefault(key, len(cls)) for key in self._class_of), np.int64, count=n
            )
            class_cores = np.asarray([key[2] for key in cls], dtype=np.int64)
            cq_off = np.zeros(len(cls) + 1, dtype=np.int64)
            cq_off[1:] = np.cumsum(np.bincount(sched_class, minlength=len(cls)))
            cq_buf = np.zeros(n, dtype=np.int64)
            cq_ht = np.zeros(2 * len(cls), dtype=np.int64)
            self._mode = "classes"
        else:
            estimate = np.fromiter(
                (estimator.estimate(r, 0.0) for r in range(n)), np.float64, count=n
            )
            # as _bind() for a static estimator: the runtime entry of every action row, once
            self._actions[:, feats.runtime_column] = feats.runtime_feature(estimate)
            est_class = sched_class = class_cores = cq_buf = cq_off = cq_ht = est_off = est_i = (
                np.zeros(0, dtype=np.int64)
            )
            est_p = win_end = win_run = win_sorted = np.zeros(0, dtype=np.float64)
            sources = np.zeros(3, dtype=np.int64)
            self._mode = "jobs"
        self._bound = True
        submit = np.asarray(jobs.submit_s, dtype=np.float64)
        run = np.asarray(jobs.run_s, dtype=np.float64)
        cores = np.asarray(jobs.cores, dtype=np.int64)
        codes: dict[str | None, int] = {}
        vo_code = np.fromiter((codes.setdefault(v, len(codes)) for v in jobs.vo), np.int64, count=n)
        code_slot = np.asarray([feats.slot(v) for v in codes], dtype=np.int64)
        rkind = rkinds[type(reward)]
        r_cost = np.zeros(0, dtype=np.float64)
        r_inter = np.zeros(0, dtype=np.int64)
        r_p = np.zeros(4, dtype=np.float64)
        lambda_s, w_max = 1.0, 1.0
        if isinstance(reward, ResponsivenessFairnessReward):
            reward_vo = np.asarray(reward._vo, dtype=np.int64)
            targets = np.asarray(reward._w, dtype=np.float64)
            lambda_s, w_max = reward.lambda_s, reward._w_max
        else:
            reward_vo = np.full(n, -1, dtype=np.int64)
            targets = np.zeros(0, dtype=np.float64)
            if isinstance(reward, QueueSlowdownReward):
                r_cost = np.asarray(reward._cost, dtype=np.float64)
            elif isinstance(reward, TimeUtilityReward):
                r_inter = np.asarray(reward._interactive, dtype=np.int64)
                r_p[:] = [reward.alpha, reward.beta, reward.sigma_s, reward.time_unit_s]
        params = np.asarray(
            [
                self.epsilon,
                lambda_s,
                w_max,
                float(feats.pool_cores),
                feats.tau_s,
                feats.horizon_s,
            ],
            dtype=np.float64,
        )
        store = self.store_
        while store.inputs.shape[0] < store.size + n:
            store._grow()
        base = store.size
        ist = np.zeros(_jit.EPISODE_INT_SLOTS, dtype=np.int64)
        ist[_jit._I_DEC] = self.decisions_
        ist[_jit._I_STORE] = base
        ist[_jit._I_FIRST] = -1
        ist[_jit._I_LAST] = -1
        fst = np.zeros(_jit.EPISODE_FLOAT_SLOTS, dtype=np.float64)
        fst[_jit._F_LAST] = math.nan
        actions = np.ascontiguousarray(self._actions)
        run_keys = np.zeros(n, dtype=np.float64)
        run_rows = np.zeros(n, dtype=np.int64)
        running = np.zeros(n, dtype=np.int64)
        est_end = np.zeros(n, dtype=np.float64)
        backlog_of = np.zeros(n, dtype=np.float64)
        queue = np.zeros(n, dtype=np.int64)
        vo_count = np.zeros(len(codes), dtype=np.int64)
        vo_order = np.zeros(len(codes), dtype=np.int64)
        pend_keys = np.zeros(n, dtype=np.float64)
        pend_ids = np.zeros(n, dtype=np.int64)
        pend_note = np.zeros(n, dtype=np.float64)
        pend_row = np.zeros(n, dtype=np.int64)
        served = np.zeros(targets.size, dtype=np.float64)
        s = self._state_vec
        cand_rows = np.zeros(n, dtype=np.int64)
        cand = np.zeros((n, feats.n_action), dtype=np.float64)
        start = np.full(n, np.nan, dtype=np.float64)
        elected = np.zeros(n, dtype=np.int64)
        log_f = np.zeros(2 * n, dtype=np.float64)
        log_i = np.zeros(4 * n, dtype=np.int64)
        rng = self.rng
        bits = rng.bit_generator
        eps = self.epsilon
        no_draws = np.zeros(0, dtype=np.float64)

        saved: list[Mapping[str, Any]] = []

        def fresh_draws() -> NDArray[np.float64]:
            # the next draws of the ε test, up to and including the first that explores, so
            # that the generator is where select()'s rng.random() calls would have left it
            if eps <= 0.0:
                return no_draws
            saved[:] = [bits.state]
            draws = rng.random(_DRAW_BATCH)
            hit = np.flatnonzero(draws < eps)
            if hit.size:
                bits.state = saved[0]
                draws = rng.random(int(hit[0]) + 1)
            return draws

        def rewind(draws: NDArray[np.float64]) -> None:
            # give back the draws the episode did not use
            used = int(ist[_jit._I_UPOS])
            if used < draws.size:
                bits.state = saved[0]
                rng.random(used)

        draws = fresh_draws()
        forced = -1
        while True:
            status = _jit.sarsa_episode(
                submit, run, cores, estimate, vo_code, code_slot, reward_vo, actions, dynamic,
                est_class, est_p, est_off, est_i, win_end, win_run, win_sorted, sources,
                dynamic, feats.runtime_column, sched_class, class_cores, cq_buf, cq_off, cq_ht,
                int(total_cores), params, targets, self.behaviour == "sjf", rkind, r_cost,
                r_inter, r_p, qkind, theta, hidden, esn[0], esn[1], esn[2], esn[3], esn[4],
                esn[5], esn[6], leak, esn[7], esn[8], esn[9], esn[10], esn[11],
                draws, forced,
                self.refit_every, self.learning, store.current_episode, ist, fst,
                run_keys, run_rows, running, est_end, backlog_of, queue, vo_count, vo_order,
                pend_keys, pend_ids, pend_note, pend_row, base, served, s, cand_rows, cand,
                start, elected, store.inputs, store.reward, store.ready, store.time,
                store.episode, log_f, log_i,
            )  # fmt: skip
            forced = -1
            store.size = int(ist[_jit._I_STORE])
            self.decisions_ = int(ist[_jit._I_DEC])
            if dynamic:
                src = cast("ClassMedianEstimator", estimator).sources
                for name, count in zip(("class", "all", "prior"), sources.tolist(), strict=True):
                    src[name] += count
                sources[:] = 0
            if status == _jit.EPISODE_DONE:
                rewind(draws)
                break
            if status == _jit.EPISODE_NEED_DRAWS:
                draws = fresh_draws()
                ist[_jit._I_UPOS] = 0
            elif status == _jit.EPISODE_EXPLORE:
                forced = int(rng.integers(int(ist[_jit._I_K])))
                draws = fresh_draws()
                ist[_jit._I_UPOS] = 0
            elif status == _jit.EPISODE_REFIT:
                self.refit()
            else:
                rewind(draws)
                self._finish_episode(ist, log_f, log_i, pend_keys, pend_ids, pend_note, pend_row,
                                     base, served, float(fst[_jit._F_TOTAL]), fst)  # fmt: skip
                raise SimulationError(
                    f"policy {self.name!r} left {int(ist[_jit._I_NQ])} job(s) queued on an idle "
                    f"cluster with no arrival to come (pool {total_cores})"
                )
        self._finish_episode(ist, log_f, log_i, pend_keys, pend_ids, pend_note, pend_row, base,
                             served, float(fst[_jit._F_TOTAL]), fst)  # fmt: skip
        d = int(ist[_jit._I_LOG])
        pool = [(float(fst[_jit._F_FIRST]), int(total_cores))] if n else []
        return EventRun(start.tolist(), elected[:d].tolist(), pool)

    def _finish_episode(
        self,
        ist: NDArray[np.int64],
        log_f: NDArray[np.float64],
        log_i: NDArray[np.int64],
        pend_keys: NDArray[np.float64],
        pend_ids: NDArray[np.int64],
        pend_note: NDArray[np.float64],
        pend_row: NDArray[np.int64],
        base: int,
        served: NDArray[np.float64],
        total: float,
        fst: NDArray[np.float64],
    ) -> None:
        # hand back what select() would have left: the decision log, the rewards still owed
        # (paid by the next reset or finish, as select() leaves them) and the reward's service
        from gridtrace.sim.rl import _jit

        d = int(ist[_jit._I_LOG])
        times = log_f[0 : 2 * d : 2].tolist()
        qs = log_f[1 : 2 * d : 2].tolist()
        li = log_i[: 4 * d].reshape(d, 4).tolist()
        self._log.extend(
            (t, r, q, bool(e), ql, k) for t, q, (r, e, ql, k) in zip(times, qs, li, strict=True)
        )
        m = int(ist[_jit._I_NPEND])
        self._pending = [
            (float(pend_keys[j]), int(pend_ids[j]), int(pend_row[pend_ids[j] - base]),
             float(pend_note[pend_ids[j] - base]))
            for j in range(m)
        ]  # fmt: skip
        heapq.heapify(self._pending)
        reward = cast("Any", self.reward)
        if self._interval is not None:
            # QueueSlowdownReward's state; the last decision is paid by the next reset or finish
            reward._rate = float(fst[_jit._F_RATE])
            reward._last = float(fst[_jit._F_LAST])
            reward._seen = int(ist[_jit._I_SEEN])
            self._last_index = int(ist[_jit._I_LAST])
        elif hasattr(reward, "_served"):
            reward._served = served.tolist()
            reward._total = total

    # --- candidates ---------------------------------------------------------------------------

    def _job_candidates(
        self, queue: QueueView, state: ClusterState, free: int
    ) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        rows = np.fromiter(queue, dtype=np.int64, count=len(queue))
        if self._max_cores > free:  # some job of the run may not fit now
            rows = rows[self._cores_arr[rows] <= free]
        actions = self._actions[rows]
        if not state.estimator.static and rows.size:
            estimate = state.estimate
            guesses = np.fromiter((estimate(int(r)) for r in rows), np.float64, count=rows.size)
            actions[:, self.features.runtime_column] = self.features.runtime_feature(guesses)
        return rows, actions

    def _class_candidates(
        self, queue: QueueView, state: ClusterState, free: int
    ) -> tuple[list[int], NDArray[np.float64]]:
        classes = self._classes
        class_of = self._class_of
        for row in range(self._seen, queue.arrived):
            key = class_of[row]
            bucket = classes.get(key)
            if bucket is None:
                classes[key] = bucket = deque()
            bucket.append(row)
        self._seen = queue.arrived
        rows: list[int] = []
        for key, bucket in classes.items():
            if bucket and key[2] <= free:
                rows.append(bucket[0])
        if not rows:
            return rows, self._actions[:0]
        rows.sort()
        actions = self._actions[rows]
        estimate = state.estimate
        col = self.features.runtime_column
        tau = self.features.tau_s
        # runtime_feature, by the scalar log1p that the jitted loop uses (numpy's vectorised
        # log1p can differ from it in the last bit)
        for t, r in enumerate(rows):
            actions[t, col] = math.log1p(max(estimate(r), 0.0) / tau)
        return rows, actions

    def _edf_choice(
        self, rows: Sequence[int] | NDArray[np.int64], actions: NDArray[np.float64]
    ) -> int:
        # deadline s + r̂ (1 − W*) / W*, with r̂ read back from the action's runtime entry
        w = self.target_w
        runtime = np.expm1(actions[:, self.features.runtime_column]) * self.features.tau_s
        submit = np.asarray([self._submit[int(r)] for r in rows], dtype=np.float64)
        deadline = submit + runtime * (1.0 - w) / w
        return int(np.argmin(deadline))

    def _sjf_choice(
        self, rows: Sequence[int] | NDArray[np.int64], actions: NDArray[np.float64]
    ) -> int:
        # shortest estimate (the runtime entry is monotone in r̂), ties by (submit, row)
        runtime = actions[:, self.features.runtime_column]
        order = np.asarray(rows, dtype=np.int64)
        submit = np.asarray([self._submit[int(r)] for r in order], dtype=np.float64)
        return int(np.lexsort((order, submit, runtime))[0])

    # --- rewards and learning -------------------------------------------------------------------

    def _pay_until(self, now: float) -> None:
        pending = self._pending
        reward = self.reward
        store = self.store_
        per_job = self.credit == "job"
        while pending and pending[0][0] <= now:
            end, index, row, note = heapq.heappop(pending)
            value = reward.complete(row, end - self._run[row], note)
            if per_job:
                store.pay(index, value)
            else:
                self._flow += value

    def _pay_all(self) -> None:
        if self._pending:
            self._pay_until(math.inf)
        if self._last_index >= 0:
            # the last decision gets the completions since it (credit="interval"); a per-interval
            # reward owes it nothing more, as the episode's last election empties the queue
            self.store_.pay(self._last_index, self._flow)
            self._flow = 0.0
            self._last_index = -1

    def refit(self) -> int:
        """Refit Q on the SARSA targets of the recent transitions; return the rows used."""
        used = sarsa_refit(
            self.qfunction,
            self.store_,
            window=self.window,
            eta=self.eta,
            gamma=self.gamma,
            time_unit_s=self._unit,
        )
        if used:
            self.refits_ += 1
        return used

    def finish(self) -> None:
        """Pay the rewards of the last run's jobs (all have completed when a run ends)."""
        self._pay_all()

    def fit_offline(self, iterations: int = 20) -> FittedQResult:
        """Fit Q by fitted-Q iteration over every transition kept, in arrival order.

        Needs ``keep_candidates=True``. Each transition's target bootstraps from the maximum of
        Q over the candidates of the next decision of the same episode (the last decision of an
        episode is terminal).

        Returns
        -------
        FittedQResult
            Per-iteration diagnostics (:func:`~gridtrace.sim.rl.fitted_q_iteration`).
        """
        if not self.store_.keep_candidates:
            raise ConfigError("fit_offline needs keep_candidates=True while collecting")
        self._pay_all()
        store = self.store_
        n = store.size
        index = np.flatnonzero(store.ready[:n]).astype(np.int64)
        if index.size == 0:
            raise ConfigError("no transition with a known reward to fit")
        nxt, has_next = store.successors(index)
        rows, offsets = store.candidates_csr(n)
        # the next decision's candidate block of each transition; an empty block is terminal
        starts = np.where(has_next, offsets[nxt], 0)
        stops = np.where(has_next, offsets[np.minimum(nxt + 1, n)], 0)
        next_offsets = np.zeros(index.size + 1, dtype=np.int64)
        next_offsets[1:] = np.cumsum(stops - starts)
        take = np.concatenate(
            [np.arange(0, dtype=np.int64)]
            + [np.arange(a, b, dtype=np.int64) for a, b in zip(starts, stops, strict=True)]
        )
        discounts = store.discounts(index, nxt, self.gamma, self._unit)
        return fitted_q_iteration(
            self.qfunction,
            store.inputs[index],
            store.reward[index],
            discounts,
            rows[take],
            next_offsets,
            iterations=iterations,
        )

    def decision_log(self) -> pa.Table:
        """Return the decision log as a table.

        One row per decision: time, row, Q of the elected job (NaN when explored or elected by
        the behaviour rule), whether it was explored, queue length and candidates evaluated.
        """
        columns: list[list[Any]] = (
            [list(c) for c in zip(*self._log, strict=True)] if self._log else [[]] * len(_LOG)
        )
        return pa.table(
            {name: pa.array(col, kind) for (name, kind), col in zip(_LOG, columns, strict=True)}
        )

    def clear_log(self) -> None:
        """Forget the decision log (e.g. between training and evaluation)."""
        self._log = []


# the decision log's columns, in the order of the tuples select() appends
_LOG = (
    ("time_s", pa.float64()),
    ("row", pa.int64()),
    ("q", pa.float64()),
    ("explored", pa.bool_()),
    ("queue_length", pa.int32()),
    ("candidates", pa.int32()),
)
