"""What an import did: per session, what was stored; per file, what was skipped and why."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

MAX_LISTED_LINES = 200


@dataclass
class SkippedLine:
    line: int | None
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"line": self.line, "reason": self.reason}


@dataclass
class SessionReport:
    external_id: str
    parent: str | None = None
    kind: str = "session"
    messages: int = 0
    duplicates: int = 0
    compactions: int = 0
    kept_stored: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "external_id": self.external_id,
            "parent": self.parent,
            "kind": self.kind,
            "messages": self.messages,
            "duplicates": self.duplicates,
            "compactions": self.compactions,
            "kept_stored": self.kept_stored,
            "replaced": self.replaced,
        }


@dataclass
class FileReport:
    path: str
    format: str = ""
    kind: str = ""
    sessions: list[str] = field(default_factory=list)
    records: int = 0
    skipped: list[SkippedLine] = field(default_factory=list)
    skipped_count: int = 0
    unknown_types: Counter[str] = field(default_factory=Counter)
    ignored: Counter[str] = field(default_factory=Counter)
    error: str | None = None
    note: str | None = None

    def skip(self, line: int | None, reason: str) -> None:
        self.skipped_count += 1
        if len(self.skipped) < MAX_LISTED_LINES:
            self.skipped.append(SkippedLine(line, reason))

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "format": self.format,
            "kind": self.kind,
            "sessions": self.sessions,
            "records": self.records,
            "skipped": [s.to_dict() for s in self.skipped],
            "skipped_count": self.skipped_count,
            "unknown_types": dict(self.unknown_types),
            "ignored": dict(self.ignored),
            "error": self.error,
            "note": self.note,
        }


@dataclass
class ImportReport:
    files: list[FileReport] = field(default_factory=list)
    sessions: dict[str, SessionReport] = field(default_factory=dict)

    def file(self, path: str, *, format: str) -> FileReport:
        report = FileReport(path=path, format=format)
        self.files.append(report)
        return report

    def session(
        self, external_id: str, *, parent: str | None = None, kind: str = "session"
    ) -> SessionReport:
        found = self.sessions.get(external_id)
        if found is None:
            found = self.sessions[external_id] = SessionReport(external_id, parent, kind)
        return found

    @property
    def messages(self) -> int:
        return sum(s.messages for s in self.sessions.values())

    @property
    def duplicates(self) -> int:
        return sum(s.duplicates for s in self.sessions.values())

    @property
    def compactions(self) -> int:
        return sum(s.compactions for s in self.sessions.values())

    @property
    def skipped_lines(self) -> int:
        return sum(f.skipped_count for f in self.files)

    @property
    def unknown_types(self) -> Counter[str]:
        total: Counter[str] = Counter()
        for f in self.files:
            total.update(f.unknown_types)
        return total

    def to_dict(self) -> dict[str, Any]:
        return {
            "messages": self.messages,
            "duplicates": self.duplicates,
            "compactions": self.compactions,
            "skipped_lines": self.skipped_lines,
            "unknown_types": dict(self.unknown_types),
            "sessions": [s.to_dict() for s in self.sessions.values()],
            "files": [f.to_dict() for f in self.files],
        }

    def render(self) -> str:
        """The report for people: one block per file, then the totals."""
        out: list[str] = []
        for f in self.files:
            head = f"{f.path} [{f.format}{', ' + f.kind if f.kind else ''}]"
            if f.error:
                out.append(f"{head}: not imported: {f.error}")
                continue
            out.append(f"{head}: {f.records} records")
            if f.note:
                out.append(f"  {f.note}")
            for external_id in f.sessions:
                s = self.sessions[external_id]
                parent = f" (child of {s.parent})" if s.parent else ""
                out.append(
                    f"  session {external_id}{parent}: {s.messages} messages stored, "
                    f"{s.duplicates} already there, {s.compactions} compactions"
                )
                for text in s.kept_stored:
                    out.append(f"    kept stored: {text}")
                for text in s.replaced:
                    out.append(f"    replaced: {text}")
            if f.ignored:
                listed = ", ".join(f"{k} {v}" for k, v in sorted(f.ignored.items()))
                out.append(f"  not messages: {listed}")
            if f.unknown_types:
                listed = ", ".join(f"{k} {v}" for k, v in sorted(f.unknown_types.items()))
                out.append(f"  unknown record types: {listed}")
            for skipped in f.skipped:
                where = f"line {skipped.line}" if skipped.line is not None else "file"
                out.append(f"  skipped {where}: {skipped.reason}")
            if f.skipped_count > len(f.skipped):
                out.append(f"  ... and {f.skipped_count - len(f.skipped)} more skipped lines")
        out.append(
            f"Total: {len(self.sessions)} sessions, {self.messages} messages stored, "
            f"{self.duplicates} already there, {self.compactions} compactions, "
            f"{self.skipped_lines} lines skipped."
        )
        return "\n".join(out)
