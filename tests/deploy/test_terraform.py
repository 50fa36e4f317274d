"""terraform/, checked without the terraform binary (not installable here): every file
parses (python-hcl2), the README documents exactly the variables and outputs there are,
the firewall opens what the README says and nothing more, the cloud-init template renders
for both kinds of machine with no secret in it, the boot script (run with stand-ins for
AWS, git and the image build) writes every secret file the compose files mount and no
secret into .env, and checkov finds no failed check."""

from __future__ import annotations

import base64
import functools
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import hcl2
import pytest
import yaml
from hcl2.utils import SerializationOptions

from tests.support.require import require

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
TERRAFORM = ROOT / "terraform"
BOOT_SCRIPT = TERRAFORM / "files" / "arena-boot.sh"
#: The root module's files and its own modules' (modules/).
TERRAFORM_FILES = sorted(TERRAFORM.rglob("*.tf"))
CHECKOV = ROOT / ".venv-tools" / "bin" / "checkov"
#: Plain Python values: no comment or block markers, strings without their quotes.
PLAIN = SerializationOptions(with_comments=False, explicit_blocks=False, strip_string_quotes=True)
#: EC2 refuses user data above 16 KiB.
USER_DATA_LIMIT = 16 * 1024
EVERYONE = {"0.0.0.0/0", "::/0"}
#: The checkov checks skipped, each with its reason inline in terraform/; one more is a
#: decision to make here too, not a way round a failure.
SKIPPED_CHECKS = [
    ("CKV_AWS_109", "aws_iam_policy_document.key"),
    ("CKV_AWS_111", "aws_iam_policy_document.key"),
    ("CKV_AWS_260", "aws_vpc_security_group_ingress_rule.control_http"),
    ("CKV_AWS_356", "aws_iam_policy_document.key"),
]


def _parsed(path: Path) -> dict[str, Any]:
    return hcl2.loads(path.read_text(), serialization_options=PLAIN)


@functools.cache
def _configuration(*, modules: bool = False) -> list[dict[str, Any]]:
    """The root module's files, parsed; with ``modules``, its own modules' too."""
    return [_parsed(path) for path in TERRAFORM_FILES if modules or path.parent == TERRAFORM]


def _named(kind: str) -> dict[str, dict[str, Any]]:
    """The ``variable``, ``output``, ``locals`` or ``module`` entries of the root module, by
    name."""
    named: dict[str, dict[str, Any]] = {}
    for configuration in _configuration():
        for block in configuration.get(kind, []):
            named.update(block)
    return named


def _resources(resource_type: str) -> dict[str, dict[str, Any]]:
    """The resources of a type, by name, in every file: a module's too, so that the checks
    below see what it creates."""
    found = {}
    for configuration in _configuration(modules=True):
        for block in configuration.get("resource", []):
            found.update(block.get(resource_type, {}))
    return found


def _documented(heading: str) -> set[str]:
    """The names in the first column of the table under ``## heading`` of terraform/README.md."""
    readme = (TERRAFORM / "README.md").read_text()
    section = readme.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `(\w+)` \|", section, flags=re.MULTILINE))


def _ports(rule: dict[str, Any]) -> range:
    if rule["ip_protocol"] == "-1":
        return range(0, 65536)
    return range(int(rule["from_port"]), int(rule["to_port"]) + 1)


def _ingress() -> dict[str, dict[str, Any]]:
    return _resources("aws_vpc_security_group_ingress_rule")


def _render(template: str, variables: dict[str, str]) -> str:
    """What ``templatefile`` makes of ``template``, for templates that only interpolate
    plain variable names (the test fails on anything else, so none goes unchecked)."""
    assert "%{" not in template.replace("%%{", ""), "template directives are not rendered here"
    names = set(re.findall(r"(?<!\$)\$\{([^}]*)\}", template))
    assert names == set(variables), "the template's variables differ from those passed"
    rendered = re.sub(r"(?<!\$)\$\{(\w+)\}", lambda match: variables[match[1]], template)
    return rendered.replace("$${", "${").replace("%%{", "%{")


def _local_value(expression: str, locals_: dict[str, Any]) -> Any:
    """A literal as it is, or the value of a ``${local.a.b}`` reference to a literal."""
    reference = re.fullmatch(r"\$\{local\.([\w.]+)\}", expression)
    if not reference:
        return expression
    value: Any = locals_
    for part in reference[1].split("."):
        value = value[part]
    return value


