"""Run one rebuilt notebook in a fresh sandboxed kernel, cell by cell, with the grader's guards.

On top of nbclient's cell execution: the integrity guard (inkernel/integrity.py) is installed
before the first cell and consulted before and after every graded test cell; each cell has a
wall-clock timeout (then an interrupt, then the kernel is stopped if it does not answer), the
whole notebook a deadline; outputs beyond a byte budget are dropped, not kept in memory; and a
kernel that dies (os._exit, a signal, the CPU or memory rlimit) ends the run with the reason
in plain words instead of an exception. The execute_reply's status is kept for each cell: a
cell whose code raised counts as failed even if its error output was hidden.
"""

from __future__ import annotations

import ast
import asyncio
import dataclasses
import json
import signal
import time
from pathlib import Path
from typing import Any

from nbclient import NotebookClient
from nbclient.exceptions import DeadKernelError
from nbformat import NotebookNode
from nbformat.v4 import new_output

from sandbox import Limits, Sandbox

INTEGRITY = Path(__file__).resolve().parent / "inkernel" / "integrity.py"
GUARD = '__import__("sys").modules["__seqlab_integrity__"]'


@dataclasses.dataclass
class Execution:
    replies: dict[int, str] = dataclasses.field(default_factory=dict)  # cell index -> execute_reply status
    tampering: dict[int, list[str]] = dataclasses.field(default_factory=dict)  # cell index -> findings
    problems: list[str] = dataclasses.field(default_factory=list)  # plain-words reasons (kernel died, ...)
    not_run: list[int] = dataclasses.field(default_factory=list)  # cell indexes never executed
    timed_out: list[int] = dataclasses.field(default_factory=list)
    output_dropped_bytes: int = 0
    kernel_ready_s: float = 0.0
    seconds: float = 0.0


def _size(content: dict) -> int:
    total = 0
    for key in ("text", "data", "traceback", "evalue"):
        value = content.get(key)
        if isinstance(value, str):
            total += len(value)
        elif isinstance(value, list):
            total += sum(len(str(v)) for v in value)
        elif isinstance(value, dict):
            total += sum(len(str(v)) for v in value.values())
    return total


class GradingClient(NotebookClient):
    """nbclient's executor with an output budget and the reply status of every cell."""

    def __init__(self, nb: NotebookNode, km: Any, limits: Limits, execution: Execution, cwd: str):
        super().__init__(
            nb, km=km, timeout=limits.cell_timeout, interrupt_on_timeout=True, allow_errors=True,
            kernel_name="seqlab-grading", startup_timeout=60, iopub_timeout=10, record_timing=False,
            resources={"metadata": {"path": cwd}},
            error_on_timeout={"ename": "CellTimeoutError",
                              "evalue": f"the cell ran longer than {limits.cell_timeout} s and was interrupted",
                              "traceback": [f"CellTimeoutError: the cell ran longer than {limits.cell_timeout} s"]},
        )
        self.budget = limits.output_bytes
        self.used = 0
        self.execution = execution
        self.on_cell_executed = self._keep_reply

    def _keep_reply(self, cell, cell_index, execute_reply):
        self.execution.replies[cell_index] = execute_reply["content"].get("status", "error")

    def output(self, outs, msg, display_id, cell_index):
        size = _size(msg.get("content", {}))
        if self.used + size > self.budget:
            if not self.execution.output_dropped_bytes:
                outs.append(new_output("stream", name="stdout",
                                       text=f"\n[the grader dropped the rest of the output: more than {self.budget:,d} bytes]\n"))
            self.execution.output_dropped_bytes += size
            return None
        self.used += size
        return super().output(outs, msg, display_id, cell_index)

    async def hidden(self, expression: str, code: str = "", timeout: float = 20) -> Any:
        """Evaluate an expression in the kernel outside the notebook (no history, no output)."""
        msg_id = self.kc.execute(code, silent=True, store_history=False, user_expressions={"r": expression})
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("the kernel did not answer the grader")
            try:
                reply = await self.kc.shell_channel.get_msg(timeout=min(remaining, 1.0))
            except Exception:  # noqa: BLE001 - queue.Empty: keep waiting until the deadline
                if not await self.km.is_alive():
                    raise DeadKernelError("Kernel died") from None
                continue
            if reply["parent_header"].get("msg_id") != msg_id:
                continue
            result = reply["content"].get("user_expressions", {}).get("r", {})
            if result.get("status") != "ok":
                raise RuntimeError(f"{result.get('ename', 'no answer')}: {result.get('evalue', '')}")
            return json.loads(ast.literal_eval(result["data"]["text/plain"]))


