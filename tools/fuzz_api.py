"""Fuzz the curator's HTTP API with Schemathesis, as a modeler and as the admin, and count what broke.

Starts ``pobo-curator serve`` on loopback (production mode, the deployment default; SQLite, or PostgreSQL
with ``--database-url``), registers a small table, makes a certified release and issues a modeler key so
that generated ids can hit real objects, then runs ``schemathesis run`` against the live ``/openapi.json``
once per token (modeler first: the admin run may revoke the modeler's key), seeded and bounded by
``--examples`` per operation. Each token is used once before its run, so the back-off that Schemathesis' own
missing- and bad-token cases start on loopback lets it through (a token proven lately passes an address's wait,
curator_service.admission). Prints one figures line per role and in total:

    requests (from the HAR log), how many of them reached their endpoint (every response but a 401 or a 429, which
    authentication and the back-off answer before any endpoint runs), 5xx responses, schema violations (a response
    whose status, content type, headers or body the OpenAPI does not document, or a 4xx without docs/design.md §5's
    error body: a sentence and a known code), other check failures (e.g. invalid input accepted), and refusals for
    what the data says.

Schemathesis calls every 4xx to a schema-valid request "rejected valid data". Many are right: an offset past
the end, a column the table lacks, a spent budget, a release this server no longer serves. The response's
``code`` tells them apart: a refusal with a sentence and a known code is counted as *refused for the data*,
unless it is the request model's own ``validation_error`` (a sentence starting "invalid request: "), which
means the model refuses what the OpenAPI allows: that stays a finding, as does any refusal without a sentence
or with an unknown code.

Writes every distinct failure (check, operation, status, example request, why) to ``--findings`` as
Markdown. Exit status: 0, unless ``POBO_FUZZ_STRICT=1`` and there was a 5xx, a schema violation or fewer
requests that reached their endpoint than ``--min-requests`` (``.ci/run`` sets it: such findings fail CI).

Run: ``.venv/bin/python tools/fuzz_api.py --examples 100 --seed 0 --findings build/fuzz/findings.md``
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import get_args

import httpx
import numpy as np

from curator_service.errors import REQUEST_MODEL_REFUSAL
from curator_service.testing import LocalCurator
from shared.api.schemas import ErrorCode

# Checks whose failure means the response contradicts the published contract: Schemathesis' conformance checks
# and ours, ERROR_BODY_CHECK (every 4xx carries docs/design.md §5's error body).
ERROR_BODY_CHECK = "error_body"
SCHEMA_CHECKS = {"status_code_conformance", "content_type_conformance", "response_headers_conformance",
                 "response_schema_conformance", ERROR_BODY_CHECK}
KNOWN_CODES = frozenset(get_args(ErrorCode))


@dataclass
class Finding:
    check: str
    code: str
    operation: str
    status: int | None
    title: str
    message: str
    request: str
    response: str
    count: int = 1


@dataclass
class RoleResult:
    role: str
    requests: int = 0
    statuses: Counter = field(default_factory=Counter)
    findings: dict[tuple, Finding] = field(default_factory=dict)
    refused_for_data: dict[tuple, Finding] = field(default_factory=dict)  # by (operation, code): not findings

    @property
    def reached(self) -> int:
        """Requests that reached their endpoint: not refused by authentication (401) or the back-off (429)."""
        return self.requests - self.statuses[401] - self.statuses[429]

    @property
    def server_errors(self) -> int:
        return sum(count for status, count in self.statuses.items() if status >= 500)

    def failures(self, schema: bool) -> int:
        return sum(f.count for f in self.findings.values() if (f.check in SCHEMA_CHECKS) == schema
                   and f.check != "not_a_server_error")

    @property
    def refusals(self) -> int:
        return sum(f.count for f in self.refused_for_data.values())


def seed_fixtures(curator: LocalCurator) -> str:
    """A 40 × 3 table, one certified release and a modeler key for it; returns the key's token."""
    rows = np.random.default_rng(0).uniform(0.0, 1.0, size=(40, 3))
    dataset = curator.register_table(
        "fuzz", rows, ["a", "b", "c"], evaluator={"kind": "column", "column": "y"}, budget=(1e3, 0.5),
        extra_columns={"y": rows.sum(axis=1)},
        scaling={"kind": "bounds", "lower": [0.0] * 3, "upper": [1.0] * 3, "diameter": 1.0},
    )
    release = curator.create_release(dataset.id, "gaussian", 1.0, 1e-5, 3)
    return curator.issue_key([release.id], max_queries=10**6, name="fuzz modeler").token


