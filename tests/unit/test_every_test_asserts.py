"""No test can pass without checking something: each `test_*` function asserts, expects an exception
(`pytest.raises`, `pytest.fail`, ...), raises, or calls a helper of the suite that does one of these."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
_PYTEST_CHECKS = {"raises", "fail", "warns", "deprecated_call"}


def _checks_directly(node: ast.AST) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Assert | ast.Raise):
            return True
        if _is_pytest_check(sub):
            return True
    return False


def _is_pytest_check(node: ast.AST) -> bool:
    """`pytest.raises(...)`, `pytest.fail(...)`, ..."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    return node.func.attr in _PYTEST_CHECKS and isinstance(node.func.value, ast.Name) and node.func.value.id == "pytest"


def _calls(node: ast.AST) -> set[str]:
    names = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            func = sub.func
            names.add(func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else "")
    return names


def _functions() -> list[tuple[Path, ast.FunctionDef | ast.AsyncFunctionDef]]:
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                found.append((path, node))
    return found


def _checking_names(functions: list[tuple[Path, ast.FunctionDef | ast.AsyncFunctionDef]]) -> set[str]:
    """Names of the suite's functions that check something, directly or through another one (by name:
    a helper that asserts counts for every function of that name)."""
    checking = {node.name for _, node in functions if _checks_directly(node)}
    grew = True
    while grew:
        more = {node.name for _, node in functions if node.name not in checking and _calls(node) & checking}
        checking |= more
        grew = bool(more)
    return checking


def test_every_test_function_checks_something() -> None:
    functions = _functions()
    checking = _checking_names(functions)
    silent = [
        f"{path.relative_to(TESTS.parent)}:{node.lineno} {node.name}"
        for path, node in functions
        if node.name.startswith("test_") and not _checks_directly(node) and not _calls(node) & checking
    ]
    assert silent == []
    assert len(functions) > 1000  # the scan still finds the suite


def test_the_scan_finds_a_test_that_checks_nothing() -> None:
    tree = ast.parse("def helper(x):\n    return x\n\ndef test_nothing():\n    helper(1)\n")
    functions = [(TESTS / "example.py", node) for node in tree.body if isinstance(node, ast.FunctionDef)]
    checking = _checking_names(functions)
    (test,) = [node for _, node in functions if node.name == "test_nothing"]
    assert not _checks_directly(test) and not _calls(test) & checking
