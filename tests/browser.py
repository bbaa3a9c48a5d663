"""Drive a real browser (Debian's Chromium, through Playwright) against a Jupyter server.

Playwright's own browser download is not used: the project's test set-up installs
Chromium from Debian (see .ci/run), and this module launches /usr/bin/chromium.
"""

from __future__ import annotations

import contextlib
import shutil
import time
from pathlib import Path
from typing import Iterator

from servers import TOKEN

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@contextlib.contextmanager
def chromium() -> Iterator["Browser"]:  # noqa: F821
    """Debian's Chromium, headless, for as many pages as the caller opens."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@contextlib.contextmanager
def new_page(browser, width: int = 1400, height: int = 1000) -> Iterator["Page"]:  # noqa: F821
    """A page in a context of its own (no storage shared with an earlier page)."""
    context = browser.new_context(viewport={"width": width, "height": height})
    try:
        yield context.new_page()
    finally:
        context.close()


def open_notebook(page, base: str, app: str, relative_path: str) -> None:
    """Open a notebook in JupyterLab (``app="lab"``) or Notebook 7 (``app="notebook"``).

    JupyterLab opens with its workspace reset, so that a server shared between tests never reopens
    the notebook of an earlier one beside it."""
    route = "lab/tree" if app == "lab" else "notebooks"
    reset = "&reset" if app == "lab" else ""
    page.goto(f"{base}/{route}/{relative_path}?token={TOKEN}{reset}")
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
    wait_for_kernel(page)


def wait_for_kernel(page, seconds: float = 120) -> None:
    """Wait until the notebook's kernel is idle: a Run All clicked earlier runs nothing, silently.

    Accepts the "Select Kernel" dialog (the default kernel) where the front end asks.
    """
    deadline = time.time() + seconds
    while time.time() < deadline:
        accept_kernel_dialog(page)
        if page.locator('.jp-Notebook-ExecutionIndicator[data-status="idle"]').count():
            return
        page.wait_for_timeout(500)
    raise TimeoutError("the notebook's kernel did not become idle")


def accept_kernel_dialog(page) -> None:
    """Accept the "Select Kernel" dialog (the default kernel) where the front end shows it."""
    dialog = page.locator(".jp-Dialog")
    if not dialog.count():
        return
    text = dialog.first.inner_text()
    if "Kernel" not in text:
        raise AssertionError(f"the front end shows a dialog: {text[:300]!r}")
    page.locator(".jp-Dialog .jp-mod-accept").first.click()
    page.wait_for_timeout(500)


def run_all_cells(page, attempts: int = 3) -> None:
    """Run > Run All Cells, the same menu in JupyterLab and Notebook 7.

    A front end whose kernel is still connecting can take the click and run nothing, silently:
    click again until some cell is queued or has run.
    """
    for _ in range(attempts):
        accept_kernel_dialog(page)
        page.get_by_role("menuitem", name="Run", exact=True).click()
        page.get_by_text("Run All Cells", exact=True).click()
        deadline = time.time() + 20
        while time.time() < deadline:
            accept_kernel_dialog(page)
            if any(p.strip() not in ("", "[ ]:") for p in code_prompts(page)):
                return
            page.wait_for_timeout(500)
    raise TimeoutError("Run All Cells ran nothing")


def code_prompts(page) -> list[str]:
    return page.locator(".jp-CodeCell .jp-InputPrompt").all_inner_texts()


def wait_until_idle(page, seconds: float = 240) -> None:
    """Wait until every code cell has run (its prompt shows a number), or one failed."""
    deadline = time.time() + seconds
    page.wait_for_timeout(1000)
    while time.time() < deadline:
        prompts = code_prompts(page)
        running = any("*" in p for p in prompts)
        all_ran = prompts and all(p.strip().startswith("[") and p.strip()[1:-2].strip().isdigit() for p in prompts)
        if not running and (all_ran or error_outputs(page)):
            return
        page.wait_for_timeout(500)
    raise TimeoutError(f"cells were still running, or some never ran: {prompt_summary(page)}")


def prompt_summary(page) -> str:
    """What the notebook shows when a wait ran out: the kernel's state and each code cell's prompt, in runs."""
    indicator = page.locator(".jp-Notebook-ExecutionIndicator")
    state = indicator.first.get_attribute("data-status") if indicator.count() else "not shown"
    runs: list[list] = []
    for number, prompt in enumerate(code_prompts(page), 1):
        shown = prompt.strip() or "(empty)"
        shown = "[n]:" if shown[1:-2].strip().isdigit() else shown
        if runs and runs[-1][0] == shown:
            runs[-1][2] = number
        else:
            runs.append([shown, number, number])
    cells = ", ".join(f"cells {a}-{b} {p}" if a != b else f"cell {a} {p}" for p, a, b in runs)
    return f"kernel {state}; {cells}"


def error_outputs(page) -> list[str]:
    """Text of every error or stderr output shown in the notebook."""
    return page.locator('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]').all_inner_texts()


def scroll_to(page, locator, steps: int = 150) -> None:
    """Scroll the notebook, as a person would, until ``locator`` is on screen.

    JupyterLab 4 only renders the cells near the viewport, so an element far away is not
    in the page at all until the notebook scrolls there.
    """
    # "Run All" follows the running cell, so a widget near the end is usually rendered already;
    # it may take a moment to appear after its cell finished.
    deadline = time.time() + 60
    while time.time() < deadline:
        if locator.count():
            locator.first.evaluate("element => element.scrollIntoView({block: 'center'})")
            return
        page.wait_for_timeout(250)
    notebook = page.locator(".jp-WindowedPanel-outer, .jp-Notebook").first
    box = notebook.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    for direction in (-1, 1):  # after "Run All" the view is near the end: look upwards first
        for _ in range(steps):
            if locator.count() and locator.first.is_visible():
                locator.first.scroll_into_view_if_needed()
                return
            page.mouse.wheel(0, direction * 700)
            page.wait_for_timeout(150)
    raise TimeoutError(f"could not find {locator} in the notebook")


def widget_box(page, label: str):
    """The innermost widget box that holds a control with this description, and a figure."""
    control = page.locator(".widget-inline-hbox", has=page.locator(".widget-label", has_text=label))
    scroll_to(page, control)
    return page.locator(".widget-vbox", has=control.first).filter(has=page.locator("img")).last


def figure_source(box) -> str:
    image = box.locator("img").first
    image.wait_for(timeout=60_000)
    return image.get_attribute("src") or ""


def nudge_slider(page, box, label: str, pixels: int = 40) -> None:
    """Drag a slider's handle with the mouse, as a person would (right, or left from the end)."""
    control = box.locator(".widget-inline-hbox", has=page.locator(".widget-label", has_text=label)).first
    handle = control.locator('[role="slider"], .noUi-handle, .ui-slider-handle').first
    # Centre it: near the top, a sticky toolbar (Notebook 7) would take the mouse.
    handle.evaluate("element => element.scrollIntoView({block: 'center'})")
    if handle.get_attribute("aria-valuenow") == handle.get_attribute("aria-valuemax"):
        pixels = -pixels  # already at the right end: move it left instead
    drag_by(page, handle, pixels)


