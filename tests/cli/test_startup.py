"""``gridtrace parse`` of a small TORQUE file starts fast: it leaves the heavy modules unimported.

A small input takes the pure-Python path (:mod:`gridtrace.logs._small_parse`), which imports
neither numpy nor pyarrow; a larger one the Arrow path, which still leaves the others out.

Run in a fresh interpreter (a subprocess), since the test process has imported everything.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq

ARROW_PATH_HEAVY = (
    "pandas",
    "numba",
    "scipy",
    "dask",
    "distributed",
    "statsmodels",
    "matplotlib",
    "hmmlearn",
    "jinja2",
    "sklearn",
    "gymnasium",
    "pyarrow.acero",  # a group-by loads it (counting flags needs none)
    "importlib.metadata",  # the plugin formats' entry points (a TORQUE file needs none)
    "numpy.ma",  # pa.array of a numpy array and a plain np.unique import it (~30 ms)
    "gridtrace.logs._spill",  # the out-of-core path: a small input is read in memory (~20 ms)
)
HEAVY = ("numpy", "pyarrow", *ARROW_PATH_HEAVY)  # the small path's: pure Python

LINES = (
    "05/03/2024 10:00:00;Q;202.pbs01;queue=grid\n"
    "05/03/2024 10:05:00;D;202.pbs01;requestor=alice@ui01\n"
    "05/03/2024 12:00:00;S;200.pbs01;user=bob group=cms queue=grid ctime=1714730000 "
    "qtime=1714730000 etime=1714730000 start=1714730100 exec_host=n002/0-3 "
    "Resource_List.nodes=1:ppn=4\n"
    "05/03/2024 12:00:00;E;200.pbs01;user=bob group=cms queue=grid ctime=1714730000 "
    "qtime=1714730000 etime=1714730000 start=1714730100 exec_host=n002/0-3 end=1714737600 "
    "Exit_status=0 resources_used.walltime=02:05:00 total_execution_slots=4\n"
)

_RUN = """
import json, runpy, sys
SMALL_OFF
already = set(sys.modules)  # what the interpreter itself loaded (site hooks may differ)
sys.argv = ["gridtrace", *sys.argv[1:]]
try:
    runpy.run_module("gridtrace", run_name="__main__")
except SystemExit as stop:
    code = stop.code
else:
    code = 0
loaded = [m for m in json.loads(HEAVY) if m in sys.modules and m not in already]
print(json.dumps({"code": code, "loaded": loaded}))
"""


def _parse_in_fresh_process(*args: str, small: bool = True) -> dict[str, object]:
    script = _RUN.replace("HEAVY", repr(json.dumps(HEAVY if small else ARROW_PATH_HEAVY)))
    off = "import gridtrace.logs._small_parse as s; s.SMALL_PARSE_BYTES = 0"
    script = script.replace("SMALL_OFF", "" if small else off)
    done = subprocess.run(
        [sys.executable, "-c", script, "parse", *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    found: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def test_parse_of_a_small_torque_file_imports_no_heavy_module(tmp_path: Path) -> None:
    log = tmp_path / "20240503"
    log.write_text(LINES)
    out = tmp_path / "out"
    found = _parse_in_fresh_process(str(log), "-o", str(out))
    assert found == {"code": 0, "loaded": []}
    jobs = pq.read_table(out / "jobs.parquet")
    assert jobs.num_rows == 2
    assert sorted(jobs.column("state").to_pylist()) == ["COMPLETED", "DELETED"]


def test_the_arrow_path_of_a_small_file_still_leaves_the_others_out(tmp_path: Path) -> None:
    log = tmp_path / "20240503"
    log.write_text(LINES)
    out = tmp_path / "out"
    found = _parse_in_fresh_process(str(log), "-o", str(out), small=False)
    assert found == {"code": 0, "loaded": []}
    assert pq.read_table(out / "jobs.parquet").num_rows == 2


def test_a_zone_still_works_and_may_import_pandas(tmp_path: Path) -> None:
    log = tmp_path / "20240503"
    log.write_text(LINES)
    found = _parse_in_fresh_process(str(log), "-o", str(tmp_path / "out"), "--tz", "UTC")
    assert found["code"] == 0
    loaded = found["loaded"]
    assert isinstance(loaded, list)
    assert "numba" not in loaded


def test_a_folder_mixing_formats_still_reads_both(tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "20240503").write_text(LINES)
    (folder / "site.swf").write_text(
        "; Version: 2.2\n1 0 10 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n"
    )
    out = tmp_path / "out"
    found = _parse_in_fresh_process(str(folder), "-o", str(out))
    assert found["code"] == 0
    jobs = pq.read_table(out / "jobs.parquet")
    assert sorted(set(jobs.column("source_format").to_pylist())) == ["swf", "torque"]
    assert jobs.num_rows == 3


def test_reading_a_small_torque_file_in_process_leaves_the_spill_module_out(
    tmp_path: Path,
) -> None:
    log = tmp_path / "20240503"
    log.write_text(LINES)
    script = (
        "import json, sys\n"
        "from gridtrace.logs import read_torque\n"
        f"result = read_torque({str(log)!r})\n"
        "print(json.dumps([result.jobs.num_rows, 'gridtrace.logs._spill' in sys.modules]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=300
    )
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [2, False]


_COMPILES = """
import builtins, json, sys
calls = []
original = builtins.compile


