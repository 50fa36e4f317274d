"""The Django project: its settings, plumbing, models, services and jobs."""