def wait_for_new_figure(box, before: str, seconds: float = 30) -> str:
    deadline = time.time() + seconds
    while time.time() < deadline:
        now = figure_source(box)
        if now and now != before:
            return now
        time.sleep(0.25)
    raise TimeoutError("the figure did not change after the control moved")


def figure_scale(box) -> float:
    """How large the widget's figure is shown, relative to its PNG: below 1 the front end shrank it to fit."""
    return box.locator("img").first.evaluate("image => image.clientWidth / image.naturalWidth")


def screenshot(box, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    box.scroll_into_view_if_needed()
    box.screenshot(path=str(path))
    return path


# ---- the layout of widgets at a laptop's width (issue 41) -----------------------------------------------------------

def show_file_browser(page) -> None:
    """Open JupyterLab's file browser in the left side bar (as a learner who opened the notebook from it has it),
    so that the notebook gets the width it has on a laptop, not the whole window. Notebook 7 has no side bar."""
    panel = page.locator("#filebrowser")
    if panel.count() and panel.first.is_visible():
        return
    page.locator('.jp-SideBar.jp-mod-left [data-id="filebrowser"], .jp-SideBar.jp-mod-left li[title*="File Browser"]'
                 ).first.click()
    panel.first.wait_for(state="visible", timeout=15_000)
    page.wait_for_timeout(500)  # the notebook's width changes: let the widgets lay themselves out again


# Measured in the page, in one call: every slider's track, every control's box against the notebook column that
# holds it, and every explorer (a widget box with a figure) with its height.
_LAYOUT_SCRIPT = """() => {
  const rect = e => { const r = e.getBoundingClientRect(); return {left: r.left, right: r.right, top: r.top,
                                                                   bottom: r.bottom, width: r.width, height: r.height}; };
  const labelOf = e => { const l = e.querySelector('.widget-label'); return l ? l.textContent.trim() : ''; };
  const column = e => e.closest('.jp-OutputArea-output') || e.closest('.jp-Cell');
  const sliders = [...document.querySelectorAll('.widget-hslider')].map(s => {
    const track = s.querySelector('.noUi-target') || s.querySelector('.slider-container');
    return {label: labelOf(s), track: track ? rect(track).width : 0};
  });
  const controls = [];
  for (const control of document.querySelectorAll('.widget-inline-hbox')) {
    const c = rect(column(control));
    for (const part of [control, ...control.children]) {
      const r = rect(part);
      if (getComputedStyle(part).display === 'none') continue;
      controls.push({label: labelOf(control), part: part.className.split(' ')[0] || part.tagName, width: r.width,
                     left: r.left, right: r.right, column_left: c.left, column_right: c.right});
    }
  }
  const explorers = [...document.querySelectorAll('.jp-OutputArea-output > .widget-vbox, .jp-OutputArea-output .widget-vbox')]
    .filter(v => v.querySelector('img') && !v.parentElement.closest('.widget-vbox'))
    .map(v => ({labels: [...v.querySelectorAll('.widget-label')].map(l => l.textContent.trim()).filter(t => t),
                height: rect(v).height, width: rect(v).width}));
  const outputs = [...document.querySelectorAll('.jp-OutputArea-output')].map(o => rect(o).width);
  return {sliders, controls, explorers, column: outputs.length ? Math.max(...outputs) : 0,
          window: {width: window.innerWidth, height: window.innerHeight}};
}"""


def widget_layout(page) -> dict:
    """Sizes in CSS pixels, as the page lays the notebook's widgets out now:

    ``sliders``: ``{label, track}`` (the width of each slider's track); ``controls``: each control and each of its
    parts (label, input, track, read-out) with its left and right edges and those of the notebook column that holds
    it; ``explorers``: ``{labels, height, width}`` for each outermost widget box with a figure; ``column``: the
    widest output area (the notebook column's width for outputs); ``window``: the viewport."""
    return page.evaluate(_LAYOUT_SCRIPT)


def drag_by(page, handle, pixels: float) -> None:
    """Press the mouse on the handle's centre, move it ``pixels`` sideways in small steps, release: a person's drag."""
    where = handle.bounding_box()
    x, y = where["x"] + where["width"] / 2, where["y"] + where["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + pixels, y, steps=8)
    page.mouse.up()


def slider_handle(page, box, label: str):
    control = box.locator(".widget-inline-hbox", has=page.locator(".widget-label", has_text=label)).first
    return control, control.locator('[role="slider"], .noUi-handle').first


def drag_slider(page, box, label: str, pixels: int = 60) -> dict:
    """Drag a slider's handle ``pixels`` to the right (to the left when it sits in the upper half of its range), as
    a person would, and report ``{track, pixels, moved_px, before, after}``: how far the value moved, in pixels of its
    track (its change over the range, times the track's width). On a slider that follows the mouse, ``moved_px`` is
    ``pixels``, give or take a step."""
    control, handle = slider_handle(page, box, label)
    handle.evaluate("element => element.scrollIntoView({block: 'center'})")
    track = control.locator(".noUi-target, .slider-container").first.bounding_box()["width"]
    low, high = (float(handle.get_attribute(name)) for name in ("aria-valuemin", "aria-valuemax"))
    before = float(handle.get_attribute("aria-valuenow"))
    if before > (low + high) / 2:
        pixels = -pixels
    drag_by(page, handle, pixels)
    page.wait_for_timeout(200)
    after = float(handle.get_attribute("aria-valuenow"))
    return {"track": track, "pixels": pixels, "moved_px": (after - before) / (high - low) * track,
            "before": before, "after": after}


def choose_option(page, box, label: str, option: str) -> None:
    """Pick ``option`` in the drop-down described ``label``."""
    control = box.locator(".widget-inline-hbox", has=page.locator(".widget-label", has_text=label)).first
    control.locator("select").select_option(label=option)