def install_code() -> str:
    return ("def __seqlab_install():\n"
            "    import sys, types\n"
            "    module = types.ModuleType('__seqlab_integrity__')\n"
            "    sys.modules[module.__name__] = module\n"
            f"    exec(compile({INTEGRITY.read_text()!r}, '<integrity>', 'exec'), module.__dict__)\n"
            "__seqlab_install()\n"
            "del __seqlab_install\n")


def describe_exit(status: dict | None, limits: Limits) -> str:
    if not status:
        return "the kernel died"
    sig = status.get("signal")
    if sig == signal.SIGXCPU:
        return f"the kernel used more than its {limits.cpu_seconds} s of CPU time and was stopped"
    if sig == signal.SIGKILL:
        return "the kernel was killed (SIGKILL), most often by running out of memory"
    if sig == signal.SIGXFSZ:
        return f"the kernel wrote a file larger than {limits.file_bytes:,d} bytes and was stopped"
    if sig:
        return f"the kernel died from signal {signal.Signals(sig).name}"
    return f"the kernel exited with code {status.get('exit')} (sys.exit, os._exit, exit() or a crash)"


async def run(nb: NotebookNode, sandbox: Sandbox, graded: set[int], definitions: str) -> Execution:
    """Execute ``nb`` in place; ``graded`` are the indexes of graded test cells to guard."""
    limits = sandbox.limits
    execution = Execution()
    km = sandbox.kernel_manager()
    client = GradingClient(nb, km, limits, execution, str(sandbox.scratch))
    start = time.perf_counter()
    deadline = start + limits.notebook_timeout
    code_cells = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    done: set[int] = set()

    def stop(reason: str, index: int) -> None:
        execution.problems.append(reason)
        execution.not_run = [i for i in code_cells if i >= index and i not in done]

    try:
        async with client.async_setup_kernel():
            await client.kc.wait_for_ready(timeout=60)
            execution.kernel_ready_s = time.perf_counter() - start
            installed = await client.hidden(f"{GUARD}.install({definitions!r})", code=install_code())
            assert installed.get("installed")
            for index in code_cells:
                cell = nb.cells[index]
                if time.perf_counter() > deadline:
                    stop(f"the notebook ran longer than {limits.notebook_timeout} s; the cells from #{index} on were not run", index)
                    break
                guarded = index in graded
                try:
                    if guarded:
                        report = await client.hidden(f"{GUARD}.check('before', {str(index)!r})")
                        if report["tampering"]:
                            execution.tampering.setdefault(index, []).extend(report["tampering"])
                    began = time.perf_counter()
                    await asyncio.wait_for(client.async_execute_cell(cell, index, store_history=not guarded),
                                           timeout=limits.cell_timeout + 10)
                    done.add(index)
                    if time.perf_counter() - began >= limits.cell_timeout:
                        execution.timed_out.append(index)
                        await client.hidden("'{}'", timeout=15)  # does the kernel answer after the interrupt?
                    if guarded:
                        report = await client.hidden(f"{GUARD}.check('after', {str(index)!r})")
                        if report["tampering"]:
                            execution.tampering.setdefault(index, []).extend(report["tampering"])
                except DeadKernelError:
                    done.add(index)
                    await asyncio.sleep(0.3)
                    stop(f"{describe_exit(sandbox.exit_status(km), limits)} while running cell #{index}", index + 1)
                    execution.not_run.insert(0, index) if index in graded else None
                    break
                except (TimeoutError, asyncio.TimeoutError):
                    execution.timed_out.append(index)
                    stop(f"cell #{index} ran past the {limits.cell_timeout} s limit and did not answer the "
                         "interrupt; the kernel was stopped", index + 1)
                    execution.not_run.insert(0, index)
                    break
                except (RuntimeError, ValueError, KeyError, AssertionError) as error:
                    execution.tampering.setdefault(index, []).append(
                        f"the grader's integrity check could not run ({error}); the kernel was tampered with")
                    if not await km.is_alive():
                        stop(f"{describe_exit(sandbox.exit_status(km), limits)} around cell #{index}", index + 1)
                        break
    except DeadKernelError:
        stop(describe_exit(sandbox.exit_status(km), limits) + " before the notebook started", 0)
    except (TimeoutError, asyncio.TimeoutError, RuntimeError) as error:
        stop(f"the kernel did not start: {error}", 0)
    finally:
        try:
            if await km.is_alive():
                await km.shutdown_kernel(now=True)
        except Exception:  # noqa: BLE001
            pass
    execution.seconds = time.perf_counter() - start
    return execution
