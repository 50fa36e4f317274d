"""The Django admin, for organizers: every model, with the services' actions.

Access goes with the role: active staff users whose role is organizer (and superusers)
see and run everything here; anyone else is sent to the login page.

Here are the shared pieces (``base``), the accounts' admin, the job list of every kind of
background work (``jobs``), competitors and their revisions (``submissions``: their build,
validation and publication are jobs, queued through ``core.services``) and LLM players
(``llm``). Each app registers the admin of the models whose workflow it owns
(``tournament_manager.admin``: environments and their leaderboards, tournaments, duels,
matches, ratings, score competitions).
"""

from django.contrib import admin

from core.admin import accounts, jobs, llm, submissions

admin.site.site_header = "Arena administration"
admin.site.site_title = "Arena admin"
admin.site.index_title = "Organize"
# Says first when agents cannot be confined here (core.services.confinement).
admin.site.index_template = "core/admin_index.html"

__all__ = ["accounts", "jobs", "llm", "submissions"]
