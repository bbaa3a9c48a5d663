"""Load on the submission service: N students submit one chapter within a minute; is every one answered?

    python autograder/serve_load.py [--students 50] [--within 60] [--chapter 07-attention] [--jobs 2] [--queue 32]

Starts autograder/serve.py on a fresh workspace and a free port, issues a token per student, and lets each student
submit once at a random moment (seeded) of the first WITHIN seconds: a third the solution, a third a partly wrong
notebook (one answer returns None), a third the untouched release. A student told "busy" (503) or "wait" (429) waits
the Retry-After it was given and submits again; once accepted, it polls until graded. Reports the replies by status,
the waits it was told, the time from a student's first try to the verdict (median, 95th percentile, largest), and
checks that every student got a graded verdict and that the database holds exactly one submission per student.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import os
import random
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def notebooks(chapter: str) -> list[bytes]:
    """The solution, a partly wrong one (its first answer returns None) and the release, as students would save them."""
    import re

    import nbformat

    def read(folder: str):
        nb = nbformat.read(next((REPO / folder / chapter).glob(f"{chapter}.ipynb")), as_version=4)
        for cell in nb.cells:
            cell.pop("id", None)
        return nb

    wrong = read("solutions")
    answer = next(c for c in wrong.cells if c.metadata.get("nbgrader", {}).get("solution") and "def " in c.source)
    name = re.search(r"def (\w+)\(", answer.source).group(1)
    answer.source += f"\n\ndef {name}(*args, **kwargs):\n    return None\n"
    return [nbformat.writes(nb).encode() for nb in (read("solutions"), wrong, read("notebooks"))]


async def student(client, name: str, token: str, notebook: bytes, start_at: float, chapter: str, record: dict) -> None:
    await asyncio.sleep(max(0.0, start_at - time.monotonic()))
    headers = {"Authorization": f"Bearer {token}"}
    first = time.monotonic()
    record.update(tries=0, told_to_wait=[], statuses=[])
    while True:
        record["tries"] += 1
        try:
            reply = await client.post(f"/submit/{chapter}", content=notebook, headers=headers)
        except Exception as error:  # noqa: BLE001 - a lost request is what this measures
            record["statuses"].append(f"no answer: {type(error).__name__}")
            await asyncio.sleep(5)
            continue
        record["statuses"].append(reply.status_code)
        if reply.status_code == 202:
            break
        if reply.status_code in (429, 503) and reply.headers.get("retry-after", "").isdigit():
            wait = int(reply.headers["retry-after"])
            record["told_to_wait"].append(wait)
            await asyncio.sleep(wait)
            continue
        record["error"] = f"{reply.status_code}: {reply.text[:200]}"
        return
    sid = reply.json()["id"]
    while True:
        await asyncio.sleep(1.0)
        answer = (await client.get(f"/submissions/{sid}", headers=headers)).json()
        if answer["status"] not in ("queued", "grading"):
            break
    record.update(id=sid, status=answer["status"], score=answer.get("score"), seconds=time.monotonic() - first)


async def crowd(url: str, tokens: dict[str, str], chapter: str, within: float, seed: int) -> dict[str, dict]:
    import httpx

    made = notebooks(chapter)
    rng = random.Random(seed)
    now = time.monotonic()
    records = {name: {} for name in tokens}
    async with httpx.AsyncClient(base_url=url, timeout=120) as client:
        await asyncio.gather(*[student(client, name, token, made[i % 3], now + rng.uniform(0, within), chapter,
                                       records[name]) for i, (name, token) in enumerate(sorted(tokens.items()))])
    return records


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=50)
    parser.add_argument("--within", type=float, default=60.0, help="seconds over which the students start")
    parser.add_argument("--chapter", default="07-attention")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--queue", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, help="write the summary as JSON here too")
    args = parser.parse_args(argv)
    import httpx

    with tempfile.TemporaryDirectory(prefix="seqlab-serve-load-") as tmp:
        workspace = Path(tmp) / "workspace"
        roster = Path(tmp) / "roster.csv"
        roster.write_text("student\n" + "".join(f"student{n:03d}\n" for n in range(args.students)))
        subprocess.run([sys.executable, str(HERE / "serve.py"), str(workspace), "issue-tokens", str(roster),
                        "--out", str(Path(tmp) / "tokens.csv")], check=True, capture_output=True)
        tokens = {r["student"]: r["token"] for r in csv.DictReader(open(Path(tmp) / "tokens.csv"))}
        port = free_port()
        with open(Path(tmp) / "serve.log", "wb") as log:
            server = subprocess.Popen([sys.executable, str(HERE / "serve.py"), str(workspace), "--port", str(port),
                                       "--jobs", str(args.jobs), "--queue", str(args.queue)],
                                      stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            deadline = time.time() + 180
            while True:
                try:
                    if httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if server.poll() is not None or time.time() > deadline:
                    print((Path(tmp) / "serve.log").read_text()[-3000:], file=sys.stderr)
                    return 1
                time.sleep(0.5)
            started = time.monotonic()
            records = asyncio.run(crowd(f"http://127.0.0.1:{port}", tokens, args.chapter, args.within, args.seed))
            wall = time.monotonic() - started
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=60)
        stored = sqlite3.connect(workspace / "service" / "submissions.db").execute(
            "select student, count(*), sum(status = 'graded') from submissions group by student").fetchall()
        grading = [json.loads(line)["seconds"] for line in (workspace / "service" / "log.jsonl").read_text().splitlines()
                   if '"submission_graded"' in line]
    statuses = [s for r in records.values() for s in r.get("statuses", [])]
    seconds = sorted(r["seconds"] for r in records.values() if "seconds" in r)
    waits = [w for r in records.values() for w in r.get("told_to_wait", [])]
    summary = {
        "students": args.students, "within_s": args.within, "chapter": args.chapter, "jobs": args.jobs,
        "queue": args.queue, "cpus": os.cpu_count(),
        "graded": sum(1 for r in records.values() if r.get("status") == "graded"),
        "stored_once_each": sorted((s, n) for s, n, _ in stored) == sorted((s, 1) for s in tokens),
        "replies": {str(k): statuses.count(k) for k in sorted(set(statuses), key=str)},
        "told_to_wait": len(waits), "waits_s": {"min": min(waits, default=0), "max": max(waits, default=0)},
        "unanswered": sum(1 for s in statuses if isinstance(s, str)),
        "errors": [r["error"] for r in records.values() if "error" in r],
        "to_verdict_s": {"median": round(statistics.median(seconds), 1) if seconds else None,
                         "p95": round(seconds[int(0.95 * (len(seconds) - 1))], 1) if seconds else None,
                         "max": round(seconds[-1], 1) if seconds else None},
        "grading_s_median": round(statistics.median(grading), 2) if grading else None,
        "wall_s": round(wall, 1),
    }
    print(json.dumps(summary, indent=1))
    if args.out:
        args.out.write_text(json.dumps(summary, indent=1) + "\n")
    ok = summary["graded"] == args.students and summary["stored_once_each"] and not summary["unanswered"] \
        and not summary["errors"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