def _cloud_init(instance: str) -> tuple[str, dict[str, Any]]:
    """The rendered user data of a kind of machine (a call of modules/machine) and its
    parsed YAML. Values Terraform computes (the env files, the compose options) are stood
    in for; the boot script is the real one."""
    user_data = _named("module")[instance]["machine"]["user_data"]
    call = re.fullmatch(r'\$\{templatefile\("\$\{path\.module\}/(.+)", local\.(\w+)\)\}', user_data)
    assert call, f"module.{instance} renders no template from a local: {user_data}"
    template, local_name = call[1], call[2]
    locals_ = _named("locals")
    expressions = locals_[local_name]
    assert expressions["boot_script"] == "${local.boot_script}"
    assert locals_["boot_script"] == '${base64encode(file("${path.module}/files/arena-boot.sh"))}'
    script = BOOT_SCRIPT.read_bytes()
    role = _local_value(expressions["role"], locals_)
    assert expressions["compose_options"] == (
        f'${{join(" ", formatlist("-f %s", local.compose_files.{role}))}}'
    )
    stand_ins = {
        "boot_script": base64.b64encode(script).decode(),
        "compose_options": " ".join(f"-f {name}" for name in locals_["compose_files"][role]),
        "boot_env": json.dumps("ARENA_REF=main\nARENA_REGION=eu-west-1\n"),
        "settings_env": json.dumps("ARENA_DEBUG=0\nARENA_SANDBOX=docker\n"),
    }
    assert set(stand_ins) <= set(expressions)
    variables = {
        name: stand_ins[name] if name in stand_ins else _local_value(expression, locals_)
        for name, expression in expressions.items()
    }
    rendered = _render((TERRAFORM / template).read_text(), variables)
    return rendered, yaml.safe_load(rendered)


def _written(cloud_config: dict[str, Any], path: str) -> dict[str, Any]:
    [entry] = [entry for entry in cloud_config["write_files"] if entry["path"] == path]
    return entry


@pytest.mark.parametrize("path", TERRAFORM_FILES, ids=lambda path: str(path.relative_to(TERRAFORM)))
def test_it_parses_every_terraform_file(path: Path) -> None:
    assert _parsed(path)


def test_it_documents_every_variable_and_declares_every_documented_one() -> None:
    variables = _named("variable")

    assert set(variables) == _documented("Variables")
    assert [name for name, body in variables.items() if not body.get("description")] == []
    assert [name for name, body in variables.items() if "type" not in body] == []


def test_it_documents_every_output_and_declares_every_documented_one() -> None:
    outputs = _named("output")

    assert set(outputs) == _documented("Outputs")
    assert [name for name, body in outputs.items() if not body.get("description")] == []


def test_it_writes_firewall_rules_only_as_rule_resources() -> None:
    # Inline rules or aws_security_group_rule would escape the checks below.
    inline = [
        name
        for name, group in _resources("aws_security_group").items()
        if "ingress" in group or "egress" in group
    ]

    assert inline == []
    assert _resources("aws_security_group_rule") == {}


def test_it_opens_only_80_and_443_to_the_internet() -> None:
    public = {
        name: (rule["security_group_id"], rule["ip_protocol"], list(_ports(rule)))
        for name, rule in _ingress().items()
        if {rule.get("cidr_ipv4"), rule.get("cidr_ipv6")} & EVERYONE
    }

    assert public == {
        "control_http": ("${aws_security_group.control.id}", "tcp", [80]),
        "control_https": ("${aws_security_group.control.id}", "tcp", [443]),
    }


def test_it_lets_only_the_workers_reach_postgresql_and_redis() -> None:
    for port in (5432, 6379):
        rules = [rule for rule in _ingress().values() if port in _ports(rule)]

        assert len(rules) == 1
        assert rules[0]["security_group_id"] == "${aws_security_group.control.id}"
        assert rules[0]["referenced_security_group_id"] == "${aws_security_group.workers.id}"
        assert "cidr_ipv4" not in rules[0] and "cidr_ipv6" not in rules[0]


def test_it_opens_ssh_only_when_asked_and_only_from_the_given_range() -> None:
    rules = {name: rule for name, rule in _ingress().items() if 22 in _ports(rule)}
    ssh_cidr = _named("variable")["ssh_cidr"]

    assert ssh_cidr["default"] == ""
    assert '!endswith(var.ssh_cidr, "/0")' in ssh_cidr["validation"][0]["condition"]
    assert _named("locals")["ssh_enabled"] == '${var.ssh_cidr != ""}'
    assert {name: rule["count"] for name, rule in rules.items()} == {
        "control_ssh": "${local.ssh_enabled ? 1 : 0}",
        "workers_ssh": "${local.ssh_enabled ? 1 : 0}",
    }
    assert rules["control_ssh"]["cidr_ipv4"] == "${var.ssh_cidr}"
    assert rules["workers_ssh"]["cidr_ipv4"] == "${local.control_private_ip}/32"


