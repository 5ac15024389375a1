"""A small repository in memory, and the tools a coding agent uses on it (read, edit, grep, ls,
pytest).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tests.example_traces.trace import Call


def _numbered(text: str) -> str:
    """File contents the way ``cat -n`` prints them, as coding agents' read tools do."""
    return "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(text.splitlines(), 1))


def _rule(title: str, char: str = "=") -> str:
    return f" {title} ".center(80, char)


@dataclass(frozen=True)
class Failure:
    """A failing test as pytest reports it."""

    test_id: str
    error: tuple[str, ...]
    marker: str = "assert "
    exception: str = "AssertionError"
    frames: tuple[tuple[str, str, str, str], ...] = ()
    arguments: tuple[str, ...] = ()


class Repo:
    """Files in memory, and the tools a coding agent uses on them."""

    def __init__(self, files: dict[str, str], *, root: str, pytest_version: str) -> None:
        self.files = dict(files)
        self.root = root
        self.pytest_version = pytest_version
        self.params: dict[tuple[str, str], list[str]] = {}
        self.edited: list[str] = []
        self._seen: set[str] = set()

    def read(self, path: str, *, fails: bool = False) -> Call:
        text = self.files.get(path)
        if text is None:
            call = Call("read_file", {"path": path}, f"File does not exist: {path}", True)
        else:
            self._seen.add(path)
            call = Call("read_file", {"path": path}, _numbered(text), seconds=0.4)
        return _checked(call, fails)

    def edit(
        self, path: str, old: str, new: str, *, replace_all: bool = False, fails: bool = False
    ) -> Call:
        arguments: dict[str, Any] = {"path": path, "old_string": old, "new_string": new}
        if replace_all:
            arguments["replace_all"] = True
        text = self.files.get(path)
        count = 0 if text is None else text.count(old)
        if text is None or path not in self._seen:
            output = "File has not been read yet. Read it first before writing to it."
        elif count == 0:
            output = f"String to replace not found in file.\nString: {old}"
        elif count > 1 and not replace_all:
            output = (
                f"Found {count} matches of the string to replace, but replace_all is false. "
                "To replace all occurrences, set replace_all to true. To replace only one "
                f"occurrence, please provide more context to uniquely identify the instance.\n"
                f"String: {old}"
            )
        else:
            first = text[: text.index(old)].count("\n")
            text = text.replace(old, new) if replace_all else text.replace(old, new, 1)
            self.files[path] = text
            if path not in self.edited:
                self.edited.append(path)
            if replace_all:
                output = (
                    f"The file {path} has been updated. All occurrences of '{old}' were "
                    f"successfully replaced with '{new}'."
                )
            else:
                lines = text.splitlines()
                low, high = max(0, first - 4), min(len(lines), first + new.count("\n") + 5)
                snippet = "\n".join(f"{n + 1:>6}\t{lines[n]}" for n in range(low, high))
                output = (
                    f"The file {path} has been updated. Here's the result of running `cat -n` "
                    f"on a snippet of the edited file:\n{snippet}"
                )
            return _checked(Call("edit_file", arguments, output, seconds=0.8), fails)
        return _checked(Call("edit_file", arguments, output, True, seconds=0.3), fails)

    def grep(self, pattern: str, path: str = ".") -> Call:
        regex = re.compile(pattern)
        hits = [
            f"{name}:{number}:{line}"
            for name in sorted(self.files)
            if path == "." or name.startswith(path.rstrip("/") + "/") or name == path
            for number, line in enumerate(self.files[name].splitlines(), 1)
            if regex.search(line)
        ]
        output = "\n".join(hits[:250]) if hits else "No matches found"
        if len(hits) > 250:
            output += f"\n[{len(hits) - 250} more matches not shown]"
        return Call("grep", {"pattern": pattern, "path": path}, output, seconds=0.6)

    def ls(self, path: str = ".") -> Call:
        prefix = "" if path == "." else path.rstrip("/") + "/"
        names = sorted(name[len(prefix) :] for name in self.files if name.startswith(prefix))
        lines = [f"- {self.root}/{prefix}"]
        shown: set[str] = set()
        for name in names:
            parts = name.split("/")
            for depth in range(len(parts)):
                key = "/".join(parts[: depth + 1])
                if key in shown:
                    continue
                shown.add(key)
                is_dir = depth < len(parts) - 1
                lines.append("  " * (depth + 1) + f"- {parts[depth]}{'/' if is_dir else ''}")
        return Call("list_dir", {"path": path}, "\n".join(lines), seconds=0.3)

    def collect(self, target: str) -> list[str]:
        names = sorted(
            name
            for name in self.files
            if (name == target or name.startswith(target.rstrip("/") + "/"))
            and re.search(r"(^|/)test_\w+\.py$", name)
        )
        ids: list[str] = []
        for name in names:
            klass = ""
            for line in self.files[name].splitlines():
                if found := re.match(r"class (Test\w+)", line):
                    klass = found.group(1) + "::"
                elif found := re.match(r"def (test_\w+)\(", line):
                    klass = ""
                    ids.extend(self._expand(name, found.group(1), ""))
                elif klass and (found := re.match(r"    def (test_\w+)\(", line)):
                    ids.extend(self._expand(name, found.group(1), klass))
        return ids

    def _expand(self, path: str, function: str, klass: str) -> list[str]:
        params = self.params.get((path, function))
        if params:
            return [f"{path}::{klass}{function}[{p}]" for p in params]
        return [f"{path}::{klass}{function}"]

    def pytest(
        self,
        target: str,
        *,
        verbose: bool = False,
        failures: Sequence[Failure] = (),
        warnings: Sequence[str] = (),
        warning_count: int = 0,
        coverage: bool = False,
        seconds: float = 3.0,
    ) -> Call:
        ids = self.collect(target)
        failed = {failure.test_id: failure for failure in failures}
        missing = set(failed) - set(ids)
        if missing:
            raise RuntimeError(f"example script drifted: no such tests {sorted(missing)}")
        failures = sorted(failures, key=lambda failure: ids.index(failure.test_id))
        python = f" -- {self.root}/.venv/bin/python" if verbose else ""
        out = [
            _rule("test session starts"),
            f"platform linux -- Python 3.12.7, pytest-{self.pytest_version}, pluggy-1.5.0{python}",
        ]
        if verbose:
            out.append("cachedir: .pytest_cache")
        out += [
            f"rootdir: {self.root}",
            "configfile: pyproject.toml",
            "plugins: cov-5.0.0, anyio-4.6.2",
            f"{'collecting ... ' if verbose else ''}collected {len(ids)} items",
            "",
        ]
        total = len(ids)
        if verbose:
            for index, test_id in enumerate(ids, 1):
                left = f"{test_id} {'FAILED' if test_id in failed else 'PASSED'}"
                percent = f"[{index * 100 // total:3d}%]"
                out.append(left + " " * max(1, 80 - len(left) - len(percent)) + percent)
        else:
            done = 0
            for path in dict.fromkeys(test_id.split("::")[0] for test_id in ids):
                marks = "".join(
                    "F" if test_id in failed else "."
                    for test_id in ids
                    if test_id.split("::")[0] == path
                )
                done += len(marks)
                left = f"{path} {marks}"
                percent = f"[{done * 100 // total:3d}%]"
                out.append(left + " " * max(1, 80 - len(left) - len(percent)) + percent)
        out.append("")
        if failures:
            out.append(_rule("FAILURES"))
            for failure in failures:
                out += self._failure(failure)
        if warnings:
            out.append(_rule("warnings summary"))
            out += warnings
            out += ["", "-- Docs: https://docs.pytest.org/en/stable/how-to/capture-warnings.html"]
        if coverage:
            out += self._coverage()
        if failures:
            out.append(_rule("short test summary info"))
            out += [f"FAILED {f.test_id} - {_error_lines(f)[0]}" for f in failures]
        counts = [f"{len(failures)} failed"] if failures else []
        counts.append(f"{total - len(failures)} passed")
        if warnings:
            counts.append(f"{warning_count} warnings")
        out.append(_rule(f"{', '.join(counts)} in {seconds:.2f}s"))
        arguments: dict[str, Any] = {"path": target}
        flags = (["-v"] if verbose else []) + (["--cov=billing"] if coverage else [])
        if flags:
            arguments["args"] = flags
        return Call("run_tests", arguments, "\n".join(out), seconds=seconds + 1.5)

    def _coverage(self) -> list[str]:
        rows = []
        totals = [0, 0]
        for name in sorted(n for n in self.files if n.startswith("billing/") and n.endswith(".py")):
            lines = self.files[name].splitlines()
            statements = [
                number
                for number, line in enumerate(lines, 1)
                if (
                    line.strip()
                    and not line.strip().startswith(("#", '"""', "Args:", "Raises:", ">>>"))
                    and not line.startswith("        ")
                )
                or line.strip().startswith(("raise ", "return ", "if ", "continue"))
            ]
            risky = [
                number
                for number, line in enumerate(lines, 1)
                if line.strip().startswith(("raise ", "except ", "continue", "pass"))
            ]
            missing = risky[: zlib.crc32(name.encode()) % 4]
            totals[0] += len(statements)
            totals[1] += len(missing)
            cover = 100 - len(missing) * 100 // max(1, len(statements))
            rows.append(
                f"{name:<28}{len(statements):>6}{len(missing):>7}{cover:>6}%   "
                + ", ".join(str(number) for number in missing)
            )
        total_cover = 100 - totals[1] * 100 // max(1, totals[0])
        rule = "-" * 64
        return [
            "",
            "---------- coverage: platform linux, python 3.12.7-final-0 -----------",
            f"{'Name':<28}{'Stmts':>6}{'Miss':>7}{'Cover':>7}   Missing",
            rule,
            *(row.rstrip() for row in rows),
            rule,
            f"{'TOTAL':<28}{totals[0]:>6}{totals[1]:>7}{total_cover:>6}%",
            "",
        ]

    def _failure(self, failure: Failure) -> list[str]:
        path, _, name = failure.test_id.partition("::")
        function = name.split("::")[-1].split("[")[0]
        lines = self.files[path].splitlines()
        start = next(i for i, line in enumerate(lines) if re.match(rf"\s*def {function}\(", line))
        indent = len(lines[start]) - len(lines[start].lstrip())
        end = next(i for i in range(start + 1, len(lines)) if failure.marker in lines[i])
        out = [_rule(name.replace("::", "."), "_"), ""]
        arguments = failure.arguments or tuple(
            f"{arg} = <tests.billing.conftest.FakeProvider object at "
            f"0x7f{zlib.crc32(failure.test_id.encode()):08x}{len(failure.test_id) % 256:02x}>"
            for arg in re.findall(r"(\w+): FakeProvider", lines[start])
        )
        if "::" in name and not arguments:
            klass = name.split("::")[0]
            module = path.removesuffix(".py").replace("/", ".")
            arguments = (f"self = <{module}.{klass} object at 0x7f3a2c1d4e50>",)
        if arguments:
            out += [*arguments, ""]
        for i in range(start, end):
            out.append(("    " + lines[i][indent:]).rstrip())
        out.append(">   " + lines[end][indent:])
        if not failure.frames:
            out += [f"E       {line}" for line in _error_lines(failure)]
            return [*out, "", f"{path}:{end + 1}: {failure.exception}"]
        out += ["", f"{path}:{end + 1}: ", "_ " * 39 + "_"]
        where = ""
        for frame_path, needle, frame_function, anchor in failure.frames:
            source = self.files[frame_path].splitlines()
            after = next(i for i, line in enumerate(source) if anchor in line) if anchor else 0
            number = next(i for i in range(after, len(source)) if needle in source[i])
            out += [f"{frame_path}:{number + 1}: in {frame_function}", f"    {needle.strip()}"]
            where = f"{frame_path}:{number + 1}"
        out += [f"E   {line}" for line in _error_lines(failure)]
        return [*out, "", f"{where}: {failure.exception}"]


def _error_lines(failure: Failure) -> list[str]:
    if failure.exception == "AssertionError":
        return list(failure.error)
    return [f"{failure.exception}: {failure.error[0]}", *failure.error[1:]]


def _checked(call: Call, fails: bool) -> Call:
    if call.is_error != fails:
        raise RuntimeError(f"example script drifted: {call.name} {call.input}: {call.output}")
    return call
