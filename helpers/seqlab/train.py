"""A small training loop that chapters use but do not teach: a tqdm progress bar and a
live loss plot that redraws in place.

    history = fit(step, batches, epochs=5)          # step(batch) -> loss (a float)

``step`` does one update (the chapter writes it); ``batches`` is a function that returns an
iterable of batches for one epoch. In a notebook the plot updates every ``plot_every``
steps; elsewhere (or with ``plot=False``) nothing is drawn.

Training runs on one CPU thread for torch unless told otherwise (``threads``). The course's
models are small, so a step is many small tensor operations; with torch's default of one
OpenMP thread per core, every operation waits for all of them, and on a machine that also
runs anything else one of them is often not scheduled. On the course's 2-core machine under
load, 100 steps of a small RNN took 31-52 s with 2 threads and 2.4-3.0 s with 1, and
chapter 3's classifier did not finish training within a 600 s cell timeout (issue 14).
"""

from __future__ import annotations

import contextlib
import sys
import time
from typing import Any, Callable, Iterable, Iterator

from seqlab.i18n import N_, _, figure_text

TRAINING_LOSS = N_("training loss")  # plot_losses' title unless the notebook gives one

__all__ = ["fit", "plot_losses", "torch_threads"]


@contextlib.contextmanager
def torch_threads(n: int | None) -> Iterator[None]:
    """Run the body with ``n`` CPU threads for torch, then restore the count; ``None``, or torch not
    imported (a step that does not use it), leaves everything as it is."""
    if n is not None and n < 1:
        raise ValueError(_("threads must be at least 1 (or None), got {n}").format(n=n))
    torch = sys.modules.get("torch")
    if n is None or torch is None:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def plot_losses(losses: list[float], title: str = TRAINING_LOSS, smooth: int = 20):
    """A figure of the loss per step and its running mean over ``smooth`` steps."""
    import matplotlib.pyplot as plt
    import numpy as np

    figure, ax = plt.subplots(figsize=(6, 3))
    ax.plot(losses, alpha=0.35, lw=0.8, label=figure_text(N_("per step")))
    if len(losses) >= smooth:
        kernel = np.ones(smooth) / smooth
        ax.plot(np.arange(smooth - 1, len(losses)), np.convolve(losses, kernel, mode="valid"), label=figure_text(N_("mean of {smooth}"), smooth=smooth))
    ax.set(xlabel=figure_text(N_("training step")), ylabel=figure_text(N_("loss")), title=figure_text(title))
    ax.legend(loc="upper right")
    figure.tight_layout()
    return figure


def fit(
    step: Callable[[Any], float],
    batches: Callable[[], Iterable[Any]],
    epochs: int,
    *,
    time_limit: float | None = None,
    plot: bool = True,
    plot_every: int = 50,
    progress: bool = True,
    title: str = "training loss",
    threads: int | None = 1,
) -> dict[str, Any]:
    """Run ``epochs`` passes of ``step`` over ``batches()``; return the losses and the time.

    ``time_limit`` (seconds) stops early, after the step that crosses it, and says so.
    ``threads`` is torch's number of CPU threads while training (restored afterwards); ``None``
    leaves torch's setting alone (for a caller that sets it itself, or a large model).
    Returns ``{"losses": [...], "epoch_loss": [...], "seconds": s, "stopped_early": bool}``.
    """
    import matplotlib.pyplot as plt
    from tqdm.auto import tqdm

    if epochs < 1:
        raise ValueError(_("epochs must be at least 1, got {epochs}").format(epochs=epochs))
    display_handle = None
    if plot:
        try:
            from IPython import get_ipython
            from IPython.display import display

            if get_ipython() is not None:
                display_handle = display(plot_losses([0.0], title), display_id=True)
                plt.close("all")
        except ImportError:
            display_handle = None
    losses: list[float] = []
    epoch_loss: list[float] = []
    start = time.perf_counter()
    stopped = False
    bar = tqdm(total=epochs, desc="epochs", disable=not progress, file=sys.stdout, leave=True)
    with torch_threads(threads):
        for _epoch in range(epochs):
            total, count = 0.0, 0
            for batch in batches():
                loss = float(step(batch))
                losses.append(loss)
                total, count = total + loss, count + 1
                if display_handle is not None and len(losses) % plot_every == 0:
                    figure = plot_losses(losses, title)
                    display_handle.update(figure)
                    plt.close(figure)
                if time_limit is not None and time.perf_counter() - start > time_limit:
                    stopped = True
                    break
            epoch_loss.append(total / max(count, 1))
            bar.update(1)
            bar.set_postfix(loss=f"{epoch_loss[-1]:.3f}")
            if stopped:
                break
    bar.close()
    seconds = time.perf_counter() - start
    if display_handle is not None and losses:
        figure = plot_losses(losses, title)
        display_handle.update(figure)
        plt.close(figure)
    if stopped:
        print(f"stopped after {seconds:.0f} s (time limit {time_limit:.0f} s)")
    return {"losses": losses, "epoch_loss": epoch_loss, "seconds": seconds, "stopped_early": stopped}
