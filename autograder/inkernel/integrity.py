"""The integrity guard, executed INSIDE the grading kernel before the first cell of a submission.

The grader (executor.py) calls, through `user_expressions` (which no input or AST transformer
of the student's can touch):

    check("before", grade_id)   right before each graded test cell: find and UNDO tampering
    check("after", grade_id)    right after it: find tampering the test itself triggered

`install()` snapshots, before any student code runs:

* the comparison and check functions the tests rely on: every public attribute of builtins,
  math, operator, numpy, numpy.testing, torch, torch.testing, seqlab.check (and the methods
  of torch.Tensor and seqlab.check.CheckFailed), including each function's __code__ and
  defaults, and the modules' entries in sys.modules;
* the names the chapter's own import statements bind (cells tagged "definitions", e.g.
  `expect_close`, `np`): a student who rebinds `expect_close = lambda *a, **k: None` is caught;
* IPython and ipykernel machinery that decides whether a cell failed: AST/input transformers,
  event callbacks, custom exception handlers, showtraceback and run_cell (class and instance),
  the kernel's do_execute, sys.excepthook, sys.settrace/setprofile, sys.stdout/stderr.

Each finding is a plain-words sentence; the grader flags the submission and gives zero to the
graded cell it concerns. During each graded test cell, names that shadow a builtin
(`sum = 0`, `def isinstance(...)`) are moved aside and put back afterwards, and after it the
test's source is dropped from linecache so later student code cannot read it.

This is defence in depth for one process the student's code runs in; the hard guarantees
(files, network, resources) come from the sandbox.
"""

from __future__ import annotations

import ast
import builtins
import json
import linecache
import sys
import types

MODULES = ["builtins", "math", "operator", "numpy", "numpy.testing", "torch", "torch.testing", "seqlab.check",
           "seqlab.grading"]
CLASSES = [("torch", "Tensor"), ("seqlab.check", "CheckFailed")]
PROTECTED_PREFIXES = ("numpy", "torch", "seqlab", "math", "operator", "builtins")
SHELL_METHODS = ["run_cell", "run_cell_async", "run_ast_nodes", "run_code", "showtraceback", "_showtraceback",
                 "showsyntaxerror", "transform_cell", "transform_ast", "should_run_async", "user_expressions",
                 "ex", "ev"]
KERNEL_METHODS = ["do_execute", "execute_request", "send_response", "dispatch_shell", "process_one"]
IGNORED_BUILTINS = {"_", "__", "___", "exit", "quit", "get_ipython", "display", "copyright", "credits", "license",
                    "help", "__IPYTHON__", "__debug__", "__spec__", "__loader__", "__package__", "__name__",
                    "__doc__", "dreload", "runfile"}

_state: dict = {}


def _function_parts(obj):
    function = getattr(obj, "__func__", obj)
    if isinstance(function, types.FunctionType):
        return (function.__code__, function.__defaults__, function.__kwdefaults__)
    return None


def _snapshot_dict(namespace: dict, skip=()) -> dict:
    return {k: (v, _function_parts(v)) for k, v in list(namespace.items())
            if k not in skip and not (k.startswith("__") and k not in ("__import__", "__build_class__"))}


def _trusted_imports(definitions: str) -> dict:
    """The names the chapter's own import statements bind (run in a scratch namespace)."""
    namespace: dict = {}
    try:
        tree = ast.parse(definitions)
    except SyntaxError:
        return {}
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            try:
                exec(compile(ast.Module([node], []), "<definitions>", "exec"), namespace)
            except Exception:  # noqa: BLE001 - a missing optional library is not the student's doing
                pass
    namespace.pop("__builtins__", None)
    return {k: v for k, v in namespace.items() if _protected(v)}


def _protected(obj) -> bool:
    name = obj.__name__ if isinstance(obj, types.ModuleType) else getattr(obj, "__module__", None) or ""
    return name.split(".")[0] in {p.split(".")[0] for p in PROTECTED_PREFIXES}


