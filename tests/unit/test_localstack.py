"""`localstack-compose.yml` starts every AWS service the code talks to (issue 13 scope 5).

The services are read from the code itself: every boto3 client or resource it builds with a
literal service name (`_client("ses")`, `session.client("sqs", ...)`, `boto3.client("lambda")`),
in the service, the deploy tools and the embedded stack (which targets LocalStack with
`AWS_ENDPOINT_URL`), plus DynamoDB, which PynamoDB reaches without a boto3 client.
"""

from __future__ import annotations

import ast
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("chalicelib", "infra", "assay_local")
CLIENT_CALLS = {"client", "_client", "resource"}


def _services_the_code_builds() -> dict[str, list[str]]:
    """Service name -> where a client of it is built (`path:line`)."""
    found: dict[str, list[str]] = {}
    for package in SCANNED:
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if not isinstance(node, ast.Call) or not node.args:
                    continue
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                first = node.args[0]
                if (
                    name in CLIENT_CALLS
                    and isinstance(first, ast.Constant)
                    and isinstance(first.value, str)
                ):
                    where = f"{path.relative_to(ROOT)}:{node.lineno}"
                    found.setdefault(first.value, []).append(where)
    tables = (ROOT / "chalicelib" / "adapters" / "tables.py").read_text()
    if "from pynamodb" in tables or "import pynamodb" in tables:
        found.setdefault("dynamodb", []).append("chalicelib/adapters/tables.py (PynamoDB)")
    return found


def _compose_services() -> set[str]:
    compose = yaml.safe_load((ROOT / "localstack-compose.yml").read_text())
    listed = compose["services"]["localstack"]["environment"]["SERVICES"]
    return {s.strip() for s in str(listed).split(",") if s.strip()}


def test_the_scan_finds_the_clients_we_know_of():
    """If this fails, the scan went blind (a client built another way), not the compose file."""
    found = _services_the_code_builds()
    assert {"dynamodb", "sqs", "s3", "secretsmanager", "ssm", "ses", "lambda"} <= set(found)
    assert any("bootstrap.py" in w for w in found["ses"])  # `assay dev` verifies the sender


def test_localstack_starts_every_service_the_code_builds_a_client_for():
    found = _services_the_code_builds()
    missing = {
        service: where for service, where in found.items() if service not in _compose_services()
    }
    assert not missing, f"add to SERVICES in localstack-compose.yml: {missing}"


def test_localstack_starts_nothing_the_code_never_calls():
    extra = _compose_services() - set(_services_the_code_builds())
    assert not extra, f"SERVICES lists {sorted(extra)}, which no code calls"
