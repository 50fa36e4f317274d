"""The engine proxy: the only process of a production deployment that holds the Docker socket.

The Docker engine's socket is root on the host: whoever can create a container with
``Privileged``, a bind of ``/`` or the host's namespaces owns the machine. The workers
that build and run agents need the engine, but only for the few calls
``sandboxes/docker_engine.py`` and ``sandboxes/docker_images.py`` make. This daemon
listens on a socket of its own, lets exactly those calls through to the real socket, and
only in the shape Arena makes them: containers confined as the docker sandbox confines
them, builds and imports of Arena's images with no network, and every other call on
Arena's own containers and images.

- ``policy``: the rules, in one place: every allowed call and what it must satisfy
  (``routes``, with ``validators`` and ``container_config``);
- ``wire``: the little HTTP/1.1 it needs;
- ``server``: the threaded Unix socket server that checks, forwards and relays.

Standard library only, no Django, nothing else of Arena: ``python -m engine_proxy --help``.
See "The engine proxy" in docs/sandboxes.md.
"""
