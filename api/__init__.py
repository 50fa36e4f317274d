"""Arena's public REST API, ``/api/v1/`` (django-ninja): the same reads as the site, with
the same rules on who may see what (``reads.access``), for scripts and clients.

``v1.py`` builds the API (authentication, errors, limits, the OpenAPI document at
``/api/v1/openapi.json`` and its documentation page at ``/api/v1/docs``); each resource has
its own module of routes.
"""
