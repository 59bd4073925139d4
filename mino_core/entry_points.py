"""Installed distributions' entry points and versions, read without ``importlib.metadata``.

Every ``mino`` command that loads plugins needs the ``mino`` entry points, and importing
``importlib.metadata`` alone (with the email, zipfile, csv and inspect modules it pulls
in) costs 10-20 ms a start, more than reading the handful of files involved. So this
reads what it reads the same way: each ``*.dist-info`` / ``*.egg-info`` folder on
``sys.path``, in ``sys.path`` order, the first of each normalised name winning; its
``entry_points.txt`` (INI: ``[group]`` then ``name = module:attr [extras]``) and the
``Name``/``Version`` headers of its ``METADATA`` / ``PKG-INFO``. A ``sys.path`` entry that
is not a folder (a zip) is left to ``importlib.metadata`` itself, as is anything odd.
"""
from __future__ import annotations

import importlib
import os
import re
import sys
from dataclasses import dataclass

_NAME = re.compile(r"[-_.]+")
_VALUE = re.compile(r"(?P<module>[\w.]+)\s*(:\s*(?P<attr>[\w.]+)\s*)?((?P<extras>\[.*\])\s*)?$")


@dataclass(frozen=True)
class Dist:
    name: str
    version: str


@dataclass(frozen=True)
class EntryPoint:
    """What ``importlib.metadata.EntryPoint`` offers the host: name, value, dist, load."""

    name: str
    value: str
    group: str
    dist: Dist | None = None

    def load(self):
        m = _VALUE.match(self.value)
        if m is None:
            raise ValueError(f"entry point {self.name!r}: {self.value!r} is not module:attr")
        obj = importlib.import_module(m.group("module"))
        for part in filter(None, (m.group("attr") or "").split(".")):
            obj = getattr(obj, part)
        return obj


def _normalise(name: str) -> str:
    return _NAME.sub("_", name).lower()


def _folders():
    """``(normalised name, path)`` of each distribution's metadata folder, first wins;
    None when some ``sys.path`` entry is not a plain folder (then ask importlib)."""
    seen: dict[str, str] = {}
    for entry in sys.path:
        entry = entry or "."
        if not os.path.isdir(entry):
            if os.path.exists(entry):
                return None  # a zip or an egg file: importlib.metadata knows those
            continue
        try:
            names = sorted(os.listdir(entry))
        except OSError:
            continue
        for n in names:
            if n.endswith(".dist-info") or n.endswith(".egg-info"):
                key = _normalise(n.rpartition(".")[0].partition("-")[0])
                path = os.path.join(entry, n)
                if key not in seen and os.path.isdir(path):
                    seen[key] = path
    return seen


def _headers(folder: str) -> Dist:
    fields = {}
    for name in ("METADATA", "PKG-INFO"):
        try:
            with open(os.path.join(folder, name), encoding="utf-8") as f:
                for line in f:
                    if not line.strip():
                        break
                    key, sep, value = line.partition(":")
                    if sep and key in ("Name", "Version"):
                        fields.setdefault(key, value.strip())
            break
        except OSError:
            continue
    return Dist(fields.get("Name", ""), fields.get("Version", ""))


def _parse(text: str, group: str) -> list[tuple[str, str]]:
    out, inside = [], False
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            inside = line[1:-1].strip() == group
        elif inside:
            name, sep, value = line.partition("=")
            if sep:
                out.append((name.strip(), value.strip()))
    return out


def entry_points(group: str) -> list:
    """The entry points of ``group`` across installed distributions."""
    folders = _folders()
    if folders is None:
        from importlib import metadata

        return list(metadata.entry_points(group=group))
    found = []
    for folder in folders.values():
        try:
            with open(os.path.join(folder, "entry_points.txt"), encoding="utf-8") as f:
                pairs = _parse(f.read(), group)
        except OSError:
            continue
        if pairs:
            dist = _headers(folder)
            found.extend(EntryPoint(n, v, group, dist) for n, v in pairs)
    return found


def version(distribution: str) -> str | None:
    """The installed version of ``distribution``, or None when it is not installed."""
    folders = _folders()
    if folders is None:
        from importlib import metadata

        try:
            return metadata.version(distribution)
        except metadata.PackageNotFoundError:
            return None
    folder = folders.get(_normalise(distribution))
    return _headers(folder).version or None if folder else None
