"""The language of the messages a learner sees: the edition of the notebook that runs, not the machine's locale.

    from seqlab.i18n import _
    print(_("visible checks passed; hidden tests run at grading"))   # Chinese in a notebook of notebooks/zh/

The Chinese edition's notebooks carry ``"language": "zh"`` in their metadata (autograder/release.py writes it).
The kernel learns which notebook it runs from Jupyter Server, which starts it with ``JPY_SESSION_NAME`` set to the
notebook's path (VS Code sets ``__vsc_ipynb_file__``); ``SEQLAB_LANGUAGE=zh`` (or ``en``) overrides both, e.g. in
Colab. Anything else, a script or the grader's kernels, speaks English. The messages are translated with the
standard library's gettext from ``seqlab/locale/<language>/LC_MESSAGES/seqlab.mo``, compiled from
``i18n/zh/seqlab.po`` (``python autograder/i18n.py compile``); a message without a translation stays English.
"""

from __future__ import annotations

import functools
import gettext
import json
import logging
import os
import sys
from pathlib import Path

LOCALE_DIR = Path(__file__).resolve().parent / "locale"
DOMAIN = "seqlab"
ENGLISH = "en"


@functools.lru_cache(maxsize=32)
def _edition_of(path: str, modified: float) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            language = json.load(f).get("metadata", {}).get("language", ENGLISH)
    except (OSError, ValueError, AttributeError):
        return ENGLISH
    return language if isinstance(language, str) and language else ENGLISH


def _notebook_path() -> str | None:
    path = os.environ.get("JPY_SESSION_NAME")
    if not path:
        try:
            from IPython import get_ipython

            shell = get_ipython()
            path = shell.user_ns.get("__vsc_ipynb_file__") if shell is not None else None
        except ImportError:
            path = None
    return path if isinstance(path, str) and path.endswith(".ipynb") else None


def edition_of(notebook: str | os.PathLike) -> str:
    """The language of the notebook file's edition (its metadata's ``language``); English where it has none, or where
    the file cannot be read."""
    try:
        modified = os.stat(notebook).st_mtime
    except OSError:
        return ENGLISH
    return _edition_of(os.fspath(notebook), modified)


def language() -> str:
    """The language of this notebook's edition: ``SEQLAB_LANGUAGE``, else the running notebook's metadata, else English."""
    chosen = os.environ.get("SEQLAB_LANGUAGE", "").strip()
    if chosen:
        return chosen.replace("-", "_").split("_")[0].lower()
    path = _notebook_path()
    if path is None:
        return ENGLISH
    try:
        modified = os.stat(path).st_mtime
    except OSError:
        return ENGLISH
    return _edition_of(path, modified)


@functools.lru_cache(maxsize=8)
def translations(language: str) -> gettext.NullTranslations:
    return gettext.translation(DOMAIN, localedir=LOCALE_DIR, languages=[language], fallback=True)


def N_(message: str) -> str:
    """Marks a constant as a message for the catalog (gettext's ``gettext_noop``); translate it where it is shown."""
    return message


def _(message: str) -> str:
    """``message`` in the language of this notebook's edition (unchanged in English, or without a translation)."""
    if not message:
        return message
    chosen = language()
    return message if chosen == ENGLISH else translations(chosen).gettext(message)


# Fonts with the Chinese glyphs, in order of preference: Noto/Source Han (Linux, Colab after apt-get install
# fonts-noto-cjk), WenQuanYi (Debian's fonts-wqy-*), SimHei/Microsoft YaHei (Windows), PingFang SC (macOS).
CJK_FONTS = ("Noto Sans CJK SC", "Source Han Sans SC", "WenQuanYi Zen Hei", "WenQuanYi Micro Hei", "SimHei",
             "Microsoft YaHei", "PingFang SC")
_READ_ALOUD: dict[tuple[str, str], str] = {}  # (language, English text drawn in a figure) -> its translation
_READ_ALOUD_MOST = 2048


_LOOKED_FOR_NEW_FONTS = False


def cjk_font() -> str | None:
    """The first of :data:`CJK_FONTS` that matplotlib's font manager knows, or None.

    matplotlib lists the machine's fonts once, in its font cache, and never looks again: a font installed since
    (``apt-get install fonts-wqy-microhei`` in Colab, or after the cache was built) stays unknown to it. So when it
    knows none of :data:`CJK_FONTS`, the font files it has not listed are added to it, once per process."""
    from matplotlib import font_manager

    def first_known() -> str | None:
        known = {font.name for font in font_manager.fontManager.ttflist}
        return next((name for name in CJK_FONTS if name in known), None)

    found = first_known()
    if found is None and _add_fonts_installed_since_the_cache():
        found = first_known()
    return found


def _add_fonts_installed_since_the_cache() -> bool:
    """Adds to matplotlib's font manager the system's font files it does not list; True when there were any."""
    global _LOOKED_FOR_NEW_FONTS
    if _LOOKED_FOR_NEW_FONTS:
        return False
    _LOOKED_FOR_NEW_FONTS = True
    from matplotlib import font_manager

    manager = font_manager.fontManager
    listed = {font.fname for font in manager.ttflist}
    added = False
    for path in font_manager.findSystemFonts():
        if path not in listed:
            try:
                manager.addfont(path)
                added = True
            except (OSError, RuntimeError, ValueError):  # a file FreeType cannot read is not a font we can use
                continue
    return added


