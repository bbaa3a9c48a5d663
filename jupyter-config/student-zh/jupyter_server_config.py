# The Chinese edition's Lab (`make lab EDITION=zh`): this folder goes in front of jupyter-config/student on
# JUPYTER_CONFIG_PATH, so the student's configuration still applies and only the interface's language changes.
# JupyterLab reads settings overrides from its application settings folder alone (no config path), so that folder
# is lab-settings/ here; the pip-installed JupyterLab's own (<prefix>/share/jupyter/lab/settings) holds nothing.
# A Python file rather than JSON: the path is taken relative to this file, wherever the course is checked out.
from pathlib import Path

c.LabApp.app_settings_dir = str(Path(__file__).resolve().parent / "lab-settings")  # noqa: F821 (traitlets' config)
