"""What each flag the TORQUE/PBS reader sets means (:data:`FLAGS`, re-exported by ``_torque``).

Kept apart from the reader, which imports numpy and pyarrow, so that ``gridtrace parse`` of a
small input (:mod:`gridtrace.logs._small_parse`) can print the flags' meanings without them.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["FLAGS", "torque_flag_meanings"]

FLAGS: Mapping[str, str] = {
    # -- lines (records.flags; those marked "job too" also on the jobs that use the record)
    "CRLF": "the line ended in CR LF; the CR was removed (nothing else changes)",
    "NUL_STRIPPED": (
        "the line held a run of NUL bytes (a crash or log rotation); the record is the text after "
        "the last run, raw keeps the whole line (job too)"
    ),
    "NUL_INSIDE": (
        "NUL bytes inside one record (text after them that starts no record) were removed and "
        "the rest parsed; the record may have lost bytes; raw keeps the line (job too)"
    ),
    "CUT_FRAGMENT": (
        "before the NUL run stood the cut-off start of another record: never parsed, never a "
        "job; its bytes are in the row's raw (the one readable record of the line is the row)"
    ),
    "NON_UTF8": (
        "bytes that are not UTF-8 were decoded as Windows-1252 (Latin-1 where it has no "
        "character); the original bytes are in the record's raw (job too)"
    ),
    "CONTROL_CHARS": (
        "control bytes other than NUL were removed from the line before parsing; raw keeps "
        "them (job too)"
    ),
    "FILE_PREFIX": "a 'name:' prefix left by grep before the stamp was removed; raw keeps it",
    "BARE_TOKEN": "a token without '=' is kept as a key with an empty value (not used for jobs)",
    "REPEATED_KEY": "a key appeared more than once; its values are joined with '+'",
    "NO_NEWLINE": (
        "the file's last line has no line end but every key its record type always has: its "
        "values are used as logged (job too)"
    ),
    "TRUNCATED": (
        "the file's last line has no line end and lacks a key its type always has (E: end, "
        "Exit_status; S: start, exec_host) or stops on one: a crash cut it; it is used as far "
        "as its keys go, its last (maybe cut) value not (job too: the attempt uses it)"
    ),
    "DUPLICATE": (
        "a byte-identical copy of an earlier line (copied or overlapping files): the record is "
        "not used; on a job: one of its lines was such a copy"
    ),
    "STAMP_UNREADABLE": "the record's stamp is not a real date: stamp_utc is null",
    "DST_AMBIGUOUS": (
        "a stamp in the repeated hour of a fall-back change: the offset of its neighbours in the "
        "file was taken (on a job: a time it took from such a stamp)"
    ),
    "DST_GAP": (
        "a stamp in the hour a spring-forward change skips: read 1 h later (on a job: a time it "
        "took from such a stamp)"
    ),
    # -- jobs.flags
    "ID_REUSE": "the job id was logged with another ctime too: that job has its own key",
    "DUPLICATE_END": (
        "two E records with the same start and end closed the attempt: merged, the first "
        "non-empty value of each attribute kept"
    ),
    "RERUN": "an R (rerun) record ended the attempt: end_time is its stamp, state REQUEUED",
    "ATTEMPT_UNLOGGED": "an R record ended an attempt whose S is not in the log: counted, no row",
    "START_RETRIED": "the attempt had several S records: the last one's start and hosts are kept",
    "DELETED_BY_USER": "a D (delete) record was logged during the attempt (requestor may be root)",
    "ABORTED": "an A (abort) record was logged during the attempt",
    "END_RECORD_TRUNCATED": (
        "a cut-off E record of the attempt was replaced by a later complete E of the same "
        "attempt (an overlapping file): the complete one is used"
    ),
    "END_FROM_STAMP": (
        "the attempt's E record was cut off before end=: end_time is the record's local stamp "
        "placed with the site's offset (also TIME_FROM_STAMP)"
    ),
    "FROM_S_RECORD": (
        "the attempt's E record was cut off before start/exec_host/slots: those come from the "
        "attempt's S record"
    ),
    "NO_END_RECORD": "no E record for the attempt: RUNNING, PENDING, or ended by D/A alone",
    "SUBMIT_UNKNOWN": "no ctime and no Q record: submit_time is null, job_key ends in @unknown",
    "TIME_FROM_STAMP": (
        "a time comes from a local record stamp placed in UTC (submit from the first Q; end "
        "from an R, A or D record, or a cut-off E)"
    ),
    "TZ_ASSUMED_UTC": "such a stamp was read as UTC: no zone was given and no record had an epoch",
    "NEVER_STARTED": "E with start=0 but an exec_host: resources were assigned, the job never ran",
    "EXEC_FAILED": "E with a start, no exec_host and a negative Exit_status: run_s is null",
    "SIGNAL_INFERRED": "Exit_status in 129..255 read as 128 + signal (exit_signal)",
    "TIMEOUT_INFERRED": (
        "state TIMEOUT because a signal killed the job after it used at least its walltime "
        "limit (not Exit_status -11, which says so itself)"
    ),
    "NEG_WALLTIME": "a negative walltime was logged: the value is null (run_s from the epochs)",
    "NEG_CPUTIME": "a negative CPU time was logged: cpu_time_s is null",
    "WALLTIME_MISMATCH": "resources_used.walltime and run_s differ by over 60 s: run_s is kept",
    "END_BEFORE_START": "end < start: run_s is null",
    "START_BEFORE_SUBMIT": "start < submit: wait_s is negative, as logged",
    "NO_EXIT_STATUS": "the attempt ran but its E record has no Exit_status: state UNKNOWN",
    "UNIT_NONSTANDARD": "a memory value in a form PBS does not document (12.27M): binary multiples",
    "UNIT_GUESSED": "a memory value without unit: read in the unitless_memory unit (default b)",
    "MEM_FROM_PMEM": "no mem request: mem_req_bytes is pmem x cores_req",
    "NODESPEC_UNPARSED": "the nodes spec or select could not be read: the other sources were used",
    "NODESPEC_FROM_NODECT": "the nodes request was read from a nodect written as a nodes spec",
    "GPUS_ALLOC_FROM_REQUEST": "no exec_vnode: gpus_alloc is the GPU request of a placed job",
    "CORES_CONFLICT": (
        "exec_vnode, exec_host, total_execution_slots and resources_used.ncpus give different "
        "core counts: cores_alloc keeps the first of them logged (the slots the server listed)"
    ),
    "NODES_CONFLICT": (
        "the hosts of exec_host (or exec_vnode) and unique_node_count differ: nodes_alloc keeps "
        "the host count"
    ),
    "CORES_REQ_CONFLICT": (
        "the nodes spec (nodes=N:ppn=P), select, procs and ncpus ask for different core counts: "
        "cores_req keeps the first logged, in that order"
    ),
    "NODES_REQ_CONFLICT": (
        "the nodes spec, nodect and select ask for different node counts: nodes_req keeps the "
        "first logged, in that order"
    ),
    "GPUS_REQ_CONFLICT": (
        "ngpus, gpus, gpu and the GPUs of select or the nodes spec disagree: gpus_req keeps the "
        "first logged, in that order"
    ),
    "MEM_REQ_CONFLICT": "Resource_List.mem and the select's memory differ: mem_req_bytes keeps mem",
    "CORES_REQ_MISMATCH": (
        "cores_alloc (the slots logged) differs from cores_req (the request): both are kept; "
        "a trace uses cores_alloc"
    ),
    "ACCOUNT_FROM_PROJECT": "no account: account is the PBS Pro project (not its default project)",
    "VALUE_UNREADABLE:*": "the attribute named after the colon could not be read: value null",
}
"""Every flag this reader sets on a ``records`` or ``jobs`` row, with what it means.

Gathered by :func:`gridtrace.logs.flag_meanings`; ``gridtrace parse`` prints each count with it.
"""


def torque_flag_meanings(source_format: str = "torque") -> dict[str, str]:
    """Return :func:`~gridtrace.logs.flag_meanings` of ``source_format`` (torque or pbspro).

    The same catalog, without the format registry (which imports pyarrow).
    """
    from gridtrace.logs._flags import merged_meanings

    del source_format  # both flavours are the one TORQUE/PBS reader
    return merged_meanings([FLAGS])
