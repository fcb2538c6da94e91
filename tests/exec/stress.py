#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Real programs under `tierbal exec` at settings that make races likely.

Each case of the corpus (Python process and thread pools, subprocess chains,
a shell shim, bash pipelines, gcc and make, sort, xz, gzip, sqlite3, perl,
git, posix_spawn and vfork, a program forking beside writing threads, and
mappings that come and go at the same addresses) runs
twice without tierbal, which must agree, then many times under tierbal exec
with every page scanned, page by page, every 50 ms. A run passes when its
standard output, standard error and exit status (or signal) are those of the
plain run, within the time limit, with no parked page lost and no process of
the program left behind. Some runs kill tierbal with SIGKILL at a random
moment: the program must still finish the same way.

The harness is a child subreaper (PR_SET_CHILD_SUBREAPER), so a program
whose tierbal was killed becomes its child and its exit status is still
known. Every process of a run carries a mark in its environment: whatever
still runs with it once the program has ended is a process left behind.

usage: stress.py --tierbal PATH --runtime LIB --progs DIR [--runs N | --minutes M] [--jobs J]
       [--kill-fraction F] [--seed S] [--timeout S] [--report FILE] [--keep DIR]
The last line is "N passed, M failed", N and M counting program runs.
"""

import argparse
import ctypes
import multiprocessing
import os
import random
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")
MARK = "TB_STRESS_RUN"
PR_SET_CHILD_SUBREAPER = 36

# the settings of tests/exec/test_exec.sh: every page scanned (mode 3 scans the fast tier too, which is
# all a one-node machine has), page by page, every 50 ms, memory maps re-read every 100 ms
FAST = ["--set", "numa_balancing=3", "--scan-delay-ms", "1", "--scan-period-ms", "50", "--scan-size-mb", "64",
        "--sample-ms", "50", "--window-kb", "4"]


def py():
    return shutil.which("python3") or sys.executable


def setup_data(d):
    """A text file of numbers for sort, xz and gzip: the same bytes every time."""
    with open(os.path.join(d, "data.txt"), "w") as f:
        for i in range(60000):
            f.write(f"{(i * 2654435761) % 1000003} line {i % 977}\n")


def setup_git(d):
    for i in range(300):
        sub = os.path.join(d, "tree", f"d{i % 12}")
        os.makedirs(sub, exist_ok=True)
        with open(os.path.join(sub, f"f{i}.txt"), "w") as f:
            f.write("".join(f"file {i} line {j}\n" for j in range(i % 40 + 1)))


GIT = """set -e
cd tree
git init -q -b main .
git add .
git commit -q -m 'three hundred files'
git rm -q d0/f0.txt
echo changed >>d1/f1.txt
git commit -q -am 'two changes'
git log --format='%H %s'
git count-objects
git fsck --no-progress --full
git archive HEAD | md5sum
"""


def cases(progs):
    """name, argv, set-up (files in the run's folder), extra environment."""
    c = CORPUS
    return [
        ("py-pool", [py(), f"{c}/py_pool.py"], None, {}),
        ("py-procpool-subprocess", [py(), f"{c}/py_procpool.py"], None, {}),
        ("py-threadpool", [py(), f"{c}/py_threads.py"], None, {}),
        ("py-subprocess-chain", [py(), f"{c}/py_subprocess.py"], None, {}),
        ("shell-shim-python", ["sh", f"{c}/shim.sh"], None, {}),
        ("bash-pipelines", ["bash", f"{c}/pipelines.sh"], None, {}),
        ("gcc", ["sh", "-c", f"gcc -O2 -o prog {c}/cproj/*.c && ./prog"], None, {}),
        ("make-j2", ["make", "-s", "-j2", "-C", "cproj", "prog"], lambda d: shutil.copytree(f"{c}/cproj", f"{d}/cproj"),
         {}),
        ("sort", ["sort", "-n", "-S", "8M", "--parallel=2", "data.txt", "data.txt", "data.txt", "data.txt"], setup_data, {}),
        ("xz", ["xz", "-T2", "-6", "-c", "data.txt"], setup_data, {}),
        ("gzip", ["sh", "-c", "gzip -6 -c data.txt | gzip -dc | md5sum; gzip -c data.txt | wc -c"], setup_data, {}),
        ("sqlite3", ["sqlite3", "db.sqlite", f".read {c}/sqlite.sql"], None, {}),
        ("perl", ["perl", f"{c}/perl.pl"], None, {}),
        ("git", ["sh", "-c", GIT], setup_git, {}),
        ("posix_spawn-vfork", [f"{progs}/exec_spawn"], None, {}),
        ("fork-beside-writers", [f"{progs}/exec_forkthreads"], None, {}),
        ("map-unmap-discard", [f"{progs}/exec_remap"], None, {}),
    ]


def base_env(rundir):
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("TIERBAL_") and k != "TIERBAL_RT_LIB":
            del env[k]
    env.update({"HOME": rundir, "LC_ALL": "C", "PYTHONHASHSEED": "0", "GIT_CONFIG_NOSYSTEM": "1",
                "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
                "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid",
                "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"})
    return env


def marked():
    """pid -> mark of every live process that carries one."""
    found = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    continue
            with open(f"/proc/{p}/environ", "rb") as f:
                for kv in f.read().split(b"\0"):
                    if kv.startswith(MARK.encode() + b"="):
                        found[int(p)] = kv.split(b"=", 1)[1].decode()
        except (OSError, IndexError):
            continue
    return found


def describe(pid):
    try:
        comm = open(f"/proc/{pid}/comm").read().strip()
        wchan = open(f"/proc/{pid}/wchan").read().strip()
        return f"{pid} {comm} waiting in {wchan or 'nothing (running)'}"
    except OSError:
        return f"{pid} (gone)"


def reap():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def status_of(st):
    """A wait status as subprocess would report it: exit code, or minus the signal."""
    return -os.WTERMSIG(st) if os.WIFSIGNALED(st) else os.WEXITSTATUS(st)


def wait_pid(pid, timeout):
    """The exit status of a child (our own, or one we inherited as subreaper), or None at the time limit."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        fd = None
    try:
        if fd is not None and not select.select([fd], [], [], timeout)[0]:
            return None
        return status_of(os.waitpid(pid, 0)[1])
    finally:
        if fd is not None:
            os.close(fd)


def children_of(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def stats(path):
    st = {}
    try:
        for line in open(path):
            k, _, v = line.partition(" ")
            if v.strip().isdigit():
                st[k] = int(v)
    except OSError:
        pass
    return st


class Run:
    def __init__(self, case, idx, kill_after):
        self.case, self.idx, self.kill_after = case, idx, kill_after


def prepare(work, case, tag):
    name, argv, setup, extra = case
    d = tempfile.mkdtemp(prefix=f"{name}-{tag}-", dir=work)
    if setup:
        setup(d)
    env = base_env(d)
    env.update(extra)
    env[MARK] = os.path.basename(d)
    return d, argv, env


def plain(work, case, timeout):
    d, argv, env = prepare(work, case, "plain")
    t0 = time.monotonic()
    try:
        p = subprocess.run(argv, cwd=d, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    finally:
        reap()
    took = time.monotonic() - t0
    shutil.rmtree(d, ignore_errors=True)
    return p.stdout, p.stderr, p.returncode, took


def under_tierbal(opt, work, case, kill_after, ref):
    """One run under tierbal exec; returns (verdict, detail, killed, faults)."""
    d, argv, env = prepare(work, case, "tb")
    mark = env[MARK]
    out, err = open(f"{d}/.stdout", "wb"), open(f"{d}/.stderr", "wb")
    cmd = [opt.tierbal, "exec", "--config", opt.fast_ini, *FAST, *opt.tierbal_args.split(), f"--stats={d}/.stats", "--log", f"{d}/.log", "--",
           *argv]
    tb = subprocess.Popen(cmd, cwd=d, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
    out.close()
    err.close()
    killed = False
    prog = None
    started = time.monotonic()
    deadline = started + opt.timeout
    if kill_after is not None:
        # the moment is counted from the program's start: tierbal's own start-up is not what is tested
        while prog is None and tb.poll() is None and time.monotonic() < deadline:
            kids = children_of(tb.pid)
            prog = kids[0] if kids else None
            if prog is None:
                time.sleep(0.002)  # polling for the program to exist, not a wait for a result
        if prog is not None:
            try:
                pfd = os.pidfd_open(prog)  # the program itself, even once it is reparented to us
            except ProcessLookupError:
                pfd = None
            # SIGKILL at the moment chosen, or earlier if the program ends first (then no kill)
            ended = pfd is not None and select.select([pfd], [], [], kill_after)[0]
            if pfd is not None:
                os.close(pfd)
            if not ended and tb.poll() is None:
                os.kill(tb.pid, signal.SIGKILL)
                killed = True
    try:
        rc = tb.wait(timeout=max(0.1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        rc = None
    took = time.monotonic() - started
    if killed and rc is not None:
        # the program was alive at the kill: it is ours now (subreaper), unless tierbal had reaped it already
        try:
            rc = wait_pid(prog, max(0.1, deadline - time.monotonic()))
        except ChildProcessError:
            killed = False  # it ended before the kill landed: its status went with tierbal
            rc = "unknown"
    verdict, detail = "ok", ""
    left = {p for p, m in marked().items() if m == mark}
    status = "" if rc is None else f" (exit status {rc})"
    if rc is None:
        verdict = "hang"
        detail = f"no end within {opt.timeout:.0f} s: " + "; ".join(describe(p) for p in sorted(left))
    else:
        # the program has ended: whatever of it still runs after a short grace was left behind
        grace = time.monotonic() + 3
        while left and time.monotonic() < grace:
            time.sleep(0.01)  # polling for processes to end, not a wait for a result
            reap()
            left = {p for p, m in marked().items() if m == mark}
        if left:
            verdict = "left behind"
            detail = "the program ended" + status + ", but not " + "; ".join(describe(p) for p in sorted(left))
    for p in left:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass
    if tb.poll() is None:
        tb.kill()
        tb.wait()
    reap()
    st = stats(f"{d}/.stats")
    if verdict == "ok":
        got_out, got_err = open(f"{d}/.stdout", "rb").read(), open(f"{d}/.stderr", "rb").read()
        want_out, want_err, want_rc, _ = ref
        if rc != "unknown" and rc != want_rc:
            verdict, detail = "status", f"exit status {rc}, {want_rc} without tierbal; error output {got_err[-300:]!r}"
        elif got_out != want_out:
            verdict, detail = "stdout", f"{len(got_out)} bytes of output, {len(want_out)} without tierbal: {got_out[-200:]!r}"
        elif got_err != want_err:
            verdict, detail = "stderr", f"error output {got_err[-300:]!r}, without tierbal {want_err[-300:]!r}"
        elif st.get("park_lost_pages", 0):
            verdict, detail = "lost", f"{st['park_lost_pages']} parked pages could not be put back"
    if verdict != "ok":
        log = open(f"{d}/.log", errors="replace").read().splitlines()[-6:] if os.path.exists(f"{d}/.log") else []
        detail += "".join(f"\n    | {line}" for line in log)
    if verdict != "ok" and opt.keep:
        shutil.move(d, os.path.join(opt.keep, os.path.basename(d)))
    else:
        shutil.rmtree(d, ignore_errors=True)
    return verdict, detail, killed, st.get("uffd_faults", 0), st.get("park_forks_unsafe", 0), took


def worker(opt, jobs, results, refs):
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when to stop
    work = tempfile.mkdtemp(prefix="tb-stress-")
    corpus = [c for c in cases(opt.progs) if not opt.only or c[0] in opt.only.split(",")]
    while True:
        job = jobs.get()
        if job is None:
            break
        ci, kill_after = job
        r = under_tierbal(opt, work, corpus[ci], kill_after, refs[ci])
        results.put((ci, *r))
    shutil.rmtree(work, ignore_errors=True)
    results.put(None)


def set_thp(value):
    path = "/sys/kernel/mm/transparent_hugepage/enabled"
    try:
        old = open(path).read().split("[")[1].split("]")[0]
        with open(path, "w") as f:
            f.write(value)
        return old
    except (OSError, IndexError):
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tierbal", required=True)
    ap.add_argument("--runtime", required=True, help="libtierbal-rt.so")
    ap.add_argument("--progs", required=True, help="the folder with exec_spawn, exec_forkthreads and exec_remap")
    ap.add_argument("--runs", type=int, default=300, help="program runs under tierbal (default 300)")
    ap.add_argument("--minutes", type=float, help="run for this long instead of a number of runs")
    ap.add_argument("--jobs", type=int, default=3, help="runs at once (default 3: more runs than cores)")
    ap.add_argument("--kill-fraction", type=float, default=0.12, help="runs that SIGKILL tierbal (default 0.12)")
    ap.add_argument("--seed", type=int, default=int(time.time()), help="for the order and the kill moments")
    ap.add_argument("--timeout", type=float, default=90, help="seconds a run may take (default 90)")
    ap.add_argument("--report", help="also write the summary to this file")
    ap.add_argument("--keep", help="move the folders of failed runs here")
    ap.add_argument("--tierbal-args", default="", help="more options for tierbal exec, after the aggressive ones")
    ap.add_argument("--thp", default="always", choices=["always", "madvise", "never"],
                    help="transparent huge pages during the runs (default always, as real programs have them)")
    ap.add_argument("--only", help="these programs of the corpus alone, by name, comma-separated")
    opt = ap.parse_args()
    if os.environ.get("TB_STRESS_RUNS"):
        opt.runs = int(os.environ["TB_STRESS_RUNS"])
    for path, what in [(opt.tierbal, "--tierbal"), (opt.runtime, "--runtime")]:
        if not os.access(path, os.X_OK if what == "--tierbal" else os.R_OK):
            sys.exit(f"stress: {what} {path}: not found; build first (bash scripts/setup.sh)")
    if opt.keep:
        os.makedirs(opt.keep, exist_ok=True)
    top = tempfile.mkdtemp(prefix="tb-stress-")
    # copies, so that a rebuild meanwhile does not change what is tested halfway
    opt.tierbal = shutil.copy(opt.tierbal, os.path.join(top, "tierbal"))
    os.environ["TIERBAL_RT_LIB"] = shutil.copy(opt.runtime, os.path.join(top, "libtierbal-rt.so"))
    opt.fast_ini = os.path.join(top, "fast.ini")
    with open(opt.fast_ini, "w") as f:
        f.write("[daemon]\nrefresh_ms = 100\n")
    old_thp = set_thp(opt.thp)
    try:
        return stress(opt, top, old_thp)
    finally:
        if old_thp:
            set_thp(old_thp)
        shutil.rmtree(top, ignore_errors=True)


def stress(opt, top, old_thp):
    corpus = cases(opt.progs)
    if opt.only:
        names = opt.only.split(",")
        unknown = [n for n in names if n not in [c[0] for c in corpus]]
        if unknown:
            sys.exit(f"stress: --only {','.join(unknown)}: no such program; the corpus: {' '.join(c[0] for c in corpus)}")
        corpus = [c for c in corpus if c[0] in names]
    rng = random.Random(opt.seed)
    t0 = time.monotonic()
    refs = []
    for case in corpus:
        a, b = plain(top, case, opt.timeout), plain(top, case, opt.timeout)
        if a is None or b is None or a[:3] != b[:3]:
            sys.exit(f"stress: {case[0]}: two runs without tierbal disagree or time out: the case is not deterministic")
        refs.append(a)
    print(f"stress: {len(corpus)} programs, each the same twice without tierbal ({time.monotonic() - t0:.0f} s); "
          f"THP {opt.thp if old_thp else 'as the machine has it'}, seed {opt.seed}", file=sys.stderr, flush=True)

    jobs, results = multiprocessing.Queue(), multiprocessing.Queue()
    workers = [multiprocessing.Process(target=worker, args=(opt, jobs, results, refs)) for _ in range(opt.jobs)]
    for w in workers:
        w.start()
    order = []

    def next_job():
        if not order:
            order.extend(rng.sample(range(len(corpus)), len(corpus)))
        ci = order.pop()
        kill = rng.random() < opt.kill_fraction
        # a kill moment within the plain run's length, stretched for tierbal's slower runs
        return ci, (rng.uniform(0.0, 2.0 * refs[ci][3] + 0.05) if kill else None)

    end = t0 + opt.minutes * 60 if opt.minutes else None
    sent = 0
    for _ in range(opt.jobs * 2):
        jobs.put(next_job())
        sent += 1
    per = {i: {"runs": 0, "kills": 0, "fail": 0, "faults": 0, "took": []} for i in range(len(corpus))}
    failures, done, unsafe, last = [], 0, 0, time.monotonic()
    stopping = False
    finished_workers = 0
    while finished_workers < len(workers):
        r = results.get()
        if r is None:
            finished_workers += 1
            continue
        ci, verdict, detail, killed, faults, forks_unsafe, took = r
        done += 1
        unsafe += forks_unsafe
        s = per[ci]
        s["runs"] += 1
        s["kills"] += killed
        s["faults"] += faults
        if not killed and verdict == "ok":
            s["took"].append(took)
        if verdict != "ok":
            s["fail"] += 1
            failures.append(f"FAIL {corpus[ci][0]}{' (tierbal killed)' if killed else ''}: {verdict}: {detail}")
            print(failures[-1], file=sys.stderr, flush=True)
        more = (time.monotonic() < end) if end else (sent < opt.runs)
        if more and not stopping:
            jobs.put(next_job())
            sent += 1
        elif not stopping:
            stopping = True
            for _ in workers:
                jobs.put(None)
        if time.monotonic() - last > 10:
            last = time.monotonic()
            print(f"stress: {done} runs, {sum(p['kills'] for p in per.values())} with tierbal killed, "
                  f"{len(failures)} failed ({time.monotonic() - t0:.0f} s)", file=sys.stderr, flush=True)
    for w in workers:
        w.join()

    took = time.monotonic() - t0
    kills = sum(p["kills"] for p in per.values())
    lines = [f"{'program':<26} {'runs':>6} {'killed':>7} {'failed':>7} {'hint faults/run':>16} "
             f"{'s without':>10} {'s with (median)':>16}"]
    for i, case in enumerate(corpus):
        p = per[i]
        watched = p["runs"] - p["kills"]
        med = sorted(p["took"])[len(p["took"]) // 2] if p["took"] else 0
        lines.append(f"{case[0]:<26} {p['runs']:>6} {p['kills']:>7} {p['fail']:>7} "
                     f"{(p['faults'] // watched if watched else 0):>16} {refs[i][3]:>10.2f} {med:>16.2f}")
    # a short program can end before the first scan pass (the ASan build is slow to start): one run
    # without a fault says little, three say tierbal did not watch it
    unwatched = [corpus[i][0] for i, p in per.items() if p["runs"] - p["kills"] >= 3 and p["faults"] == 0]
    for name in unwatched:
        failures.append(f"FAIL {name}: not one hint fault in its runs: tierbal did not really watch it")
    lines.append(f"{done} runs of {len(corpus)} programs in {took / 60:.1f} min, {opt.jobs} at once, seed {opt.seed}: "
                 f"{kills} with tierbal killed by SIGKILL, {len(failures)} failures (hangs, crashes, differences, "
                 f"processes left behind); {unsafe} forks where tierbal had not put every page back in time "
                 f"(the runtime then did)")
    text = "\n".join(lines + failures)
    print(text)
    if opt.report:
        with open(opt.report, "w") as f:
            f.write(text + "\n")
    failed_runs = sum(p["fail"] for p in per.values())
    print(f"{done - failed_runs} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