@pytest.mark.parametrize(
    ("instance", "compose_files"),
    [
        ("control", ["docker-compose.yml", "docker-compose.control.yml"]),
        ("worker", ["docker-compose.worker.yml"]),
    ],
)
def test_it_boots_each_machine_into_its_own_compose_files(
    instance: str, compose_files: list[str]
) -> None:
    rendered, cloud_config = _cloud_init(instance)
    unit = _written(cloud_config, "/etc/systemd/system/arena.service")["content"]
    boot_script = _written(cloud_config, "/usr/local/sbin/arena-boot")
    options = " ".join(f"-f {name}" for name in compose_files)

    assert rendered.startswith("#cloud-config\n")
    assert len(rendered.encode()) < USER_DATA_LIMIT
    assert {"docker.io", "docker-compose", "git", "debootstrap", "awscli"} <= set(
        cloud_config["packages"]
    )
    assert _named("locals")["compose_files"][instance] == compose_files
    assert "WorkingDirectory=/opt/arena\n" in unit
    assert f"ExecStart=/usr/bin/docker-compose {options} up -d\n" in unit
    assert f"ExecStop=/usr/bin/docker-compose {options} stop\n" in unit
    assert "COMPOSE_FILE" not in unit
    assert base64.b64decode(boot_script["content"]) == BOOT_SCRIPT.read_bytes()
    assert boot_script["permissions"] == "0755"
    assert cloud_config["runcmd"] == [
        "/usr/local/sbin/arena-boot && systemctl enable --now arena.service arena-prune.timer"
    ]
    # Every machine prunes its own engine's images, workers included (beat's task reaches
    # one machine's engine per run).
    prune = _written(cloud_config, "/etc/systemd/system/arena-prune.service")["content"]
    timer = _written(cloud_config, "/etc/systemd/system/arena-prune.timer")["content"]
    assert (
        f"ExecStart=/usr/bin/docker-compose {options} run --rm --no-deps worker-build "
        "python manage.py prune_images\n"
    ) in prune
    assert "OnUnitActiveSec=1h\n" in timer


def test_it_points_the_workers_at_the_control_machines_private_address() -> None:
    locals_ = _named("locals")
    control = _named("module")["control"]["machine"]

    assert control["private_ip"] == "${local.control_private_ip}"
    # make_secrets.sh names it in a worker's URLs; docker-compose.control.yml publishes
    # PostgreSQL and Redis on it.
    assert "CONTROL_HOST = local.control_private_ip" in locals_["worker_boot"]
    assert "ARENA_PRIVATE_ADDRESS = local.control_private_ip" in locals_["control_settings"]
    assert 'COMPOSE_FILE = join(":", local.compose_files.control)' in locals_["control_settings"]
    assert 'COMPOSE_FILE = join(":", local.compose_files.worker)' in locals_["worker_settings"]
    assert "ARENA_CONTROL_HOST" not in json.dumps(locals_)


def test_it_keeps_the_secrets_out_of_the_user_data() -> None:
    locals_ = _named("locals")
    seen: set[str] = set()
    waiting = ["control_cloud_init", "worker_cloud_init"]
    while waiting:
        name = waiting.pop()
        seen.add(name)
        expression = json.dumps(locals_[name])
        assert not re.search(r"random_\w+\.|aws_ssm_parameter\.", expression), name
        waiting += set(re.findall(r"local\.(\w+)", expression)) - seen

    assert {"control_settings", "worker_boot", "boot_script"} <= seen


def test_it_reads_the_secrets_from_ssm_at_boot() -> None:
    script = BOOT_SCRIPT.read_text()
    parameters = _named("locals")["secrets"]
    completed = subprocess.run(["bash", "-n", BOOT_SCRIPT], check=False)

    assert completed.returncode == 0
    for name in parameters:
        assert f"$(secret {name})" in script
    assert _resources("aws_ssm_parameter")["secret"]["type"] == "SecureString"


