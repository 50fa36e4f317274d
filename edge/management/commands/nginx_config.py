"""``manage.py nginx_config``: nginx's configuration for this site, rendered from its
settings (``edge.nginx``); ``nginx/start.sh`` runs it each time the nginx service starts."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from edge.nginx import Deployment, nginx_config_render

DEFAULTS = Deployment()


class Command(BaseCommand):
    help = (
        "Write nginx's configuration for this site: body caps, timeouts and paths from the "
        "settings; HTTPS when the certificate files exist. Defaults: the compose stack's."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--output", default="-", help="the file to write (default: standard output)"
        )
        for field in dataclasses.fields(Deployment):
            default = getattr(DEFAULTS, field.name)
            parser.add_argument(
                "--" + field.name.replace("_", "-"),
                type=type(default),
                default=default,
                help=f"default: {default}",
            )

    def handle(self, *args: Any, **options: Any) -> None:
        deployment = Deployment(
            **{field.name: options[field.name] for field in dataclasses.fields(Deployment)}
        )
        config = nginx_config_render(deployment=deployment)
        if options["output"] == "-":
            self.stdout.write(config, ending="")
            return
        output = Path(options["output"])
        output.write_text(config)
        # For nginx, which may run as another user: nothing secret is in it.
        output.chmod(0o644)
        tls = f"HTTPS on {deployment.https_port}" if deployment.has_tls else "HTTP only"
        self.stderr.write(f"Wrote {options['output']} ({tls}).")
