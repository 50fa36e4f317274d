"""The builder through the engine proxy, as a production worker runs it: a revision with a
requirement built into its own image, validated in the docker sandbox, and its image pruned
once its revision is disabled; nothing refused on the way."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from builder.revision_image import base_numpy_version
from builder.services import revision_images_prune
from core.models import Revision, StepStatus
from duel_runner.services import sandbox_backend_close
from sandboxes import docker_images
from tests.pipeline import pipeline, upload_zip  # noqa: F401
from tests.support.agents import USES_SIX
from tests.support.docker import docker_base_image
from tests.support.engine_proxy import RunningProxy, engine_proxy_running, using_engine_proxy

__all__ = ["docker_base_image"]

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def worker_behind_the_proxy(
    pipeline,  # noqa: F811
    settings,
    docker_base_image: str,
) -> Iterator[RunningProxy]:
    settings.ARENA_SANDBOX = "docker"
    settings.ARENA_REQUIREMENTS_DENY = []
    settings.ARENA_REQUIREMENTS_ALLOW = []
    with engine_proxy_running([settings.ARENA_SANDBOX_ROOT]) as proxy, using_engine_proxy(proxy):
        base_numpy_version.cache_clear()  # the builder's probe goes through the proxy too
        try:
            yield proxy
        finally:
            sandbox_backend_close()


def test_it_builds_validates_and_prunes_a_revision_with_a_requirement(worker_behind_the_proxy):
    revision = upload_zip("six-user", {"main.py": USES_SIX, "requirements.txt": b"six==1.16.0\n"})

    assert revision.build_status == StepStatus.SUCCEEDED, revision.job("build").error
    assert revision.validation_status == StepStatus.SUCCEEDED, revision.job("validation").error
    assert "six 1.16.0 from /opt/arena/deps/six.py" in revision.job("validation").log
    Revision.objects.filter(pk=revision.pk).update(is_disabled=True)
    # The validation's containers are removed in the background once its duel is over:
    # an image still in use is rightly kept, until the next prune.
    sandbox_backend_close()
    pruned = revision_images_prune()
    assert [(image.image, image.removed) for image in pruned][:1] == [(revision.image, True)]
    assert not docker_images.image_exists(revision.image)
    assert worker_behind_the_proxy.refusals() == []
