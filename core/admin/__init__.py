"""The Django admin, for organizers: every model, with the services' actions.

Access goes with the role: active staff users whose role is organizer (and superusers)
see and run everything here; anyone else is sent to the login page.

Here are the shared pieces (``base``), the accounts' admin and the job list of every kind
of background work (``jobs``). Each app registers the admin of the models whose workflow
it owns (``tournament_manager.admin``: tournaments, duels, matches, ratings); environments,
competitors and revisions, whose actions drive several apps (build, validation,
publication, new tournaments), are in ``web.admin``, the layer above the apps.
"""

from django.contrib import admin

from core.admin import accounts, jobs

admin.site.site_header = "Arena administration"
admin.site.site_title = "Arena admin"
admin.site.index_title = "Organize"

__all__ = ["accounts", "jobs"]