#: What the stand-in for the AWS CLI answers, by SSM parameter (secrets.tf's names), and
#: the file of ./secrets each becomes (scripts/make_secrets.sh's names).
PARAMETERS = {
    "django-secret-key": ("secret_key", "django-secret-key-value-0123456789"),
    "secrets-key": ("secrets_key", "c2VjcmV0cy1rZXktdmFsdWUtMDEyMzQ1Njc4OWFiY2Q="),
    "database-password": ("db_password", "databasepassword0123456789"),
    "redis-password": ("redis_password", "redispassword0123456789"),
}
CONTROL_ADDRESS = "10.42.0.10"
DOCKER_GID = "4242"
#: Stand-ins for what a machine has and a test cannot: AWS (a parameter's value from a
#: folder), git (the checkout is there already), the docker group, and time.
STUBS = {
    "aws": 'while [ $# -gt 0 ]; do [ "$1" = --name ] && name=$2; shift; done\n'
    'cat "$STUB_PARAMETERS$name"\n',
    "git": 'case "$*" in *--short*) echo 0123abc ;; esac\n',
    "getent": f'[ "$*" = "group docker" ] && echo "docker:x:{DOCKER_GID}:"\n',
    "sleep": "",
}
#: Each machine's settings as Terraform writes them (hosts.tf), with stand-in values.
SETTINGS = {
    "control": {
        "ARENA_ALLOWED_HOSTS": "arena.example.org",
        "ARENA_DEBUG": "0",
        "ARENA_HOST_DATA": "/var/lib/arena",
        "ARENA_HTTPS_PORT": "443",
        "ARENA_HTTP_PORT": "80",
        "ARENA_PRIVATE_ADDRESS": CONTROL_ADDRESS,
        "ARENA_SANDBOX": "docker",
        "COMPOSE_FILE": "docker-compose.yml:docker-compose.control.yml",
    },
    "worker": {
        "ARENA_DEBUG": "0",
        "ARENA_HOST_DATA": "/var/lib/arena",
        "ARENA_SANDBOX": "docker",
        "COMPOSE_FILE": "docker-compose.worker.yml",
    },
}


def _env_file(entries: dict[str, str]) -> str:
    """An env file as hosts.tf's ``env_files`` writes it."""
    return "".join(f"{key}={entries[key]}\n" for key in sorted(entries))