def prove(url: str, token: str, path: str) -> str:
    """Uses ``token`` once (a GET of ``path`` it may make), so the server counts it as proven; returns it."""
    httpx.get(f"{url}{path}", headers={"Authorization": f"Bearer {token}"}, timeout=60).raise_for_status()
    return token


def run_schemathesis(url: str, token: str, role: str, args: argparse.Namespace, report_dir: Path) -> RoleResult:
    report_dir.mkdir(parents=True, exist_ok=True)
    har, ndjson = report_dir / f"{role}.har.json", report_dir / f"{role}.ndjson"
    command = [
        str(Path(sys.executable).with_name("schemathesis")), "run", f"{url}/openapi.json",
        "--header", f"Authorization: Bearer {token}",
        "--checks", "all", "--max-examples", str(args.examples), "--seed", str(args.seed),
        "--workers", str(args.workers), "--request-timeout", "60", "--generation-database", "none",
        "--report", "har,ndjson", "--report-har-path", str(har), "--report-ndjson-path", str(ndjson),
        "--no-color", "--warnings", "off",
    ]
    if args.max_time:
        command += ["--max-time", str(args.max_time)]
    log_path = report_dir / f"{role}.log"
    with open(log_path, "w") as log:
        subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, check=False)
    result = RoleResult(role)
    if not har.exists() or not json.loads(har.read_text())["log"]["entries"]:
        reason = next((line.strip() for line in log_path.read_text().splitlines() if "❌" in line), "see its log")
        print(f"fuzz as {role}: Schemathesis sent no request ({reason}; {log_path})")
    if har.exists():
        entries = json.loads(har.read_text())["log"]["entries"]
        result.requests = len(entries)
        result.statuses = Counter(entry["response"]["status"] for entry in entries)
        check_error_bodies(entries, result)
    if ndjson.exists():
        collect_findings(ndjson, result)
    return result


def error_body(status: int | None, text: str) -> dict | None:
    """docs/design.md §5's error body of a 4xx (``detail``: a sentence, ``code``: a known machine code), or None."""
    try:
        body = json.loads(text)
    except ValueError:
        return None
    if not (status and 400 <= status < 500 and isinstance(body, dict) and isinstance(body.get("detail"), str)):
        return None
    return body if len(body["detail"].split()) >= 3 and body.get("code") in KNOWN_CODES else None


def refused_for_data(status: int | None, text: str) -> str | None:
    """The code of a schema-valid request's refusal for what the data or the server's state says, or None when
    the refusal is a finding (no error body, or the request model refusing what the OpenAPI allows)."""
    body = error_body(status, text)
    if body is None or (body["code"] == "validation_error" and body["detail"].startswith(REQUEST_MODEL_REFUSAL)):
        return None
    return body["code"]


def check_error_bodies(entries: list[dict], result: RoleResult) -> None:
    """A finding for every 4xx without a sentence and a known code, deduplicated by (path, status)."""
    for entry in entries:
        response, request = entry["response"], entry["request"]
        if not 400 <= response["status"] < 500 or error_body(response["status"], har_text(response)):
            continue
        path = httpx.URL(request["url"]).path
        key = (ERROR_BODY_CHECK, path, response["status"], None)
        if key in result.findings:
            result.findings[key].count += 1
            continue
        result.findings[key] = Finding(
            check=ERROR_BODY_CHECK, code="", operation=f"{request['method']} {path}", status=response["status"],
            title="4xx without an error body",
            message="docs/design.md §5: every error is {detail: sentence, code: known code}",
            request=f"{request['method']} {request['url']}", response=har_text(response)[:400])


