"""The home folder, config.yaml and the settings that come from the environment."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_MODEL = "gpt-5-mini"
OPENAI_URL = "https://api.openai.com/v1"


class ConfigError(Exception):
    """A setting is missing or malformed; the message tells the person what to do."""


def home_dir() -> Path:
    raw = os.environ.get("MINO_HOME")
    return Path(raw).expanduser() if raw else Path.home() / ".mino"


def project_root(start: Path | None = None) -> Path:
    """The project folder: ``MINO_PROJECT`` if set, else the current folder."""
    raw = os.environ.get("MINO_PROJECT")
    return Path(raw).resolve() if raw else (start or Path.cwd()).resolve()


MIN_FREE_BYTES = 1 << 20  # below this on the home folder's disk, sessions cannot be saved


def _where(home: Path) -> str:
    return "MINO_HOME" if os.environ.get("MINO_HOME") else "the home folder"


def ensure_home(home: Path) -> None:
    """Create the home folder (0700) and its standard subfolders.

    Every problem is one ConfigError line naming the path and what to do: a home (or a
    folder in it: sessions, logs) that is a file, a home mino may not read or write, a
    disk with no space left. The memory backends' folders are theirs (declared in
    ``memory_backend``, checked by ``backends.check_folders``).
    """
    where = _where(home)
    for sub in ("", "sessions", "logs"):
        path = home / sub if sub else home
        try:
            path.stat()
        except PermissionError:  # a folder on the way may not be entered (an unreadable home)
            raise ConfigError(f"Cannot use {where} {home}: permission denied on the way to "
                              f"{path}. Set MINO_HOME to a folder you own (export "
                              "MINO_HOME=/path/to/folder).") from None
        except OSError:
            pass  # missing: made below
        if path.exists() and not path.is_dir():
            what = f"{where} {path}" if not sub else f"{path} (in {where})"
            raise ConfigError(f"{what} is a file, not a folder. Move it away"
                              + (", or set MINO_HOME to a folder." if not sub else "."))
        try:
            path.mkdir(parents=True, exist_ok=True, mode=0o700)
        except FileExistsError:
            raise ConfigError(f"{path} is a file, not a folder (in {where}). Move it away.") from None
        except NotADirectoryError:
            raise ConfigError(f"{where} {home}: a part of the path is a file, not a folder. "
                              "Set MINO_HOME to a folder.") from None
        except PermissionError:
            raise ConfigError(f"Cannot create {path}: permission denied. Set MINO_HOME to a "
                              "folder you own.") from None
        except OSError as exc:
            raise ConfigError(f"Cannot create {path}: {exc.strerror or exc}.") from None
        if not os.access(path, os.R_OK | os.W_OK | os.X_OK):
            info = path.stat()
            if info.st_mode & 0o700 == 0o700 and info.st_uid == os.geteuid():
                fix = "It is on a read-only disk or marked immutable (lsattr); use another folder"
            else:
                fix = "Fix its permissions (chmod u+rwx) or set MINO_HOME to another folder"
            what = f"{where} {path}" if not sub else f"{path} (in {where})"
            raise ConfigError(f"{what} is not readable and writable by you "
                              f"(mode {info.st_mode & 0o777:o}). {fix}.")
    try:
        free = os.statvfs(home).f_bavail * os.statvfs(home).f_frsize
    except (OSError, AttributeError):
        return
    if free < MIN_FREE_BYTES:
        raise ConfigError(f"No space left on the disk holding {where} {home} ({free} bytes "
                          "free): sessions cannot be saved. Free some space or set MINO_HOME "
                          "to another disk.")


def load_config(home: Path) -> dict[str, Any]:
    path = home / "config.yaml"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"Cannot read {path}: {exc}. Fix or remove the file.") from None
    import yaml

    from .yaml_safe import YAMLRefused, load_yaml

    try:
        data = load_yaml(text)
    except YAMLRefused as exc:
        raise ConfigError(f"{path} is refused: {exc}. Simplify it or remove it.") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None)
        where = f" (line {mark.line + 1}{': ' + problem if problem else ''})" if mark is not None else ""
        raise ConfigError(f"{path} is not valid YAML{where}. Fix it or remove it.") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path} must hold a mapping of settings (key: value), not {type(data).__name__}.")
    return data


@dataclass
class ModelSettings:
    api_key: str
    base_url: str
    model: str
    timeout: float = 120.0
    retries: int = 3
    backoff: float = 0.5
    extra: dict[str, Any] = field(default_factory=dict)


def _number(config: dict, key: str, default: float) -> float:
    value = config.get(key, default)
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{key} in config.yaml must be a number, not {value!r}.") from None


def model_settings(config: dict[str, Any]) -> ModelSettings:
    """Resolve the model settings; environment wins over config.yaml."""
    key = os.environ.get("OPENAI_API_KEY") or str(config.get("api_key") or "")
    url = (os.environ.get("MINO_BASE_URL") or os.environ.get("OPENAI_BASE_URL")
           or str(config.get("base_url") or ""))
    model = os.environ.get("MINO_MODEL") or str(config.get("model") or DEFAULT_MODEL)
    if not key and not url:
        from .invocation import command

        raise ConfigError(
            "No model service configured. For OpenAI: export OPENAI_API_KEY=sk-...; for a "
            "server on this machine (llama.cpp, Ollama, LM Studio, vLLM): export "
            "MINO_BASE_URL=http://127.0.0.1:8080/v1 (its address); or set api_key / base_url "
            f"in {home_dir() / 'config.yaml'}. Then run {command()} again ({command('doctor')} "
            "checks the set-up)."
        )
    return ModelSettings(
        api_key=key or "not-needed",
        base_url=url or OPENAI_URL,
        model=model,
        timeout=_number(config, "timeout", 120.0),
        retries=int(_number(config, "retries", 3)),
        backoff=float(os.environ.get("MINO_RETRY_BACKOFF") or _number(config, "retry_backoff", 0.5)),
    )