def install(definitions: str = "") -> str:
    import IPython

    shell = IPython.get_ipython()
    modules = {}
    for name in MODULES:
        try:
            module = __import__(name, fromlist=["_"])
        except Exception:  # noqa: BLE001
            continue
        modules[name] = (module, _snapshot_dict(vars(module), IGNORED_BUILTINS if name == "builtins" else ()))
    classes = {}
    for module_name, class_name in CLASSES:
        module = sys.modules.get(module_name)
        cls = getattr(module, class_name, None) if module else None
        if isinstance(cls, type):
            classes[f"{module_name}.{class_name}"] = (cls, {k: (v, _function_parts(v)) for k, v in vars(cls).items()})
    shell_classes = {cls: {m: cls.__dict__[m] for m in SHELL_METHODS if m in cls.__dict__} for cls in type(shell).__mro__}
    kernel = getattr(shell, "kernel", None)
    kernel_classes = {cls: {m: cls.__dict__[m] for m in KERNEL_METHODS if m in cls.__dict__}
                      for cls in type(kernel).__mro__} if kernel is not None else {}
    _state.update(
        shell=shell, kernel=kernel, modules=modules, classes=classes, shell_classes=shell_classes,
        kernel_classes=kernel_classes, trusted=_trusted_imports(definitions),
        ast_transformers=list(shell.ast_transformers), input_cleanup=list(shell.input_transformers_cleanup),
        input_post=list(shell.input_transformers_post),
        line_transforms=list(shell.input_transformer_manager.line_transforms),
        token_transforms=list(shell.input_transformer_manager.token_transformers),
        events={k: list(v) for k, v in shell.events.callbacks.items()},
        custom_exceptions=shell.custom_exceptions, excepthook=sys.excepthook, stdout=sys.stdout,
        stderr=sys.stderr, sys_modules={name: sys.modules.get(name) for name in MODULES},
        shell_instance=set(vars(shell)), kernel_instance=set(vars(kernel)) if kernel is not None else set(),
        builtins_ns=shell.user_ns.get("__builtins__"), stash={},
        baseline={k: v for k, v in shell.user_ns.items() if hasattr(builtins, k)},
    )
    return json.dumps({"installed": True, "trusted": sorted(_state["trusted"])})


def _rewrapped_by_library(current, original) -> bool:
    """torch (dynamo) and numpy re-wrap some of their own functions at run time: not tampering.

    Accepted only when the new object has the same qualified name AND its code lives in the
    library's own files (a student's functools.wraps copy has its code in the notebook)."""
    name = getattr(original, "__qualname__", None)
    if name is None or getattr(current, "__qualname__", None) != name:
        return False
    top = (getattr(original, "__module__", "") or "").split(".")[0]
    if top not in ("torch", "numpy"):
        return False
    library = sys.modules[top].__file__.rsplit("/", 1)[0]
    function = current
    while hasattr(function, "__wrapped__") or hasattr(function, "__code__"):
        code = getattr(function, "__code__", None)
        if code is not None and not code.co_filename.startswith(library):
            return False
        if not hasattr(function, "__wrapped__"):
            break
        function = function.__wrapped__
    return True


def _restore_dict(where: str, namespace: dict, snapshot: dict, found: list) -> None:
    for key, (obj, parts) in list(snapshot.items()):
        current = namespace.get(key, _MISSING)
        if current is not obj and current is not _MISSING and _rewrapped_by_library(current, obj):
            snapshot[key] = (current, _function_parts(current))
            continue
        if current is not obj:
            found.append(f"{where}.{key} was replaced or deleted")
            namespace[key] = obj
        elif parts is not None and _function_parts(current) != parts:
            found.append(f"the code of {where}.{key} was changed")
            function = getattr(obj, "__func__", obj)
            function.__code__, function.__defaults__, function.__kwdefaults__ = parts


class _Missing:
    pass


_MISSING = _Missing()


def _restore_class(where: str, cls: type, snapshot: dict, found: list) -> None:
    for key, (obj, parts) in snapshot.items():
        current = cls.__dict__.get(key, _MISSING)
        if current is not obj:
            found.append(f"{where}.{key} was replaced or deleted")
            try:
                setattr(cls, key, obj)
            except (TypeError, AttributeError):
                pass
        elif parts is not None and _function_parts(current) != parts:
            found.append(f"the code of {where}.{key} was changed")
            function = getattr(obj, "__func__", obj)
            function.__code__, function.__defaults__, function.__kwdefaults__ = parts
    for key in set(cls.__dict__) - set(snapshot):
        if not key.startswith("__") or key in ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__bool__",
                                                "__float__", "__array__", "__array_function__", "__torch_function__"):
            if key in ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__bool__", "__float__",
                       "__array__", "__array_function__", "__torch_function__"):
                found.append(f"{where}.{key} was added")
                try:
                    delattr(cls, key)
                except (TypeError, AttributeError):
                    pass


def _library(callback) -> bool:
    """Callbacks that libraries register on their own (matplotlib's inline backend, ipywidgets)."""
    module = getattr(callback, "__module__", None) or getattr(getattr(callback, "__func__", None), "__module__", "") or ""
    return module.split(".")[0] in {"matplotlib", "matplotlib_inline", "ipykernel", "IPython", "ipywidgets", "seqlab"}


def _restore_list(where: str, current: list, saved: list, found: list) -> None:
    if list(current) != saved:
        found.append(f"IPython's {where} were changed (code could be rewritten before it runs)")
        current[:] = saved


def _restore_methods(obj, classes: dict, instance_names: set, methods: list, owner: str, prefix: str,
                     found: list) -> None:
    """Put back methods replaced on ``obj``'s classes, and drop ones shadowed on ``obj`` itself."""
    for cls, saved in classes.items():
        for name, method in saved.items():
            if cls.__dict__.get(name) is not method:
                found.append(f"{owner} {cls.__name__}.{name} was replaced")
                setattr(cls, name, method)
    for name in set(vars(obj)) - instance_names:
        if name in methods:
            found.append(f"{owner} {prefix}{name} was replaced")
            delattr(obj, name)