def _draw_with(font: str) -> None:
    """Glyphs DejaVu Sans lacks come from ``font`` (matplotlib's per-glyph fallback along font.family)."""
    import matplotlib

    families = list(matplotlib.rcParams["font.family"])
    if font not in families:
        matplotlib.rcParams["font.family"] = families + [font]
        _fall_back_in_open_figures(families, font)
    _quiet_about_the_weights_of(font)


def _fall_back_in_open_figures(families: list, font: str) -> None:
    """A text keeps the font.family it was made with: a figure's title and axis labels exist from plt.subplots on,
    before its first label is translated, and would draw their Chinese as empty boxes. Those of the open figures that
    have the families without ``font`` get it as their fallback too."""
    helpers = sys.modules.get("matplotlib._pylab_helpers")  # no pyplot yet: no open figure
    if helpers is None:
        return
    from matplotlib.text import Text

    for manager in helpers.Gcf.get_all_fig_managers():
        for text in manager.canvas.figure.findobj(Text):
            if list(text.get_fontfamily()) == families:
                text.set_fontfamily(families + [font])


class _OneWeightFont(logging.Filter):
    """Drops matplotlib's "findfont: Failed to find font weight bold for <font>" about the Chinese font: WenQuanYi has
    one weight, so the Chinese glyphs of bold text are drawn regular (its Latin glyphs still come from DejaVu Sans
    Bold); that is expected, and would otherwise be printed under a notebook's figure as if something were wrong."""

    def __init__(self, font: str):
        super().__init__()
        self.font = font

    def filter(self, record: logging.LogRecord) -> bool:
        return not (str(record.msg).startswith("findfont: Failed to find font weight")
                    and isinstance(record.args, tuple) and len(record.args) > 1 and record.args[1] == self.font)


def _quiet_about_the_weights_of(font: str) -> None:
    logger = logging.getLogger("matplotlib.font_manager")
    if not any(isinstance(f, _OneWeightFont) and f.font == font for f in logger.filters):
        logger.addFilter(_OneWeightFont(font))


def _joined(value, shown):
    """A list of texts as one, ", "-separated; a text through ``shown``; anything else as it is."""
    if isinstance(value, (list, tuple)):
        return ", ".join(shown(item) if isinstance(item, str) else str(item) for item in value)
    return shown(value) if isinstance(value, str) else value


def figure_text(message: str, **values) -> str:
    """``message`` (formatted with ``values``) for a matplotlib figure: title, axis label, legend, control caption.

    In a translated edition the figure shows the translation only where matplotlib finds a font with its glyphs
    (:func:`cjk_font`: Colab and a bare Debian have none, and Chinese would be drawn as empty boxes) and the text
    has no formula (:func:`_drawn_as_formula`); otherwise it draws the English text and remembers the translation, so that the figure's alt text and text equivalent
    (seqlab.a11y, through :func:`read_aloud`) are in the edition's language either way. Mark the literal with
    ``N_`` so that the catalog has it: ``figure_text(N_("time step t"))``. A value that is a list of texts is
    joined with ", ".
    """
    english = message.format(**{name: _joined(value, str) for name, value in values.items()}) if values else message
    chosen = language()
    if chosen == ENGLISH:
        return english
    translated = translations(chosen).gettext(message)
    # a value that is itself figure text drawn in English (a curve's name in a label) is read aloud translated too
    translated = translated.format(**{name: _joined(value, read_aloud) for name, value in values.items()}) \
        if values else translated
    if translated == english:
        return english
    font = cjk_font() if not _drawn_as_formula(translated) else None
    if font is not None:
        _draw_with(font)
        return translated
    _remember(english, translated)
    return english


def _drawn_as_formula(text: str) -> bool:
    """matplotlib draws a text with $...$ in it all with mathtext, whose fonts have no Chinese glyphs and no fallback
    (Chinese would be empty boxes even with a Chinese font): such a label is drawn in English, read aloud translated."""
    from matplotlib import cbook

    return cbook.is_math_text(text)


def read_aloud(text: str) -> str:
    """The translation :func:`figure_text` drew in English for want of a font, else ``text`` as it is."""
    if not _READ_ALOUD:
        return text
    chosen = language()
    return text if chosen == ENGLISH else _READ_ALOUD.get((chosen, text), text)


def choices(values) -> list:
    """A drop-down's options: ``values`` as they are in English; elsewhere (label, value) pairs whose labels are
    translated (the code still receives the English value). Mark the values with ``N_`` where they are defined."""
    values = list(values)
    if language() == ENGLISH:
        return values
    return [(_(value) if isinstance(value, str) else str(value), value) for value in values]


def figure_join(parts, separator: str = "; ") -> str:
    """Figure texts (each from :func:`figure_text`) joined with ``separator``, read aloud translated as a whole too."""
    english = separator.join(parts)
    translated = separator.join(read_aloud(part) for part in parts)
    if translated != english:
        _remember(english, translated)
    return english


def read_aloud_as(drawn: str, source: str) -> str:
    """``drawn`` is ``source`` re-laid out (wrapped, cut): read it aloud as ``source`` is read; returns ``drawn``."""
    spoken = read_aloud(source)
    if spoken != source and drawn != source:
        _remember(drawn, spoken)
    return drawn


def _remember(english: str, translated: str) -> None:
    if len(_READ_ALOUD) >= _READ_ALOUD_MOST:
        _READ_ALOUD.clear()
    _READ_ALOUD[(language(), english)] = translated
