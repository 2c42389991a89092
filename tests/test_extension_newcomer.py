"""What a researcher extending boloop with files of their own meets (a newcomer trial): one-line
refusals instead of tracebacks (a create argument given as ``--option``, a file that does not
import, a problem factory given as a method and the reverse, a misspelt problem option), id values
read by the option's declared type, ids with options in ``make_policy``, the user's file named in
a clash of ids, the mixed file versions of ``bench summary``, and the replay mismatch of a user's
edited method. Every file here is the test's own, written into ``tmp_path``."""

from __future__ import annotations

import inspect
import textwrap
from pathlib import Path

import pytest

from boloop.algorithms import Option, register_method
from boloop.errors import InvalidInputError
from boloop.study import create_study
from cli_runner import assert_refused, run_cli

SPACE = 'threshold = 0.5\n[[parameters]]\nname = "a"\nlow = 0.0\nhigh = 1.0\ngrid = 5\n'


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


# -- A: create's own arguments are not method options ---------------------------------------------
@pytest.mark.parametrize(
    "key",
    [
        p
        for p, v in inspect.signature(create_study).parameters.items()
        if v.kind is v.KEYWORD_ONLY or v.kind is v.POSITIONAL_OR_KEYWORD
    ],
)
def test_option_naming_a_create_argument_is_refused_in_one_line(tmp_path, key):
    _write(tmp_path, "sp.toml", SPACE)
    res = run_cli(
        [
            "study",
            "create",
            "s2",
            "--space",
            "sp.toml",
            "--seed",
            "1",
            "--option",
            f"{key}=2",
            "--storage",
            "memory://a",
        ],
        cwd=tmp_path,
    )
    line = assert_refused(res, f"--option {key}=", "not a method option")
    flags = {"seed": "--seed", "from_study": "--from", "method": "--method", "name": "NAME"}
    if key in flags:
        assert flags[key] in line


def test_a_method_option_cannot_take_a_name_the_entry_points_use():
    with pytest.raises(InvalidInputError, match="cannot be named 'seed'"):
        register_method("x-seeded", "levelset", "x", options=[Option("seed", "int", 0)])
