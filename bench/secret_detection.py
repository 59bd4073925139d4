"""Secret detection on ``bench/secrets/labelled.jsonl``: mino's detector beside Yelp's
detect-secrets, same run, both error rates per variant and per split.

    .venv/bin/python bench/secret_detection.py [--json]

- false positives: look-alike lines (hashes, UUIDs, flags, versions, references) in which
  a detector finds a secret, over all look-alike lines;
- false negatives: secret lines in which it finds none, over all secret lines;
- leaks: secret lines it flags but whose secret survives its redaction (for
  detect-secrets: the line with every reported value replaced).

``dev`` lines were written before mino's detector, which was then built on them; ``holdout``
lines were written after and never tuned on: read those as the honest figure. Cost: CPU
per line (process time) and the import's cold cost in a fresh interpreter. detect-secrets
(``pip install detect-secrets==1.5.0``) is optional: without it its rows say so.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
LABELLED = HERE / "secrets" / "labelled.jsonl"


def load() -> list[dict]:
    return [json.loads(line) for line in LABELLED.read_text(encoding="utf-8").splitlines()]


# -- mino ----------------------------------------------------------------------------------

def mino_variant(skip: tuple[str, ...] = ()):
    from mino_core import secret_scan

    def detect(lines: list[str]) -> list[str | None]:
        out = []
        for text in lines:
            spans = [s for s in secret_scan.find_secrets(text) if s[2] not in skip]
            if not spans:
                out.append(None)
                continue
            red, at = [], 0
            for start, end, _ in spans:
                red += [text[at:start], "[redacted]"]
                at = end
            out.append("".join(red) + text[at:])
        return out
    return detect


# The graph filter's secret patterns before this change (safety.py as of 6c0298a), kept
# here as the baseline: "password is X" shapes, prefixes, and whole-token randomness.
_OLD_SECRET = [
    r"\bsk-(live-|proj-|ant-)?[A-Za-z0-9_-]{16,}", r"\b(AKIA|ASIA)[0-9A-Z]{16}\b",
    r"\b(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}\b", r"\bgithub_pat_[A-Za-z0-9_]{20,}\b",
    r"\bglpat-[A-Za-z0-9_-]{16,}\b", r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b",
    r"\bAIza[0-9A-Za-z_-]{30,}\b", r"\b(sk|pk|rk)_(live|test)_[A-Za-z0-9]{16,}\b",
    r"-----BEGIN [A-Z ]*PRIVATE KEY( BLOCK)?-----",
    r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
    r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{16,}",
    r"(?i)\b(password|passwd|pwd|passphrase|secret|api[_ -]?key|access[_ -]?key|"
    r"auth[_ -]?token|token|client[_ -]?secret|private[_ -]?key)\b\s*(is|[:=])\s*['\"]?[^\s'\"]{6,}",
    r"(?i)[a-z][a-z0-9+.-]*://[^\s/:@]+:[^\s/@]+@",
]


def old_filter(lines: list[str]) -> list[str | None]:
    rxs = [re.compile(p) for p in _OLD_SECRET]
    long_random = re.compile(r"[A-Za-z0-9+/_=-]{32,}")

    def random(tok):
        letters = sum(c.isalpha() for c in tok)
        digits = sum(c.isdigit() for c in tok)
        if digits < 4 or letters < 4:
            return False
        return (sum(c.isupper() for c in tok) >= 3 and sum(c.islower() for c in tok) >= 3
                or digits >= 8)
    out = []
    for text in lines:
        red = text
        for rx in rxs:
            red = rx.sub("[redacted]", red)
        red = long_random.sub(lambda m: "[redacted]" if random(m.group(0)) else m.group(0), red)
        out.append(red if red != text else None)
    return out


# -- detect-secrets ------------------------------------------------------------------------

def ds_variant(plugins: list[str] | None, suffix: str = ".txt"):
    """detect-secrets as its CLI scans a file: the lines in one file, default filters."""
    def detect(lines: list[str]) -> list[str | None]:
        from detect_secrets.core.scan import scan_file
        from detect_secrets.settings import default_settings, transient_settings

        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "lines" + suffix)
            Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")
            ctx = default_settings() if plugins is None else transient_settings(
                {"plugins_used": [{"name": p} for p in plugins]})
            found: dict[int, set[str]] = {}
            with ctx:
                for s in scan_file(path):
                    found.setdefault(s.line_number, set()).add(s.secret_value or "")
        out = []
        for i, text in enumerate(lines, 1):
            if i not in found:
                out.append(None)
                continue
            red = text
            for value in sorted(found[i], key=len, reverse=True):
                if value:
                    red = red.replace(value, "[redacted]")
            out.append(red)
        return out
    return detect


PROVIDERS = ["AWSKeyDetector", "ArtifactoryDetector", "AzureStorageKeyDetector",
             "BasicAuthDetector", "CloudantDetector", "DiscordBotTokenDetector",
             "GitHubTokenDetector", "GitLabTokenDetector", "IbmCloudIamDetector",
             "IbmCosHmacDetector", "JwtTokenDetector", "MailchimpDetector", "NpmDetector",
             "OpenAIDetector", "PrivateKeyDetector", "PypiTokenDetector", "SendGridDetector",
             "SlackDetector", "SoftlayerDetector", "SquareOAuthDetector", "StripeDetector",
             "TelegramBotTokenDetector", "TwilioKeyDetector"]

VARIANTS = [
    ("mino (all five detectors)", mino_variant()),
    ("mino without prose", mino_variant(("prose",))),
    ("mino without entropy", mino_variant(("entropy",))),
    ("mino before this change (graph filter)", old_filter),
    ("detect-secrets 1.5.0 default (.txt)", ds_variant(None)),
    ("detect-secrets 1.5.0 default (.sh)", ds_variant(None, ".sh")),
    ("detect-secrets keyword only (.txt)", ds_variant(["KeywordDetector"])),
    ("detect-secrets providers only", ds_variant(PROVIDERS)),
    ("detect-secrets entropy only", ds_variant(["Base64HighEntropyString",
                                               "HexHighEntropyString"])),
]


def score(rows: list[dict], results: list[str | None]) -> dict:
    pos = [(r, x) for r, x in zip(rows, results) if r["secret"]]
    neg = [(r, x) for r, x in zip(rows, results) if not r["secret"]]
    fn = sum(1 for _, x in pos if x is None)
    leak = sum(1 for r, x in pos if x is not None and r["value"] in x)
    fp = sum(1 for _, x in neg if x is not None)
    return {"secret_lines": len(pos), "lookalike_lines": len(neg), "fp": fp, "fn": fn,
            "leak": leak, "fp_rate": fp / max(len(neg), 1), "fn_rate": fn / max(len(pos), 1)}


def import_cost(module: str) -> float | None:
    """Cold import of ``module`` in a fresh interpreter, ms (best of 3)."""
    best = None
    for _ in range(3):
        code = f"import time; t=time.perf_counter(); import {module}; print(time.perf_counter()-t)"
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           cwd=ROOT)
        if r.returncode != 0:
            return None
        ms = float(r.stdout) * 1000
        best = ms if best is None else min(best, ms)
    return best


def write_cost(turns: int = 300) -> dict:
    """CPU of the graph's journal writes per turn (an episode, its facts and call logs, as
    a turn writes them, texts from the labelled set, not cached) with the filter in
    ``Request.apply`` and without it, same run; and the first call's cost (the detector's
    patterns compile on first use)."""
    sys.path.insert(0, str(ROOT / "plugins" / "mino-memory-graph" / "src"))
    from mino_memory_graph import store as store_mod
    from mino_memory_graph.store import Store

    texts = [r["text"] for r in load()]

    def run(filtered: bool) -> float:
        with tempfile.TemporaryDirectory() as tmp:
            s = Store.open(Path(tmp) / "journal.jsonl", fsync=False)
            keep = store_mod.redact_op
            from mino_memory_graph.core import safety

            safety._OP_CACHE.clear()  # a turn's texts are new: measure them uncached
            if not filtered:
                store_mod.redact_op = lambda body: body
            try:
                c0 = time.process_time()
                for i in range(turns):
                    with s.write() as r:
                        ep = r.episode(f"task: {texts[i % len(texts)][:60]}")
                        r.add_fact(ep, "session", "3162e9b88232a6f92592ef75972bec46")
                        r.add_fact(ep, "message", texts[i % len(texts)])
                        for j in range(3):
                            r.commit_log(ep, "tool_call",
                                         f"Bash({texts[(i + j) % len(texts)][:200]}): ok")
                        r.commit_log(ep, "outcome", "success")
                return (time.process_time() - c0) / turns * 1000
            finally:
                store_mod.redact_op = keep
                s.close()

    code = ("import time; from mino_core import redact_secrets; t=time.process_time(); "
            "redact_secrets('export DB_PASSWORD=pg_Xq93!mLa'); print(time.process_time()-t)")
    first = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    run(True)  # warm both paths once
    without, with_ = min(run(False) for _ in range(3)), min(run(True) for _ in range(3))
    return {"turns": turns, "cpu_ms_per_turn_without_filter": without,
            "cpu_ms_per_turn_with_filter": with_,
            "first_call_ms": float(first.stdout) * 1000 if first.returncode == 0 else None}


def main() -> None:
    rows = load()
    report = {"lines": len(rows), "variants": []}
    for name, detect in VARIANTS:
        entry = {"variant": name}
        try:
            t0, c0 = time.perf_counter(), time.process_time()
            results = detect([r["text"] for r in rows])
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        except ImportError as exc:
            entry["error"] = f"not installed ({exc.name})"
            report["variants"].append(entry)
            continue
        for split in ("dev", "holdout", "all"):
            keep = [i for i, r in enumerate(rows) if split == "all" or r["split"] == split]
            entry[split] = score([rows[i] for i in keep], [results[i] for i in keep])
        entry["cpu_us_per_line"] = cpu / len(rows) * 1e6
        entry["wall_us_per_line"] = wall / len(rows) * 1e6
        report["variants"].append(entry)
    report["import_ms"] = {"mino_core.secret_scan (module)": import_cost("mino_core.secret_scan"),
                           "detect_secrets.core.scan": import_cost("detect_secrets.core.scan")}
    report["writes"] = write_cost()
    if "--json" in sys.argv:
        print(json.dumps(report, indent=1))
        return
    n_dev = sum(r["split"] == "dev" for r in rows)
    print(f"{len(rows)} labelled lines ({n_dev} dev, {len(rows) - n_dev} held out)")
    print(f"{'variant':42} {'split':8} {'FP':>10} {'FN':>10} {'leak':>5} {'CPU/line':>9}")
    for v in report["variants"]:
        if "error" in v:
            print(f"{v['variant']:42} {v['error']}")
            continue
        for split in ("dev", "holdout", "all"):
            s = v[split]
            print(f"{v['variant'] if split == 'dev' else '':42} {split:8} "
                  f"{s['fp']:3}/{s['lookalike_lines']:<3} {s['fp_rate']:4.0%} "
                  f"{s['fn']:3}/{s['secret_lines']:<3} {s['fn_rate']:4.0%} {s['leak']:5} "
                  + (f"{v['cpu_us_per_line']:7.0f}us" if split == "dev" else ""))
    for module, ms in report["import_ms"].items():
        print(f"import {module}: " + (f"{ms:.1f} ms" if ms is not None else "not installed"))
    w = report["writes"]
    print(f"graph journal writes, CPU per turn (6 ops, {w['turns']} turns): "
          f"{w['cpu_ms_per_turn_without_filter']:.3f} ms without the filter, "
          f"{w['cpu_ms_per_turn_with_filter']:.3f} ms with it; the detector's first call "
          f"(patterns compiled) {w['first_call_ms']:.1f} ms")


if __name__ == "__main__":
    main()