def spy(*args, **kwargs):
    caller = sys._getframe(1).f_code.co_filename
    if not caller.startswith("<frozen importlib"):  # a module byte-compiled from its source
        calls.append(caller)
    return original(*args, **kwargs)


builtins.compile = spy
from gridtrace.cli import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "compiled_by": calls}))
"""


def test_a_small_parse_compiles_no_source_at_run_time(tmp_path: Path) -> None:
    # the first compile() of a process costs some 2 ms (Python builds its AST types then):
    # typing calls it for a NamedTuple whose annotations are strings, so the modules of the
    # small path that define one evaluate their annotations
    log = tmp_path / "20240503"
    log.write_text(LINES)
    done = subprocess.run(
        [sys.executable, "-c", _COMPILES, "parse", str(log), "-o", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found == {"code": 0, "compiled_by": []}


_FROZEN_AT_EXIT = """
import atexit, gc, runpy, sys
# registered first, so run last: after what the command registered
atexit.register(lambda: print("frozen at exit:", gc.get_freeze_count() > 0, flush=True))
sys.argv = ["gridtrace", *sys.argv[1:]]
try:
    runpy.run_module("gridtrace", run_name="__main__")
finally:
    print("collecting after the run:", gc.isenabled(), flush=True)
"""


def test_the_commands_own_process_is_not_collected_at_exit(tmp_path: Path) -> None:
    log = tmp_path / "20240503"
    log.write_text(LINES)
    done = subprocess.run(
        [sys.executable, "-c", _FROZEN_AT_EXIT, "parse", str(log), "-o", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[-2:] == ["collecting after the run: True", "frozen at exit: True"]
    assert pq.read_table(tmp_path / "out" / "jobs.parquet").num_rows == 2


def test_a_call_from_python_keeps_the_collector_as_it_was(tmp_path: Path) -> None:
    import atexit
    import gc

    from gridtrace import cli

    log = tmp_path / "20240503"
    log.write_text(LINES)
    frozen, at_exit = gc.get_freeze_count(), atexit._ncallbacks()
    assert gc.isenabled()
    assert cli.main(["parse", str(log), "-o", str(tmp_path / "out")]) == 0
    assert gc.isenabled()
    gc.disable()
    try:  # paused by the caller: still paused after
        assert cli.main(["-q", "parse", str(log), "-o", str(tmp_path / "again")]) == 0
        assert not gc.isenabled()
    finally:
        gc.enable()
    assert cli.main(["parse", str(tmp_path / "missing"), "-o", str(tmp_path / "x")]) == 2
    assert gc.isenabled()
    assert gc.get_freeze_count() == frozen  # nothing frozen, nor set to be at exit
    assert atexit._ncallbacks() == at_exit