@pytest.fixture(params=["control", "worker"])
def booted(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, Path]:
    """A machine's checkout once files/arena-boot.sh has run on it as cloud-init runs it,
    with this repository's make_secrets.sh and compose files, and the stand-ins above."""
    instance = request.param
    etc, checkout, stubs, parameters = (
        tmp_path / name for name in ("etc", "checkout", "stubs", "parameters")
    )
    for folder in (etc, checkout / ".git", checkout / "scripts", stubs, parameters / "arena"):
        folder.mkdir(parents=True)
    shutil.copy2(ROOT / "scripts" / "make_secrets.sh", checkout / "scripts")
    for compose_file in ROOT.glob("docker-compose*.yml"):
        shutil.copy2(compose_file, checkout)
    executables = {stubs / name: body for name, body in STUBS.items()}
    executables[checkout / "scripts" / "build_images.sh"] = "touch images-built\n"
    for path, body in executables.items():
        path.write_text(f"#!/bin/bash\n{body}")
        path.chmod(0o755)
    for parameter, (_, value) in PARAMETERS.items():
        (parameters / "arena" / parameter).write_text(f"{value}\n")
    boot = {
        "ARENA_REPOSITORY": "https://git.example.org/arena.git",
        "ARENA_REF": "main",
        "ARENA_REGION": "eu-west-1",
        "ARENA_PARAMETER_PREFIX": "/arena",
    }
    assert set(boot) == set(_named("locals")["control_boot"])
    if instance == "worker":
        boot["CONTROL_HOST"] = CONTROL_ADDRESS
    (etc / "boot.env").write_text(_env_file(boot))
    (etc / "settings.env").write_text(_env_file(SETTINGS[instance]))

    completed = subprocess.run(
        ["bash", BOOT_SCRIPT],
        env={
            "PATH": f"{stubs}:/usr/bin:/bin",
            "ARENA_ETC": str(etc),
            "ARENA_CHECKOUT": str(checkout),
            "STUB_PARAMETERS": str(parameters),
        },
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert completed.returncode == 0, completed.stderr
    assert (checkout / "images-built").exists()
    return instance, checkout


def test_the_boot_writes_every_secret_file_the_machines_compose_files_mount(
    booted: tuple[str, Path],
) -> None:
    instance, checkout = booted
    database, redis = ("postgres", "redis") if instance == "control" else (CONTROL_ADDRESS,) * 2
    given = dict(PARAMETERS.values())
    expected = {
        **given,
        "database_url": f"postgres://arena:{given['db_password']}@{database}:5432/arena",
        "broker_url": f"redis://:{given['redis_password']}@{redis}:6379/0",
        # Not one of terraform's: empty, publishing off, until the operator writes it.
        "publish_repository": "",
    }
    mounted = {}
    for compose_file in _named("locals")["compose_files"][instance]:
        mounted.update(yaml.safe_load((checkout / compose_file).read_text()).get("secrets", {}))
    folder = checkout / "secrets"

    assert set(PARAMETERS) == set(_named("locals")["secrets"])
    assert mounted, "the machine's compose files mount no secret"
    for name, secret in mounted.items():
        assert (checkout / secret["file"]).read_text() == f"{expected[name]}\n", name
    assert folder.stat().st_mode & 0o777 == 0o700
    assert folder.stat().st_uid == os.getuid()  # root, who runs it on the machines
    for path in folder.iterdir():
        # docker-compose mounts the file as it is, into containers with users of their own.
        assert path.stat().st_mode & 0o777 == 0o644, path.name
        assert path.stat().st_uid == os.getuid(), path.name


def test_the_boot_writes_the_settings_and_no_secret_into_env(booted: tuple[str, Path]) -> None:
    instance, checkout = booted
    env = (checkout / ".env").read_text()
    secrets = [path.read_text().strip() for path in (checkout / "secrets").iterdir()]

    assert [secret for secret in secrets if secret and secret in env] == []
    assert not re.search(r"PASSWORD|SECRET|_URL\b|://", env)
    assert _env_file(SETTINGS[instance]) in env
    assert f"\nDOCKER_GID={DOCKER_GID}\n" in env


def test_the_booted_checkout_resolves_with_the_machines_compose_files(
    booted: tuple[str, Path],
) -> None:
    require(
        shutil.which("docker-compose"),
        "docker-compose is not installed (apt-get install docker-compose), so the booted "
        "checkout cannot be resolved",
    )
    instance, checkout = booted
    arguments = ["docker-compose"]
    for compose_file in _named("locals")["compose_files"][instance]:
        arguments += ["-f", compose_file]
    completed = subprocess.run(
        [*arguments, "config"],
        capture_output=True,
        text=True,
        cwd=checkout,
        env={"PATH": "/usr/bin:/bin"},
        check=False,
    )

    assert completed.returncode == 0, completed.stderr
    configuration = yaml.safe_load(completed.stdout)
    services = configuration["services"]
    for name, secret in configuration["secrets"].items():
        assert Path(secret["file"]) == checkout / "secrets" / name
    assert services["engine"]["user"] == f"10100:{DOCKER_GID}"
    if instance == "control":
        for name, port in (("postgres", 5432), ("redis", 6379)):
            assert services[name]["ports"] == [f"{CONTROL_ADDRESS}:{port}:{port}/tcp"]


def test_it_passes_checkov_with_no_failed_check() -> None:
    require(
        CHECKOV.exists(),
        "checkov is not installed (scripts/setup_tools.sh), so terraform/ is not checked",
    )
    # Offline: no mapping or policy download, no update check, no API.
    environment = {
        **os.environ,
        "BC_SKIP_MAPPING": "TRUE",
        "CKV_SKIP_PACKAGE_UPDATE_CHECK": "true",
        "LOG_LEVEL": "WARNING",
    }
    environment.pop("BC_API_KEY", None)
    completed = subprocess.run(
        [
            *(CHECKOV, "--directory", TERRAFORM, "--framework", "terraform", "secrets"),
            *("--skip-download", "--output", "json"),
        ],
        capture_output=True,
        text=True,
        env=environment,
        timeout=600,
        check=False,
    )
    assert completed.stdout, completed.stderr
    reports = json.loads(completed.stdout)
    reports = reports if isinstance(reports, list) else [reports]
    terraform = next(report for report in reports if report.get("check_type") == "terraform")
    failed = [
        f"{check['check_id']} {check['resource']} ({check['file_path']})"
        for report in reports
        for check in report.get("results", {}).get("failed_checks", [])
    ]
    skipped = [
        check for report in reports for check in report.get("results", {}).get("skipped_checks", [])
    ]
    unexplained = [
        check["check_id"]
        for check in skipped
        if len(check["check_result"].get("suppress_comment", "")) < 20
    ]

    assert failed == []
    assert sorted((check["check_id"], check["resource"]) for check in skipped) == SKIPPED_CHECKS
    assert unexplained == []
    assert terraform["summary"]["parsing_errors"] == 0
    assert terraform["summary"]["passed"] > 100
    assert completed.returncode == 0
