"""docker-compose.yml and its companions, read as docker-compose reads them: every
service the deployment needs, each with a healthcheck and a start order by health; only
nginx publishes a port, renders its configuration from the site's settings and reads no
upload or secret; only the engine proxy holds the Docker socket; secrets come from
files, never from the repository; `.env.example` names every setting Arena reads."""

from __future__ import annotations

import re
import subprocess
import urllib.parse
from pathlib import Path
from typing import Any

import pytest
import yaml

from edge.nginx import Deployment, nginx_config_render
from tests.support.compose_files import ROOT, compose_config

SERVICES = {
    "nginx", "web", "gateway", "migrate", "prepare", "worker-build", "worker-duels",
    "worker-online", "worker-publish", "beat", "manager", "watchdog", "engine", "postgres",
    "redis",
}  # fmt: skip
ONE_SHOTS = {"migrate", "prepare"}


def port_target(port: dict[str, Any] | str) -> int:
    """The container's port of a mapping, in either form docker-compose prints."""
    if isinstance(port, dict):
        return int(port["target"])
    return int(port.split(":")[-1].split("/")[0])


@pytest.fixture(scope="module")
def control() -> dict[str, Any]:
    return compose_config("docker-compose.yml")["services"]


def test_it_runs_every_service_of_a_deployment(control):
    assert set(control) == SERVICES


