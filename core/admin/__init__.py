"""The Django admin, for organizers: every model, with the services' actions.

Access goes with the role: active staff users whose role is organizer (and superusers)
see and run everything here; anyone else is sent to the login page.
"""

from django.contrib import admin

from core.admin import accounts, competitions, ratings, submissions

admin.site.site_header = "Arena administration"
admin.site.site_title = "Arena admin"
admin.site.index_title = "Organize"

__all__ = ["accounts", "competitions", "ratings", "submissions"]
