"""What Python's own exception types say about a failure, by name.

A builtin exception about data or logic (``KeyError: 'input_ids'``,
``FileNotFoundError`` for a checkpoint) is raised by the job's own code; an
import that failed is a library missing or built for another stack. Anything
else (``RuntimeError`` carries every torch error) says nothing by its name.
Read by :mod:`nccl_doctor.differential.symptoms` (a traceback's exception)
and :mod:`nccl_doctor.differential.prose` (the name in the reporter's words).
Source: the Python standard library's built-in exception hierarchy
(docs.python.org/3/library/exceptions.html) and ``json.JSONDecodeError``.
"""

from __future__ import annotations

#: Python's own exceptions that a job's code raises about its data and logic (builtins).
APP_EXCEPTIONS = frozenset(
    {
        "KeyError",
        "IndexError",
        "ValueError",
        "TypeError",
        "AttributeError",
        "NameError",
        "UnboundLocalError",
        "ZeroDivisionError",
        "AssertionError",
        "NotImplementedError",
        "FileNotFoundError",
        "IsADirectoryError",
        "JSONDecodeError",
        "UnicodeDecodeError",
        "RecursionError",
        "StopIteration",
    }
)
#: Python's exceptions for a module or a shared library that could not be loaded.
IMPORT_EXCEPTIONS = frozenset({"ImportError", "ModuleNotFoundError"})
