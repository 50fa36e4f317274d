from django.contrib import admin
from django.urls import include, path

from core.health import healthz

# Each app's admin module registers its pages here rather than at every process's start
# (settings: SimpleAdminConfig).
admin.autodiscover()

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    # A person's seat in a game (``edge.human``), before the API's catch-all 404.
    path("api/v1/", include("edge.urls")),
    path("api/v1/", include("api.urls")),
    path("", include("web.urls")),
]
