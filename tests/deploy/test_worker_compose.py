"""docker-compose.worker.yml: a worker machine builds and plays hosted agents with nothing
of the control machine but its database and broker: no media volume, a writable wheel
cache and build folder of its own on the host, its own engine through the proxy."""

from __future__ import annotations

from tests.support.compose_files import ROOT, compose_config

WORKERS = ("worker-build", "worker-duels")


def mounted(service: dict, path: str) -> bool:
    return any(
        (volume["target"] if isinstance(volume, dict) else volume.split(":")[1]) == path
        for volume in service.get("volumes", [])
    )


def test_a_worker_machine_builds_and_plays_from_the_database_with_folders_of_its_own():
    configuration = compose_config(
        "docker-compose.worker.yml", environment={"ARENA_HOST_DATA": "/srv/data"}
    )
    services = configuration["services"]
    control = compose_config("docker-compose.yml")["services"]

    assert "media" not in (configuration.get("volumes") or {})
    made = services["prepare"]["command"]
    for name in WORKERS:
        service, environment = services[name], services[name]["environment"]
        assert not mounted(service, "/srv/arena/media"), name  # uploads come from PostgreSQL
        for setting in ("ARENA_BUILD_ROOT", "ARENA_SANDBOX_ROOT", "ARENA_WHEEL_CACHE"):
            folder = environment[setting]
            assert folder.startswith("/srv/data/") and folder in made, (name, setting)
            assert mounted(service, folder), (name, setting)
        assert environment["DOCKER_HOST"] == "unix:///run/arena-engine/docker.sock"
        assert environment["ARENA_SANDBOX"] == "docker"
        assert (
            environment["ARENA_DOCKER_IMAGE"] == control[name]["environment"]["ARENA_DOCKER_IMAGE"]
        )
        assert service["read_only"] is True


def test_its_header_no_longer_says_it_cannot_build_or_play():
    header = (ROOT / "docker-compose.worker.yml").read_text().split("x-worker")[0]
    assert "Not yet usable" not in header
    assert "prune_images" in header  # each machine prunes its own engine


def test_every_worker_that_builds_has_a_writable_wheel_cache_on_the_host():
    # The root file system is read-only: the default cache (under ARENA_VAR_DIR) is not.
    for files in (["docker-compose.yml"], ["docker-compose.worker.yml"]):
        services = compose_config(*files, environment={"ARENA_HOST_DATA": "/srv/data"})["services"]
        for name in WORKERS:
            cache = services[name]["environment"]["ARENA_WHEEL_CACHE"]
            assert cache == "/srv/data/wheels" and mounted(services[name], cache), (files, name)
            assert cache in services["prepare"]["command"], files


def test_every_worker_that_plays_claims_cpus_among_all_of_its_hosts_workers():
    # Each worker container has a /tmp of its own: the locks of the CPUs duels hold
    # (sandboxes.cpus) must be the host's, or two workers' duels would claim one CPU.
    for files in (["docker-compose.yml"], ["docker-compose.worker.yml"]):
        services = compose_config(*files, environment={"ARENA_HOST_DATA": "/srv/data"})["services"]
        assert "/srv/data/cpus" in services["prepare"]["command"], files
        for name in WORKERS:
            locks = [
                volume
                for volume in services[name]["volumes"]
                if (volume["target"] if isinstance(volume, dict) else volume.split(":")[1])
                == "/tmp/arena-sandbox-cpus"  # sandboxes.cpus.CPU_LOCKS in a worker
            ]
            assert len(locks) == 1, (files, name)
            source = locks[0]["source"] if isinstance(locks[0], dict) else locks[0].split(":")[0]
            assert source == "/srv/data/cpus", (files, name)