def har_text(response: dict) -> str:
    content = response.get("content") or {}
    text = content.get("text") or ""
    return base64.b64decode(text).decode("utf-8", errors="replace") if content.get("encoding") == "base64" else text


def collect_findings(ndjson: Path, result: RoleResult) -> None:
    """Every failed check of every scenario, deduplicated by (check, operation, status, title); a schema-valid
    request refused for what the data says goes to ``result.refused_for_data`` instead (by operation and code)."""
    for line in ndjson.read_text().splitlines():
        event = json.loads(line)
        recorder = event.get("ScenarioFinished", {}).get("recorder", {})
        for case_id, checks in recorder.get("checks", {}).items():
            interaction = recorder.get("interactions", {}).get(case_id) or {}
            response = interaction.get("response") or {}
            for check in checks:
                if check["status"] == "success":
                    continue
                failure = (check.get("failure_info") or {}).get("failure") or {}
                status = response.get("status_code")
                operation = failure.get("operation", recorder.get("label"))
                key = (check["name"], operation, status, failure.get("title"))
                found = result.findings
                if check["name"] == "positive_data_acceptance" and (code := refused_for_data(
                        status, decode(response.get("content")))):
                    key, found = (operation, code), result.refused_for_data
                if key in found:
                    found[key].count += 1
                    continue
                found[key] = Finding(
                    check=check["name"], code=failure.get("code", ""), operation=key[1], status=status,
                    title=failure.get("title", ""), message=failure.get("message", "").strip(),
                    request=describe_request(interaction.get("request") or {}),
                    response=decode(response.get("content"))[:400],
                )


def decode(payload: object) -> str:
    """A recorded body as text; NUL bytes escaped so the findings stay a text file."""
    if isinstance(payload, dict) and "$base64" in payload:
        payload = base64.b64decode(payload["$base64"]).decode("utf-8", errors="replace")
    return "" if payload is None else str(payload).replace("\x00", "\\x00")


def describe_request(request: dict) -> str:
    body = decode(request.get("body"))
    return f"{request.get('method', '?')} {request.get('uri', '?')}" + (f"\n    body: {body[:400]}" if body else "")


def server_exceptions(log: Path) -> Counter:
    """Each unexpected exception in the server's log, as its type and innermost frame: from a traceback, or
    from the service's own ``unexpected X (message withheld …)`` entry."""
    found: Counter = Counter()
    inside, withheld, frame = False, None, ""
    for line in (log.read_text(errors="replace").splitlines() if log.exists() else []) + [""]:
        if line.startswith((" ", "\t")):
            frame = line.strip() if line.strip().startswith("File ") else frame
            continue
        if withheld:
            found[f"{withheld} at {frame}"] += 1
            withheld = None
        if inside and line:
            found[f"{line.split(':', 1)[0][:100]} at {frame}"] += 1  # the type only: a message may quote data
            inside = False
        inside = inside or line.startswith("Traceback (most recent call last)")
        if match := re.search(r"unexpected (\w+) \(message withheld", line):
            withheld, frame = match.group(1), ""
    return found


def figures(result: RoleResult) -> str:
    return (f"{result.requests} requests ({result.reached} reached their endpoint), {result.server_errors} 5xx, "
            f"{result.failures(schema=True)} schema violations, {result.failures(schema=False)} other check failures, "
            f"{result.refusals} refused for the data")