def test_every_long_running_service_has_a_healthcheck_and_starts_after_what_it_needs(control):
    for name, service in control.items():
        if name in ONE_SHOTS:
            continue
        check = service.get("healthcheck", {})
        assert check.get("test") and not check.get("disable"), f"{name} has no healthcheck"
        for needed, condition in (service.get("depends_on") or {}).items():
            wanted = "service_completed_successfully" if needed in ONE_SHOTS else "service_healthy"
            assert condition["condition"] == wanted, f"{name} waits on {needed}: {condition}"
    for name in (
        "web", "gateway", "manager", "watchdog", "worker-duels", "worker-build", "worker-publish"
    ):  # fmt: skip
        assert control[name]["depends_on"]["migrate"]["condition"] == (
            "service_completed_successfully"
        )
    assert control["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"


def test_a_heartbeat_healthcheck_reads_the_file_its_service_touches(control):
    """A service checked by a heartbeat file's age (a worker, a daemon) is started with
    ``--heartbeat`` naming that file: otherwise it would never become healthy."""
    workers = compose_config("docker-compose.worker.yml")["services"]
    checked = {
        name: service
        for name, service in [*control.items(), *(("machine " + n, s) for n, s in workers.items())]
        if service.get("healthcheck", {}).get("test", [])[4:5] == ["file"]
    }
    assert {name for name in checked if "worker" in name} == {
        "worker-build", "worker-duels", "worker-online", "worker-publish",
        "machine worker-build", "machine worker-duels", "machine worker-online",
    }  # fmt: skip
    for name, service in checked.items():
        heartbeat = service["healthcheck"]["test"][5]
        command = service["command"]
        assert "--heartbeat" in command, f"{name} never touches {heartbeat}"
        assert command[command.index("--heartbeat") + 1] == heartbeat, name


def test_only_nginx_publishes_ports(control):
    published = {name for name, service in control.items() if service.get("ports")}
    assert published == {"nginx"}
    assert {port_target(port) for port in control["nginx"]["ports"]} == {8080, 8443}


def test_only_the_engine_proxy_holds_the_docker_socket_and_the_site_no_way_to_the_engine(
    control,
):
    def holding(source: str) -> set[str]:
        return {
            name
            for name, service in control.items()
            if any(volume.split(":")[0] == source for volume in service.get("volumes", []))
        }

    assert holding("/var/run/docker.sock") == {"engine"}
    assert control["engine"]["network_mode"] == "none"
    with_engine = holding("engine-socket")
    assert with_engine == {"engine", "worker-build", "worker-duels", "worker-online"}
    for name in ("web", "gateway", "nginx", "beat", "manager", "watchdog", "worker-publish"):
        assert "DOCKER_HOST" not in (control[name].get("environment") or {}), name


def test_arenas_services_run_unprivileged_on_a_read_only_root(control):
    for name, service in control.items():
        if name in {"postgres", "redis", "prepare"}:
            continue  # their own images' users; `prepare` only makes the host folders
        assert service.get("user", "10100").startswith("10100"), name
        assert service.get("read_only") is True, name
        assert service.get("cap_drop") == ["ALL"], name
        assert "no-new-privileges:true" in service.get("security_opt", []), name


def test_every_site_process_has_a_pages_cache_it_can_open(control):
    # Without the broker's Redis URL the pages' cache defaults to a folder in
    # ARENA_VAR_DIR, which a read-only root cannot create: Django's checks then stop the
    # process (nginx restarted forever when its configuration command ran them).
    for name, service in control.items():
        if name in {"postgres", "redis", "prepare", "engine"}:
            continue  # not Django
        secrets = {secret["source"] for secret in service.get("secrets", [])}
        environment = service.get("environment", {})
        assert "broker_url" in secrets or "ARENA_CACHE_URL" in environment, name


def test_nginx_renders_its_configuration_and_serves_the_image_s_static_files_alone(control):
    nginx = control["nginx"]
    assert nginx["command"] == [
        "/opt/arena/app/nginx/start.sh",
        "--public-https-port",
        "443",  # ARENA_HTTPS_PORT: where HTTP redirects to
    ]
    assert nginx["image"] == control["web"]["image"]  # the site's settings, its static files
    assert nginx.get("env_file") == control["web"].get("env_file")
    mounts = {volume.split(":")[1]: volume for volume in nginx.get("volumes", [])}
    defaults = Deployment()
    assert set(mounts) == {
        str(defaults.maintenance_flag.parent),
        str(defaults.tls_dir),
        str(defaults.acme_dir),
    }
    assert all(volume.endswith(":ro") and volume.startswith("/") for volume in mounts.values())
    # Uploads are agents' source code: nginx never reads them, nor any secret.
    assert not nginx.get("secrets")
    assert "/srv/arena/media" not in mounts
    assert "DATABASE_URL_FILE" not in nginx["environment"]
    for name in ("web", "nginx"):
        assert "ARENA_STATIC_ROOT" not in control[name]["environment"], name


def test_nginx_s_healthcheck_asks_nginx_itself_where_the_configuration_answers(control):
    check = control["nginx"]["healthcheck"]["test"]
    assert check[:5] == ["CMD", "python", "-m", "core.healthcheck", "http"]
    url = urllib.parse.urlsplit(check[5])
    config = nginx_config_render(deployment=Deployment(tls_dir=Path("/nonexistent")))
    assert f"listen {url.port} default_server;" in config
    assert f"location = {url.path} {{" in config


def test_the_site_and_the_gateway_trust_the_client_address_nginx_forwards(control):
    for name in ("web", "gateway"):
        assert control[name]["environment"]["ARENA_BEHIND_PROXY"] == "1", name
    assert "--forwarded-allow-ips" in control["web"]["command"]


def test_secrets_come_from_files_and_stay_out_of_the_repository(control):
    configuration = compose_config("docker-compose.yml")
    for name, secret in configuration["secrets"].items():
        assert Path(secret["file"]).parent == ROOT / "secrets", name
    ignored = subprocess.run(
        ["git", "check-ignore", "secrets/db_password", ".env", "tls/privkey.pem"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    ).stdout.split()
    assert ignored == ["secrets/db_password", ".env", "tls/privkey.pem"]
    for name in ("web", "worker-duels", "manager"):
        environment = control[name]["environment"]
        assert environment["DATABASE_URL_FILE"] == "/run/secrets/database_url"
        assert "DATABASE_URL" not in environment and "ARENA_SECRET_KEY" not in environment


def test_each_service_gets_only_the_secrets_it_uses(control):
    def mounting(secret: str) -> set[str]:
        return {
            name
            for name, service in control.items()
            if any(entry.get("source", entry) == secret for entry in service.get("secrets", []))
        }

    # The key of LLM players' API keys: where they are entered and where they are used.
    assert mounting("secrets_key") == {"web", "worker-online"}
    for name in set(control) - {"web", "worker-online"}:
        assert "ARENA_SECRETS_KEY_FILE" not in (control[name].get("environment") or {}), name
    # The publication remote's credentials: the publisher only.
    assert mounting("publish_repository") == {"worker-publish"}
    # Beat sends tasks: the broker, no database, no key to the site's sessions.
    assert mounting("database_url") >= {"web", "gateway", "migrate", "manager", "watchdog"}
    assert "beat" not in mounting("database_url") | mounting("secret_key")
    assert mounting("db_password") == {"postgres"}
    assert mounting("redis_password") == {"redis"}
    assert not control["nginx"].get("secrets") and not control["engine"].get("secrets")


def test_worker_machines_and_the_control_machine_files_resolve():
    workers = compose_config("docker-compose.worker.yml")["services"]
    assert set(workers) == {"prepare", "worker-build", "worker-duels", "worker-online", "engine"}
    assert not any(service.get("ports") for service in workers.values())
    assert [
        name
        for name, service in workers.items()
        if any(entry.get("source", entry) == "secrets_key" for entry in service.get("secrets", []))
    ] == ["worker-online"]
    published = compose_config(
        "docker-compose.yml",
        "docker-compose.control.yml",
        environment={"ARENA_PRIVATE_ADDRESS": "10.0.1.5"},
    )["services"]
    for name, port in (("postgres", 5432), ("redis", 6379)):
        [mapping] = published[name]["ports"]
        assert mapping == f"10.0.1.5:{port}:{port}/tcp"


def test_env_example_names_every_setting_arena_reads():
    read = set(
        re.findall(
            r'(?:env_\w+\(|os\.environ\.get\()\s*"([A-Z_]+)"',
            (ROOT / "core" / "settings.py").read_text(),
        )
    )
    example = (ROOT / ".env.example").read_text()
    named = set(re.findall(r"^#? ?([A-Z_]+)[:=]", example, re.M))
    assert read - named == set()


def run_make_secrets(folder: Path, **environment: str) -> dict[str, str]:
    """What ``scripts/make_secrets.sh folder`` leaves there: each file's value by name."""
    subprocess.run(
        [ROOT / "scripts" / "make_secrets.sh", folder],
        env={"PATH": "/usr/bin:/bin", **environment},
        capture_output=True,
        check=True,
    )
    return {path.name: path.read_text().removesuffix("\n") for path in folder.iterdir()}


def test_make_secrets_writes_every_secret_the_compose_files_mount_and_keeps_them(tmp_path):
    folder = tmp_path / "secrets"
    mounted = set()
    for name in ("docker-compose.yml", "docker-compose.worker.yml"):
        secrets = yaml.safe_load((ROOT / name).read_text())["secrets"]
        assert {secret["file"] for secret in secrets.values()} == {
            f"./secrets/{secret}" for secret in secrets
        }
        mounted |= set(secrets)

    first = run_make_secrets(folder)
    again = run_make_secrets(folder)

    assert set(first) == mounted
    assert again == first
    assert first["database_url"] == f"postgres://arena:{first['db_password']}@postgres:5432/arena"
    assert first["broker_url"] == f"redis://:{first['redis_password']}@redis:6379/0"
    assert folder.stat().st_mode & 0o777 == 0o700
    assert {path.stat().st_mode & 0o777 for path in folder.iterdir()} == {0o644}


def test_make_secrets_writes_the_values_given_and_builds_the_urls_again(tmp_path):
    folder = tmp_path / "secrets"
    before = run_make_secrets(folder)

    after = run_make_secrets(
        folder, GIVEN_DB_PASSWORD="given-db", GIVEN_SECRETS_KEY="given-key", CONTROL_HOST="10.0.1.5"
    )

    assert after == {
        **before,
        "db_password": "given-db",
        "secrets_key": "given-key",
        "database_url": "postgres://arena:given-db@10.0.1.5:5432/arena",
        "broker_url": f"redis://:{before['redis_password']}@10.0.1.5:6379/0",
    }
