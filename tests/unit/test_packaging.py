"""pyproject.toml in the shape the build backend expects today: the build prints no deprecation warning of ours.

setuptools 77 and later warn (twice, a dozen lines each, on every ``pip install -e .``) about a ``project.license``
written as a TOML table; PEP 639 wants an SPDX expression and ``license-files``. Checked here without running a
build (which would download setuptools): the keys' shapes, and that the build requires a setuptools that reads them.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_license_is_an_spdx_expression_with_its_files() -> None:
    project = PYPROJECT["project"]
    assert isinstance(project["license"], str) and re.fullmatch(
        r"[A-Za-z0-9.+-]+( (AND|OR|WITH) [A-Za-z0-9.+-]+)*", project["license"]
    )
    assert project["license-files"], "license-files names the license text shipped in the wheel"
    for pattern in project["license-files"]:
        assert list(ROOT.glob(pattern)), f"license-files pattern {pattern!r} matches no file"
    assert not any(c.startswith("License ::") for c in project.get("classifiers", [])), "PEP 639: no license classifier"


def test_the_build_requires_a_setuptools_that_reads_pep_639() -> None:
    (requirement,) = [r for r in PYPROJECT["build-system"]["requires"] if r.startswith("setuptools")]
    minimum = re.fullmatch(r"setuptools>=(\d+)(\.\d+)*", requirement)
    assert minimum and int(minimum.group(1)) >= 77, requirement


def test_the_editable_install_is_a_plain_path_entry_so_pip_prints_no_setuptools_notice() -> None:
    """Without ``package-dir = {"" = "."}`` setuptools installs ``-e .`` through a meta path finder and prints a
    12-line "Editable installation" notice on every ``make serve`` of a new checkout; with it, one ``.pth`` line."""
    assert PYPROJECT["tool"]["setuptools"]["package-dir"] == {"": "."}