def write_findings(path: Path, results: list[RoleResult], tracebacks: Counter, header: str) -> None:
    """One section per role; one entry per (check, status), listing each operation with an example."""
    out = [f"# Fuzzing findings\n\n{header}\n"]
    for result in results:
        out.append(f"\n## As {result.role}: {figures(result)}\n\n"
                   f"Statuses: {dict(sorted(result.statuses.items()))}\n")
        groups: dict[tuple, list[Finding]] = {}
        for finding in result.findings.values():
            groups.setdefault((finding.check, finding.code, finding.title, finding.status), []).append(finding)
        for (check, code, title, status), findings in sorted(groups.items(), key=lambda item: str(item[0])):
            out.append(f"\n### {title} → {status} ({check}, {code}): {len(findings)} operation(s)\n\n"
                       f"Why: {findings[0].message}\n")
            for finding in sorted(findings, key=lambda f: f.operation):
                out.append(f"\n- `{finding.operation}` ×{finding.count}\n\n  ```\n  {finding.request}\n"
                           f"  → {finding.status} {finding.response}\n  ```\n")
        if result.refused_for_data:
            out.append(f"\n### Not findings: {result.refusals} schema-valid requests refused for what the data says\n\n"
                       "A sentence and a known code, not the request model's own refusal (see the module's "
                       "docstring).\n\n")
            out.extend(f"- `{operation}` → {code} ×{f.count}: {f.response[:200]}\n"
                       for (operation, code), f in sorted(result.refused_for_data.items()))
    if tracebacks:
        out.append("\n## Exceptions in the server's log (type and innermost frame)\n\n")
        out.extend(f"- ×{count}: `{line}`\n" for line, count in tracebacks.most_common())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(out))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=100, help="Schemathesis examples per operation and role")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--max-time", type=int, help="seconds per role (Schemathesis stops its phases then)")
    parser.add_argument("--database-url", help="run the server on this database (default: SQLite)")
    parser.add_argument("--min-requests", type=int, default=5000,
                        help="strict mode fails when fewer requests than this reached their endpoint")
    parser.add_argument("--findings", type=Path, default=Path("build/fuzz/findings.md"))
    parser.add_argument("--report-dir", type=Path, help="Schemathesis reports (default: a temporary directory)")
    return parser


def main() -> int:
    args = build_parser().parse_args()
    strict = os.environ.get("POBO_FUZZ_STRICT") == "1"
    env = {"POBO_MODE": "production", "POBO_ALLOW_UNCERTIFIED_MECHANISMS": "false"}
    if args.database_url:
        env["POBO_DATABASE_URL"] = args.database_url
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="pobo-fuzz-") as scratch:
        report_dir = args.report_dir or Path(scratch) / "reports"
        with LocalCurator(Path(scratch) / "curator", env=env, startup_timeout=300) as curator:
            modeler_token = seed_fixtures(curator)
            # The first /openapi.json builds the document; Schemathesis gives a schema 10 s, a loaded machine more.
            httpx.get(f"{curator.url}/openapi.json", timeout=300).raise_for_status()
            results = [run_schemathesis(curator.url, token, role, args, report_dir) for role, token in
                       (("modeler", prove(curator.url, modeler_token, "/v1/releases")),
                        ("admin", prove(curator.url, curator.admin_token, "/v1/keys")))]
        tracebacks = server_exceptions(curator.log_path)
        backend = "PostgreSQL" if args.database_url else "SQLite"
        header = (f"`tools/fuzz_api.py --examples {args.examples} --seed {args.seed}` on {backend}, "
                  f"{time.monotonic() - started:.0f} s.")
        write_findings(args.findings, results, tracebacks, header)
    requests = sum(r.requests for r in results)
    reached = sum(r.reached for r in results)
    server_errors = sum(r.server_errors for r in results)
    violations = sum(r.failures(schema=True) for r in results)
    for r in results:
        print(f"fuzz as {r.role}: {figures(r)}")
    print(f"fuzz total: {requests} requests, {reached} reached their endpoint, {server_errors} 5xx, "
          f"{violations} schema violations "
          f"({len(tracebacks)} distinct server exceptions; details in {args.findings})")
    if reached < args.min_requests:
        print(f"fuzz: only {reached} requests reached their endpoint (fewer than --min-requests {args.min_requests})")
    failed = server_errors > 0 or violations > 0 or reached < args.min_requests
    if failed and strict:
        print("POBO_FUZZ_STRICT=1: failing on the findings above")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
