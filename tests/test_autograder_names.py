"""Which names the test kernel fetches from the student kernel before it runs a cell.

A name that a cell reads but does not define comes from the student kernel by value (a given
cell's data) or as a proxy (an answer). A function's parameters and locals are its own: fetching a
student's global that merely shares a parameter's name copies it for nothing, and chapter 1's
`LookupModel(table, default)` once copied a whole Brown trigram table that way (4.4 s a notebook).
"""

from __future__ import annotations

import ast
import sys

from course import REPO

sys.path.insert(0, str(REPO / "autograder" / "inkernel"))
from runner import names_from_outside  # noqa: E402


def outside(source: str) -> set[str]:
    return names_from_outside(ast.parse(source))


def test_parameters_and_locals_of_a_method_are_not_fetched():
    source = """
class LookupModel:
    def __init__(self, table=None, default=None):
        self.table = table or {}
        self.default = default or {}

    def __call__(self, word, context):
        scale = 1.0
        return scale * self.table.get(tuple(context), self.default).get(word, 0.0)
"""
    assert outside(source) == {"tuple"}


def test_globals_read_inside_a_function_are_fetched():
    source = """
def check(n, *rest, key=None, **options):
    return sample_sentence(model, vocab, n) + rest + [key]

check(2, key=answer_key)
"""
    assert outside(source) == {"sample_sentence", "model", "vocab", "answer_key"}


def test_what_a_definition_evaluates_where_it_stands_is_fetched():
    """Decorators, defaults and annotations run in the enclosing scope; a lambda is a function too."""
    source = """
@decorate
def f(x: Table = default_table, *, y=lambda q=outer_default: q + inner_free) -> Result:
    return x
"""
    assert outside(source) == {"decorate", "Table", "default_table", "outer_default", "inner_free", "Result"}


def test_names_the_cell_binds_at_its_top_level_are_not_fetched():
    source = """
rng = make_rng(0)
samples = [draw(rng) for _ in range(10)]
mean = sum(len(s) for s in samples) / len(samples)
def helper():
    return mean + rng.random() + later
later = 1
"""
    assert outside(source) == {"make_rng", "draw", "range", "sum", "len"}


def test_a_name_a_function_declares_global_is_not_its_own():
    source = """
def bump():
    global counter
    counter = counter + step
"""
    assert outside(source) == {"counter", "step"}


def test_nested_functions_see_their_enclosing_functions_names():
    source = """
def outer(a):
    b = a + 1
    def inner(c):
        return a + b + c + free
    return inner
"""
    assert outside(source) == {"free"}