def _check_machinery(found: list) -> None:
    s = _state
    shell, kernel = s["shell"], s["kernel"]
    _restore_list("AST transformers", shell.ast_transformers, s["ast_transformers"], found)
    _restore_list("input transformers", shell.input_transformers_cleanup, s["input_cleanup"], found)
    _restore_list("input transformers", shell.input_transformers_post, s["input_post"], found)
    _restore_list("line transformers", shell.input_transformer_manager.line_transforms, s["line_transforms"], found)
    _restore_list("token transformers", shell.input_transformer_manager.token_transformers, s["token_transforms"], found)
    for event, callbacks in shell.events.callbacks.items():
        added = [c for c in callbacks if c not in s["events"].get(event, []) and not _library(c)]
        if added:
            found.append(f"a callback on IPython's '{event}' event was registered")
            callbacks[:] = [c for c in callbacks if c not in added]
    if shell.custom_exceptions != s["custom_exceptions"]:
        found.append("a custom exception handler was installed (set_custom_exc)")
        shell.set_custom_exc((), None)
        shell.custom_exceptions = s["custom_exceptions"]
    _restore_methods(shell, s["shell_classes"], s["shell_instance"], SHELL_METHODS, "IPython's", "shell.", found)
    if kernel is not None:
        _restore_methods(kernel, s["kernel_classes"], s["kernel_instance"], KERNEL_METHODS, "the kernel's", "", found)
    if sys.excepthook is not s["excepthook"]:
        found.append("sys.excepthook was replaced")
        sys.excepthook = s["excepthook"]
    if sys.gettrace() is not None or sys.getprofile() is not None:
        found.append("a trace or profile function was installed (sys.settrace / sys.setprofile)")
        sys.settrace(None)
        sys.setprofile(None)
    for name in ("stdout", "stderr"):
        if getattr(sys, name) is not s[name]:
            found.append(f"sys.{name} was replaced (output could be hidden)")
            setattr(sys, name, s[name])


def _check_modules(found: list) -> None:
    for name, (module, snapshot) in _state["modules"].items():
        _restore_dict(name, vars(module), snapshot, found)
    for name, module in _state["sys_modules"].items():
        if module is not None and sys.modules.get(name) is not module:
            found.append(f"sys.modules[{name!r}] was replaced")
            sys.modules[name] = module
    for where, (cls, snapshot) in _state["classes"].items():
        _restore_class(where, cls, snapshot, found)


def _check_namespace(found: list) -> None:
    user_ns = _state["shell"].user_ns
    for name, obj in _state["trusted"].items():
        if name in user_ns and user_ns[name] is not obj:
            found.append(f"the name `{name}` that the tests use was rebound")
            user_ns[name] = obj
    if user_ns.get("__builtins__") is not _state["builtins_ns"]:
        found.append("the notebook's __builtins__ was replaced")
        user_ns["__builtins__"] = _state["builtins_ns"]


def _stash_shadowing(found: list) -> None:
    """Move names that shadow a builtin out of the way while a test runs."""
    user_ns = _state["shell"].user_ns
    real = _state["modules"]["builtins"][1]
    stash = _state["stash"] = {}
    baseline = _state["baseline"]
    for name in [n for n in user_ns if n in real and not n.startswith("_")]:
        if user_ns[name] is not baseline.get(name, real[name][0]):
            stash[name] = user_ns.pop(name)
            if callable(stash[name]) and callable(real[name][0]) and not isinstance(stash[name], type):
                found.append(f"the builtin `{name}` was shadowed by a function of the notebook")


def _unstash() -> None:
    user_ns = _state["shell"].user_ns
    for name, value in _state.pop("stash", {}).items():
        user_ns.setdefault(name, value)


def _forget_tests() -> None:
    for cache in (linecache.cache, getattr(linecache, "_ipython_cache", {})):
        for key in list(cache):
            entry = cache.get(key)
            lines = entry[2] if isinstance(entry, tuple) and len(entry) > 2 else []
            if isinstance(lines, list) and any("BEGIN HIDDEN TESTS" in line for line in lines):
                cache.pop(key, None)


def check(when: str, grade_id: str = "") -> str:
    found: list[str] = []
    try:
        _check_machinery(found)
        _check_modules(found)
        _check_namespace(found)
        if when == "before":
            _stash_shadowing(found)
        else:
            _unstash()
            _forget_tests()
    except Exception as error:  # noqa: BLE001 - a guard that cannot look is itself a finding
        found.append(f"the integrity check failed: {type(error).__name__}: {error}")
    return json.dumps({"ok": True, "when": when, "grade_id": grade_id, "tampering": sorted(set(found))})
